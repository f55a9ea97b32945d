"""``factprobe build templates | misprimes | multiprompt | fktc``: argparse in, typed configs out."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import count, fraction, positive, relation_list, seconds, temperature
from factprobe.core.errors import UserError
from factprobe.cli.common import max_answer_flag, show_progress


def _templates_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--templates", metavar="DIR",
                   help="a templates dataset (factprobe build templates); default: the "
                        "hand-written templates of --templates-dir")
    p.add_argument("--templates-dir",
                   help="folder of hand-written template files (data/templates)")


def _template_flags(args) -> tuple[str | None, str]:
    """(--templates, --templates-dir): one source of templates, not two."""
    if args.templates and args.templates_dir:
        raise UserError("give --templates DIR (a templates dataset) or --templates-dir DIR "
                        "(hand-written files), not both")
    return args.templates, args.templates_dir or "data/templates"


EPILOG_TEMPLATES = """examples:
  # hand-written templates only (offline)
  factprobe build templates --paraphrases 0 --out data/datasets/my-templates
  # 19 paraphrases of each, from OpenAI (key in OPENAI_API_KEY), for the relations of a dataset
  factprobe build templates --facts data/datasets/wd-facts --llm-model gpt-4o-2024-08-06 \\
      --llm-base-url https://api.openai.com/v1 --review-out review.csv --out templates/
  # after marking review.csv keep/drop: replays the cache, applies the review
  factprobe build templates --facts data/datasets/wd-facts --llm-model gpt-4o-2024-08-06 \\
      --review-in review.csv --out templates/
  # ask again for every answer and replace the cached ones (a bad batch of answers)
  factprobe build templates --facts data/datasets/wd-facts --llm-model gpt-4o-2024-08-06 \\
      --llm-base-url https://api.openai.com/v1 --refresh --out templates/
  # a local server (vLLM, llama.cpp, transformers serve)
  factprobe build templates --relations P36,P37 --llm-base-url http://127.0.0.1:8000/v1 \\
      --llm-model Qwen/Qwen2.5-7B-Instruct --out templates/
"""


def _add_templates(sub, common) -> None:
    p = sub.add_parser("templates", parents=[common], epilog=EPILOG_TEMPLATES,
                       help="hand-written relation templates plus filtered LLM paraphrases",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output dataset folder")
    p.add_argument("--templates-dir", default="data/templates",
                   help="folder of hand-written template files (data/templates)")
    p.add_argument("--relations", type=relation_list,
                   help="comma-separated relation ids, or 'all' (default: every template file, "
                        "or every relation of --facts)")
    p.add_argument("--facts", help="a facts dataset: take its relations (and their metadata)")
    p.add_argument("--paraphrases", type=count, default=19,
                   help="paraphrases per hand-written template (19); 0: no LLM")
    p.add_argument("--max-requests", type=positive, default=5,
                   help="asks per hand-written template before reporting a shortfall (5)")
    g = p.add_argument_group("LLM (any OpenAI-compatible chat endpoint; key in OPENAI_API_KEY)")
    g.add_argument("--llm-base-url", help="endpoint, e.g. https://api.openai.com/v1 or "
                   "http://127.0.0.1:8000/v1; without it, answers come from the cache only")
    g.add_argument("--llm-model", help="model name (part of every cache key)")
    g.add_argument("--cache-dir", default="data/llm-cache",
                   help="LLM answers, replayed by rebuilds (data/llm-cache)")
    g.add_argument("--refresh", action="store_true",
                   help="ask --llm-base-url again even where an answer is cached, and replace "
                        "the cached answers (needs --llm-base-url)")
    g.add_argument("--temperature", type=temperature, default=1.0,
                   help="sampling temperature (1.0)")
    g.add_argument("--max-tokens", type=positive, default=1024, help="answer length cap (1024)")
    g.add_argument("--seed", type=count, default=0, help="sampling seed sent with requests (0)")
    g.add_argument("--timeout", type=seconds, default=120.0,
                   help="seconds for a whole answer to arrive (120)")
    max_answer_flag(g)
    g.add_argument("--retries", type=count, default=3,
                   help="retries after a failed request, backoff 1, 2, 4 s... (3)")
    f = p.add_argument_group("filters")
    f.add_argument("--bleu", type=fraction, default=0.7,
                   help="drop a paraphrase whose sentence BLEU with a kept one is >= this (0.7)")
    f.add_argument("--min-words", type=count, default=3, help="shortest template in words (3)")
    f.add_argument("--max-words", type=positive, default=30,
                   help="longest template in words (30)")
    f.add_argument("--y-last", action="store_true",
                   help="drop templates where [Y] is not at the end (left-to-right cloze)")
    r = p.add_argument_group("review")
    r.add_argument("--review-out", metavar="CSV",
                   help="write the surviving templates for a person to mark keep/drop")
    r.add_argument("--review-in", metavar="CSV", help="apply a marked review file")
    p.set_defaults(run=_run_templates)


def _run_templates(args) -> str:
    from factprobe.builders.inputs import as_input
    from factprobe.builders.templates.filters import FilterConfig
    from factprobe.builders.templates.llm import LLMConfig
    from factprobe.builders.templates.paraphrase import (
        FACTS_INPUT,
        TemplatesConfig,
        build_templates,
        summary_message,
    )
    if args.min_words > args.max_words:
        raise UserError("--min-words is larger than --max-words")
    if args.refresh and not args.llm_base_url and args.paraphrases > 0:
        raise UserError("--refresh asks the LLM again, so it needs --llm-base-url (without it "
                        "the answers can only come from the cache)")
    llm = None
    if args.llm_model:
        llm = LLMConfig(model=args.llm_model, base_url=args.llm_base_url,
                        cache_dir=args.cache_dir, temperature=args.temperature,
                        max_tokens=args.max_tokens, seed=args.seed, timeout_s=args.timeout,
                        retries=args.retries, max_answer_mb=args.max_answer_mb,
                        refresh=args.refresh)
    cfg = TemplatesConfig(
        out=args.out, templates_dir=args.templates_dir, relations=args.relations,
        facts=as_input(args.facts, FACTS_INPUT), paraphrases=args.paraphrases, max_requests=args.max_requests, llm=llm,
        filters=FilterConfig(bleu=args.bleu, min_words=args.min_words, max_words=args.max_words,
                             y_last=args.y_last),
        review_out=args.review_out, review_in=args.review_in, progress=show_progress(args))
    out, summary = build_templates(cfg)
    return summary_message(out, summary)


EPILOG_MISPRIMES = """examples:
  factprobe build misprimes --facts data/datasets/sample-aliases --out data/datasets/sample-misprimes
  factprobe build misprimes --facts facts/ --negatives 10 --seed 1 --out misprimed/
  # negatives of the gold object's type, from the graph's instance-of facts
  factprobe build misprimes --facts facts/ --type-relation P31 --types types-facts/ --out m/
"""


def _add_misprimes(sub, common) -> None:
    p = sub.add_parser("misprimes", parents=[common], epilog=EPILOG_MISPRIMES,
                       help="add M wrong objects of the same relation to every fact",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", required=True, help="a facts dataset folder")
    p.add_argument("--out", required=True, help="output dataset folder")
    p.add_argument("--negatives", type=positive, default=5, help="negatives per fact (5)")
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--type-relation", metavar="REL",
                   help="only negatives sharing a type (objects of REL, e.g. P31) with the gold")
    p.add_argument("--types", metavar="DIR",
                   help="facts dataset holding the --type-relation facts (default: --facts)")
    p.set_defaults(run=_run_misprimes)


def _run_misprimes(args) -> str:
    from factprobe.builders.inputs import as_input, resolve_input
    from factprobe.builders.datasets.misprimes import (
        MISPRIMES_INPUT,
        TYPES_INPUT,
        MisprimeConfig,
        build_misprimes,
    )
    # --types without --type-relation is refused by the builder, before anything is opened
    types = as_input(args.types, TYPES_INPUT) if args.type_relation else args.types
    cfg = MisprimeConfig(facts=resolve_input(args.facts, MISPRIMES_INPUT), out=args.out,
                         negatives=args.negatives, seed=args.seed,
                         type_relation=args.type_relation, types=types,
                         progress=show_progress(args))
    return f"wrote {build_misprimes(cfg)}"


EPILOG_MULTIPROMPT = """examples:
  factprobe build multiprompt --facts data/datasets/sample-aliases \\
      --out data/datasets/sample-multiprompt
  factprobe build multiprompt --facts wd-aliases/ --templates wd-templates/ --materialize \\
      --out myriadlama/
"""


def _add_multiprompt(sub, common) -> None:
    p = sub.add_parser("multiprompt", parents=[common], epilog=EPILOG_MULTIPROMPT,
                       help="MyriadLAMA-style multi-prompt dataset (facts x aliases x templates)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", required=True, help="a facts dataset folder (with aliases)")
    p.add_argument("--out", required=True, help="output dataset folder")
    _templates_source(p)
    p.add_argument("--materialize", action="store_true",
                   help="also write prompts.parquet, one row per prompt")
    p.set_defaults(run=_run_multiprompt)


def _run_multiprompt(args) -> str:
    from factprobe.builders.inputs import as_input, resolve_input, templates_needs
    from factprobe.builders.datasets.multiprompt import (
        MULTIPROMPT_INPUT,
        MultipromptConfig,
        build_multiprompt,
    )
    templates, templates_dir = _template_flags(args)
    cfg = MultipromptConfig(facts=resolve_input(args.facts, MULTIPROMPT_INPUT), out=args.out,
                            templates=as_input(templates, templates_needs()),
                            templates_dir=templates_dir, materialize=args.materialize,
                            progress=show_progress(args))
    return f"wrote {build_multiprompt(cfg)}"


EPILOG_FKTC = """examples:
  factprobe build fktc --facts data/datasets/sample-aliases --out data/datasets/sample-fktc
  factprobe build fktc --facts trex-facts/ --templates trex-templates/ --out fktc/
  # ParaRel's patterns posed as statements the model completes (the paper's WP frame)
  factprobe build fktc --facts pararel-facts/ --templates pararel-templates/ --frame statement \
      --out pararel-fktc/
  # the MONITOR authors' published files (FKTC/P17-subclass.json, ...)
  factprobe build fktc --import MONITOR/FKTC --out data/datasets/fktc-authors
"""


def _add_fktc(sub, common) -> None:
    p = sub.add_parser("fktc", parents=[common], epilog=EPILOG_FKTC,
                       help="FKTC-style dataset: questions, paraphrases, interference negatives",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", help="a facts dataset folder")
    p.add_argument("--import", dest="import_dir", metavar="DIR",
                   help="read the MONITOR authors' FKTC files from DIR instead of building")
    p.add_argument("--out", required=True, help="output dataset folder")
    _templates_source(p)
    p.add_argument("--questions", type=positive, default=7,
                   help="question templates per relation, the base one included (7)")
    p.add_argument("--negatives", type=positive, default=5, help="negatives per fact (5)")
    p.add_argument("--bleu", type=fraction, default=0.7,
                   help="keep a paraphrased question only if its BLEU with each kept one is "
                        "below this (0.7)")
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--frame", choices=("question", "statement"), default="question",
                   help="the prompt frames: question templates (MONITOR's QA frame, default) or "
                        "statements whose [Y] is last, cut before [Y] for the model to complete "
                        "(its WP frame: ParaRel's and LAMA's patterns)")
    p.set_defaults(run=_run_fktc)


def _run_fktc(args) -> str:
    if args.import_dir:
        if args.facts:
            raise UserError("give --facts (to build) or --import DIR (to read the authors' "
                            "files), not both")
        if args.templates or args.templates_dir:
            raise UserError("--templates and --templates-dir are for building from --facts; "
                            "--import DIR reads the questions from the authors' files")
        if args.frame != "question":
            raise UserError("--frame statement is for building from --facts; the authors' "
                            "files hold questions")
        from factprobe.builders.datasets.fktc_import import FktcImportConfig, import_fktc
        return f"wrote {import_fktc(FktcImportConfig(path=args.import_dir, out=args.out))}"
    if not args.facts:
        raise UserError("factprobe build fktc needs --facts DIR (or --import DIR)")
    from factprobe.builders.inputs import as_input, resolve_input, templates_needs
    from factprobe.builders.datasets.fktc import FKTC_INPUT, FktcConfig, build_fktc
    templates, templates_dir = _template_flags(args)
    cfg = FktcConfig(facts=resolve_input(args.facts, FKTC_INPUT), out=args.out,
                     templates=as_input(templates, templates_needs()),
                     templates_dir=templates_dir, questions=args.questions,
                     negatives=args.negatives, seed=args.seed, bleu=args.bleu,
                     progress=show_progress(args), frame=args.frame)
    return f"wrote {build_fktc(cfg)}"


def add_commands(sub, common) -> None:
    _add_templates(sub, common)
    _add_misprimes(sub, common)
    _add_multiprompt(sub, common)
    _add_fktc(sub, common)
