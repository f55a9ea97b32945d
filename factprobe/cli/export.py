"""``factprobe export lm-eval|lm-pub-quiz DATASET OUT``: a dataset as another tool's task."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import count, positive, relation_list
from factprobe.core.errors import UserError
from factprobe.probes.methods.flags import nonempty

EPILOG_LM_EVAL = """examples:
  factprobe export lm-eval data/datasets/sample-mc lm-eval-tasks/zp-lke --examples 50 --seed 0
  factprobe export lm-eval data/datasets/sample-mc lm-eval-tasks/hgp --method prompt \\
      --templates data/templates --template-id m1
  lm_eval --model hf --model_args pretrained=data/models/planted \\
      --include_path lm-eval-tasks/zp-lke --tasks factprobe_sample_mc_zp_lke

The questions are those of 'factprobe eval METHOD' with the same flags (--examples N --seeds S
for zp-lke; --templates, --template-id or --template-count, --fs-examples, --seed for prompt),
prompts and continuations byte for byte. See docs/exports.md.
"""

EPILOG_PUB_QUIZ = """examples:
  factprobe export lm-pub-quiz data/datasets/sample-mc bear-sample --templates data/templates

  from lm_pub_quiz import Dataset, Evaluator
  dataset = Dataset.from_path("bear-sample")
  Evaluator.from_model("gpt2", model_type="CLM").evaluate_dataset(dataset, template_index=0)

One <relation>.jsonl of test facts per relation, and metadata_relations.json with each
relation's templates and answer space (its distinct objects). See docs/exports.md.
"""


class _MethodGroup:
    """An argument group of one method's flags that remembers them: a flag given with the
    other --method is refused (one line, exit 2) from what the group holds, not a second list."""

    def __init__(self, parser: argparse.ArgumentParser, method: str, owners: dict):
        self.group = parser.add_argument_group(f"{method} (as 'factprobe eval {method}')")
        self.method, self.owners = method, owners

    def add_argument(self, *args, **kwargs):
        action = self.group.add_argument(*args, **kwargs)
        self.owners[action.dest] = self.method
        return action


def _selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DATASET", help="a built dataset folder (or hf://ORG/NAME)")
    p.add_argument("out", metavar="OUT", help="the folder to write (free, empty, or an export)")
    p.add_argument("--relations", type=relation_list,
                   help="comma-separated relations to export, or 'all' (default: all)")
    p.add_argument("--limit", type=positive, help="at most N test facts per relation")


def register(subparsers, common: argparse.ArgumentParser) -> None:
    ex = subparsers.add_parser("export", help="a dataset as an lm-evaluation-harness task or "
                               "an lm-pub-quiz (BEAR) dataset")
    sub = ex.add_subparsers(dest="tool", required=True, metavar="TOOL")

    p = sub.add_parser("lm-eval", parents=[common], epilog=EPILOG_LM_EVAL,
                       help="an lm-evaluation-harness multiple_choice task folder",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _selection(p)
    p.add_argument("--method", choices=("zp-lke", "prompt"), default="zp-lke",
                   help="whose prompts: ZP-LKE's subject-object pairs (default) or the "
                   "template baselines'")
    p.add_argument("--task", default="", help="the lm-eval task name "
                   "(default: factprobe_<dataset folder>_<method>)")
    p.add_argument("--seed", type=count, default=0,
                   help="zp-lke: the example draw (eval's --seeds S); prompt: draws the "
                   "templates and FS-LKE examples (eval's --seed)")
    owners: dict[str, str] = {}          # flag -> the method it belongs to
    z = _MethodGroup(p, "zp-lke", owners)
    z.add_argument("--examples", type=count, help="in-context examples (default 50, or the "
                   "train facts of the relation with fewest, where fewer)")
    z.add_argument("--sep", help="between a subject and its object (' ')")
    z.add_argument("--pair-sep", type=nonempty, help="between pairs (', ')")
    z.add_argument("--compat", action="store_true", default=None,
                   help="the authors' code's format (' : ' separators, random_state=10)")
    g = _MethodGroup(p, "prompt", owners)
    g.add_argument("--templates", help="YAML template folder, a templates dataset, or LPAQA "
                   ".jsonl files (default data/templates)")
    g.add_argument("--template-id", help="one template (e.g. m1)")
    g.add_argument("--template-count", type=positive,
                   help="templates drawn at random per relation (default 3)")
    g.add_argument("--fs-examples", type=count, help="FS-LKE: that many examples")
    g.add_argument("--fs-pair-sep", type=nonempty, help="between FS-LKE examples (', ')")
    p.set_defaults(run=_run_lm_eval, method_flags=owners)

    q = sub.add_parser("lm-pub-quiz", parents=[common], epilog=EPILOG_PUB_QUIZ,
                       help="an lm-pub-quiz (BEAR) dataset folder",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _selection(q)
    q.add_argument("--templates", default="data/templates",
                   help="YAML template folder, a templates dataset, or LPAQA .jsonl files")
    q.add_argument("--split", choices=("test", "all"), default="test",
                   help="the facts to export as instances: the test split (what factprobe "
                   "evaluates) or every fact")
    q.add_argument("--format", dest="fmt", choices=("jsonl", "parquet"), default="jsonl",
                   help="instance files: JSON lines (BEAR's) or Parquet (keeps number-like "
                   "labels as text)")
    q.set_defaults(run=_run_lm_pub_quiz)


def method_config(args):
    """The method's config from the flags, as 'factprobe eval' would build it (the response
    test off: lm-eval's task is the multiple choice)."""
    owners = args.method_flags
    wrong = [f for f, m in owners.items() if getattr(args, f) is not None and m != args.method]
    if wrong:
        flag = "--" + wrong[0].replace("_", "-")
        raise UserError(f"{flag} belongs to --method {owners[wrong[0]]}, not {args.method}; "
                        f"drop it or change --method")
    if args.method == "zp-lke":
        from factprobe.probes.methods.zp_lke import ZPLKEConfig
        d = ZPLKEConfig()
        return ZPLKEConfig(n_examples=(d.n_examples[0] if args.examples is None
                                       else args.examples,),
                           seeds=(args.seed,), sep_so=d.sep_so if args.sep is None else args.sep,
                           sep_pair=args.pair_sep or d.sep_pair, compat=bool(args.compat),
                           response_tokens=0)
    from factprobe.probes.methods.prompt import PromptConfig
    d = PromptConfig()
    if args.template_id and args.template_count is not None:
        raise UserError("--template-id picks one template; drop --template-count")
    return PromptConfig(templates=args.templates or d.templates,
                        template_id=args.template_id or "",
                        template_count=args.template_count or d.template_count,
                        fs_examples=args.fs_examples or 0,
                        fs_pair_sep=args.fs_pair_sep or d.fs_pair_sep, seed=args.seed,
                        response_tokens=0)


def _run_lm_eval(args) -> str:
    from factprobe.exports.lm_eval_task import LMEvalExport, export_lm_eval
    return export_lm_eval(LMEvalExport(dataset=args.dataset, out=args.out, method=args.method,
                                       method_config=method_config(args), task=args.task,
                                       relations=args.relations, limit=args.limit,
                                       sized_examples=args.method == "zp-lke"
                                       and args.examples is None))


def _run_lm_pub_quiz(args) -> str:
    from factprobe.exports.lm_pub_quiz import PubQuizExport, export_lm_pub_quiz
    return export_lm_pub_quiz(PubQuizExport(dataset=args.dataset, out=args.out,
                                            templates=args.templates, split=args.split,
                                            fmt=args.fmt,
                                            relations=args.relations, limit=args.limit))
