"""``factprobe eval METHOD``."""
from __future__ import annotations

import argparse

from builders.core.argtypes import count, positive, relation_list
from builders.core.errors import UserError

EPILOG_EVAL = """examples:
  factprobe eval zp-lke --dataset data/datasets/sample-mc --model data/models/planted \\
      --out data/results/sample-mc/zp-lke/planted
  factprobe eval zp-lke --dataset data/datasets/trex-mc --model meta-llama/Llama-2-7b-hf \\
      --out results/ --seeds 0,1,2,3,4 --dtype bfloat16
  factprobe eval zp-lke --dataset data/datasets/sample-mc --model gpt2 --out r/ --dry-run
"""


def _counts(value: str) -> tuple[int, ...]:
    """A comma-separated list of distinct whole numbers >= 0 (``--seeds``, ``--examples``).

    >>> _counts("0, 1,2")
    (0, 1, 2)
    >>> _counts("1,1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '1,1' lists 1 twice
    """
    items = tuple(count(v.strip()) for v in value.split(",") if v.strip())
    if not items:
        raise argparse.ArgumentTypeError("empty: give comma-separated whole numbers, e.g. 0,1,2")
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{value!r} lists {twice[0]} twice")
    return items


def _device(value: str) -> str:
    from probes.backends.loading import DEVICE
    if not DEVICE.match(value):
        raise argparse.ArgumentTypeError(f"{value!r}: use auto, cpu, cuda, cuda:N or mps")
    return value


def _nonempty(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("empty")
    return value


def _contexts(value: str) -> tuple[str, ...]:
    """BELIEF-ICL context kinds: zero, X-random, X-relation, X-template."""
    from probes.methods.belief_icl import parse_context
    items = tuple(c.strip() for c in value.split(",") if c.strip())
    if not items:
        raise argparse.ArgumentTypeError("empty: e.g. zero,4-template")
    for c in items:
        try:
            parse_context(c)
        except UserError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if items.count(c) > 1:
            raise argparse.ArgumentTypeError(f"{value!r} lists {c} twice")
    return items


def _backend_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", required=True, type=_nonempty,
                   help="Hub model name or local folder")
    g.add_argument("--revision", help="Hub revision (branch, tag or commit)")
    g.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    g.add_argument("--device", default="auto", type=_device,
                   help="auto, cpu, cuda, cuda:N or mps")
    g.add_argument("--batch-size", type=positive, default=32,
                   help="rows per forward pass (halved automatically on out-of-memory)")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="run code shipped with the model (off unless asked)")
    g.add_argument("--add-bos", action="store_true", help="prepend the BOS token to prompts")
    g.add_argument("--no-prefix-cache", action="store_true",
                   help="compute every sequence in full (slower; for checking)")


def _eval_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="dataset folder")
    p.add_argument("--out", required=True, help="run folder to write")
    p.add_argument("--relations", type=relation_list,
                   help="comma-separated relations to evaluate, or 'all' (default: all)")
    p.add_argument("--limit", type=positive, help="at most N test facts per relation")
    p.add_argument("--dry-run", action="store_true",
                   help="print the first prompts and the request count; load no model")
    p.add_argument("--too-long", choices=("error", "skip", "truncate"), default="error",
                   help="prompts longer than the model's context: stop with an error, skip and "
                        "count them, or drop leading in-context examples until they fit")
    _backend_flags(p)


def _add_zp_lke(sub, common) -> None:
    p = sub.add_parser("zp-lke", parents=[common], help="zero-prompt many-shot (ZP-LKE)",
                       epilog=EPILOG_EVAL, formatter_class=argparse.RawDescriptionHelpFormatter)
    _eval_flags(p)
    g = p.add_argument_group("ZP-LKE")
    g.add_argument("--examples", type=_counts, default=(50,),
                   help="in-context examples per relation; a list sweeps n (e.g. 1,5,10,50)")
    g.add_argument("--seeds", type=_counts, default=(0,),
                   help="example draws to average over (the paper: 0,1,2,3,4)")
    g.add_argument("--sep", default=" ", help="between a subject and its object (' ')")
    g.add_argument("--pair-sep", default=", ", type=_nonempty, help="between pairs (', ')")
    g.add_argument("--compat", action="store_true",
                   help="the authors' code: ' : ' separators, random_state=10, ties vs gold")
    g.add_argument("--response-tokens", type=count, default=10,
                   help="greedy tokens for the response test (0: off)")
    g.add_argument("--corrupt", choices=("unknown", "incorrect"),
                   help="replace examples by made-up subjects or wrong objects")
    g.add_argument("--corrupt-count", type=count, default=0,
                   help="how many examples --corrupt replaces (at most the fewest --examples)")
    g.add_argument("--corrupt-layout", choices=("spread", "block"), default="spread")
    g.add_argument("--positions", type=count, default=0,
                   help="also score every object in one sequence of N pairs (the paper: 200)")
    p.set_defaults(run=_run_zp_lke)


def _backend_config(args):
    from pathlib import Path

    from probes.backends import BackendConfig
    if args.revision is not None:
        if not args.revision.strip():
            raise UserError("--revision is empty: give a branch, tag or commit, or drop it")
        if Path(args.model).is_dir():
            raise UserError(f"--revision {args.revision}: {args.model} is a local folder, "
                            f"which has no revisions; drop --revision (it is for Hub models)")
    return BackendConfig(model=args.model, revision=args.revision, dtype=args.dtype,
                         device=args.device, batch_size=args.batch_size,
                         trust_remote_code=args.trust_remote_code, add_bos=args.add_bos,
                         prefix_cache=not args.no_prefix_cache)


def run_method(method_name: str, args, method_cfg) -> str:
    from evaluators.methods import METHODS, load_tables
    from probes.engine.runner import EvalConfig, dataset_info, run_eval, select_facts
    from probes.planting.plant import load_planted
    method = METHODS[method_name]
    backend_cfg = _backend_config(args)
    from builders.core.inputs import open_input
    folder = open_input(args.dataset)  # a folder, a Hub-layout folder, or hf://org/name@rev
    tables = load_tables(folder, method.tables, method_name)
    tables["facts"] = select_facts(tables["facts"], args.relations, args.limit)
    cfg = EvalConfig(method=method_name, dataset=str(folder), out=args.out,
                     relations=args.relations, limit=args.limit, dry_run=args.dry_run,
                     progress=not args.quiet, too_long=args.too_long)
    plan = method.plan(tables, method_cfg)
    planted = load_planted(args.model)
    out = run_eval(cfg, backend_cfg, plan, method_cfg, dataset_info(folder),
                   masked=method.masked,
                   metrics_fn=lambda outputs: method.metrics(outputs, planted, method_cfg))
    return f"wrote {out}" if out else ""


def _run_zp_lke(args) -> str:
    from probes.methods.zp_lke import ZPLKEConfig
    if args.corrupt and args.corrupt_count <= 0:
        raise UserError("--corrupt needs --corrupt-count N (how many examples to replace)")
    if args.corrupt_count and not args.corrupt:
        raise UserError("--corrupt-count needs --corrupt unknown or --corrupt incorrect")
    if args.corrupt_count > min(args.examples):
        raise UserError(f"--corrupt-count {args.corrupt_count} is more than the smallest "
                        f"--examples ({min(args.examples)}): a prompt cannot have more "
                        f"examples replaced than it shows")
    cfg = ZPLKEConfig(n_examples=args.examples, seeds=args.seeds, sep_so=args.sep,
                      sep_pair=args.pair_sep, compat=args.compat,
                      response_tokens=args.response_tokens, corrupt=args.corrupt or "",
                      corrupt_count=args.corrupt_count, corrupt_layout=args.corrupt_layout,
                      positions=args.positions)
    return run_method("zp-lke", args, cfg)


def _method_parser(sub, common, name: str, help_: str, examples: str):
    p = sub.add_parser(name, parents=[common], help=help_,
                       epilog="examples:\n" + examples,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _eval_flags(p)
    return p


def _add_prompt(sub, common) -> None:
    p = _method_parser(sub, common, "prompt", "HGP / MMP template baselines and FS-LKE", """\
  factprobe eval prompt --dataset data/datasets/sample-mc --model data/models/planted \\
      --out data/results/sample-mc/prompt/planted
  factprobe eval prompt --dataset mc/ --model gpt2 --templates lpaqa/ --out r/   # mined (MMP)
  factprobe eval prompt --dataset mc/ --model gpt2 --fs-examples 50 --out r/     # FS-LKE
""")
    g = p.add_argument_group("prompt")
    g.add_argument("--templates", default="data/templates",
                   help="YAML template folder, a templates dataset, or LPAQA .jsonl files")
    g.add_argument("--template-id", default="", help="template to use (e.g. m2); default: the "
                   "first statement of each relation with [Y] last")
    g.add_argument("--fs-examples", type=count, default=0,
                   help="FS-LKE: that many examples joined by the template")
    g.add_argument("--seed", type=count, default=0)
    g.add_argument("--response-tokens", type=count, default=10,
                   help="greedy tokens for the response test (0: off)")
    p.set_defaults(run=_run_prompt)


def _run_prompt(args) -> str:
    from probes.methods.prompt import PromptConfig
    cfg = PromptConfig(templates=args.templates, template_id=args.template_id,
                       fs_examples=args.fs_examples, seed=args.seed,
                       response_tokens=args.response_tokens)
    return run_method("prompt", args, cfg)


def _add_belief(sub, common) -> None:
    p = _method_parser(sub, common, "belief", "BELIEF on a masked LM (multi-prompt dataset)", """\
  factprobe eval belief --dataset data/datasets/sample-multiprompt \\
      --model data/models/planted-mlm --out data/results/sample-multiprompt/belief/planted-mlm
  factprobe eval belief --dataset multiprompt/ --model bert-base-cased --out r/
""")
    g = p.add_argument_group("BELIEF")
    g.add_argument("--top-k", type=positive, default=10,
                   help="tokens kept at each mask (at most the vocabulary)")
    g.add_argument("--max-names", type=positive, help="subject names per pair (label first)")
    p.set_defaults(run=_run_belief)


def _run_belief(args) -> str:
    from probes.methods.belief import BeliefConfig
    return run_method("belief", args, BeliefConfig(top_k=args.top_k, max_names=args.max_names))


def _add_belief_icl(sub, common) -> None:
    p = _method_parser(sub, common, "belief-icl", "BELIEF-ICL on a decoder LM", """\
  factprobe eval belief-icl --dataset data/datasets/sample-multiprompt \\
      --model data/models/planted --out r/ --contexts zero,4-random,4-relation,4-template
  factprobe eval belief-icl --dataset multiprompt/ --model meta-llama/Meta-Llama-3-8B \\
      --style qa --samples 100 --sample-prompts 10000 --out r/
""")
    g = p.add_argument_group("BELIEF-ICL")
    g.add_argument("--contexts", type=_contexts, default=("4-template",),
                   help="comma-separated: zero, X-random, X-relation, X-template")
    g.add_argument("--style", choices=("mask", "qa"), default="mask")
    g.add_argument("--samples", type=count, default=100,
                   help="samples per prompt for confidence (0: none)")
    g.add_argument("--sample-prompts", type=count, default=10_000,
                   help="prompts (a seeded subset) that get samples")
    g.add_argument("--max-new-tokens", type=positive, default=10)
    g.add_argument("--max-names", type=positive, help="subject names per pair (label first)")
    g.add_argument("--seed", type=count, default=0)
    p.set_defaults(run=_run_belief_icl)


def _run_belief_icl(args) -> str:
    from probes.methods.belief_icl import BeliefICLConfig
    cfg = BeliefICLConfig(contexts=args.contexts, style=args.style, samples=args.samples,
                          sample_prompts=args.sample_prompts,
                          max_new_tokens=args.max_new_tokens, max_names=args.max_names,
                          seed=args.seed)
    return run_method("belief-icl", args, cfg)


def _add_monitor(sub, common) -> None:
    p = _method_parser(sub, common, "monitor", "MONITOR on FKTC-style prompts", """\
  factprobe eval monitor --dataset data/datasets/sample-fktc --model data/models/planted \\
      --out data/results/sample-fktc/monitor/planted
  factprobe eval monitor --dataset fktc/ --model bigscience/bloomz-560m --compat --out r/
""")
    g = p.add_argument_group("MONITOR")
    g.add_argument("--compat", action="store_true",
                   help="free-running foreign anchors, as the authors' code")
    g.add_argument("--max-new-tokens", type=positive, default=10)
    g.add_argument("--no-frames", action="store_true",
                   help="skip greedy answers under every prompt (frame accuracies)")
    p.set_defaults(run=_run_monitor)


def _run_monitor(args) -> str:
    from probes.methods.monitor import MonitorConfig
    return run_method("monitor", args, MonitorConfig(compat=args.compat,
                                                     max_new_tokens=args.max_new_tokens,
                                                     frames=not args.no_frames))


def register(subparsers, common) -> None:
    ev = subparsers.add_parser("eval", help="probe a model with one of the methods")
    sub = ev.add_subparsers(dest="method", required=True, metavar="METHOD")
    _add_zp_lke(sub, common)
    _add_prompt(sub, common)
    _add_belief(sub, common)
    _add_belief_icl(sub, common)
    _add_monitor(sub, common)
