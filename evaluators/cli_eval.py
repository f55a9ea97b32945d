"""``factprobe eval METHOD`` and ``factprobe plant``."""
from __future__ import annotations

import argparse

from builders.errors import UserError

EPILOG_EVAL = """examples:
  factprobe eval zp-lke --dataset data/datasets/sample-mc --model data/models/planted \\
      --out data/results/sample-mc/zp-lke/planted
  factprobe eval zp-lke --dataset data/datasets/trex-mc --model meta-llama/Llama-2-7b-hf \\
      --out results/ --seeds 0,1,2,3,4 --dtype bfloat16
  factprobe eval zp-lke --dataset data/datasets/sample-mc --model gpt2 --out r/ --dry-run
"""


def _ints(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of "
                                         f"integers") from None


def _backend_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", required=True, help="Hub model name or local folder")
    g.add_argument("--revision", help="Hub revision (branch, tag or commit)")
    g.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 ...")
    g.add_argument("--batch-size", type=int, default=32,
                   help="rows per forward pass (halved automatically on out-of-memory)")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="run code shipped with the model (off unless asked)")
    g.add_argument("--add-bos", action="store_true", help="prepend the BOS token to prompts")
    g.add_argument("--no-prefix-cache", action="store_true",
                   help="compute every sequence in full (slower; for checking)")


def _eval_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="dataset folder")
    p.add_argument("--out", required=True, help="run folder to write")
    p.add_argument("--relations", help="comma-separated relations to evaluate (default: all)")
    p.add_argument("--limit", type=int, help="at most N test facts per relation")
    p.add_argument("--dry-run", action="store_true",
                   help="print the first prompts and the request count; load no model")
    _backend_flags(p)


def _add_zp_lke(sub, common) -> None:
    p = sub.add_parser("zp-lke", parents=[common], help="zero-prompt many-shot (ZP-LKE)",
                       epilog=EPILOG_EVAL, formatter_class=argparse.RawDescriptionHelpFormatter)
    _eval_flags(p)
    g = p.add_argument_group("ZP-LKE")
    g.add_argument("--examples", type=_ints, default=(50,),
                   help="in-context examples per relation; a list sweeps n (e.g. 1,5,10,50)")
    g.add_argument("--seeds", type=_ints, default=(0,),
                   help="example draws to average over (the paper: 0,1,2,3,4)")
    g.add_argument("--sep", default=" ", help="between a subject and its object (' ')")
    g.add_argument("--pair-sep", default=", ", help="between pairs (', ')")
    g.add_argument("--compat", action="store_true",
                   help="the authors' code: ' : ' separators, random_state=10, ties vs gold")
    g.add_argument("--response-tokens", type=int, default=10,
                   help="greedy tokens for the response test (0: off)")
    g.add_argument("--corrupt", choices=("unknown", "incorrect"),
                   help="replace examples by made-up subjects or wrong objects")
    g.add_argument("--corrupt-count", type=int, default=0)
    g.add_argument("--corrupt-layout", choices=("spread", "block"), default="spread")
    g.add_argument("--positions", type=int, default=0,
                   help="also score every object in one sequence of N pairs (the paper: 200)")
    p.set_defaults(run=_run_zp_lke)


def _backend_config(args):
    from probes.backends import BackendConfig
    return BackendConfig(model=args.model, revision=args.revision, dtype=args.dtype,
                         device=args.device, batch_size=max(1, args.batch_size),
                         trust_remote_code=args.trust_remote_code, add_bos=args.add_bos,
                         prefix_cache=not args.no_prefix_cache)


def _relations(args) -> tuple[str, ...] | None:
    if not args.relations:
        return None
    return tuple(r.strip() for r in args.relations.split(",") if r.strip())


def run_method(method_name: str, args, method_cfg) -> str:
    from probes.plant import load_planted

    from .methods import METHODS, load_tables
    from .runner import EvalConfig, dataset_info, run_eval, select_facts
    method = METHODS[method_name]
    from builders.hub import open_dataset
    folder = open_dataset(args.dataset)  # a folder, a Hub-layout folder, or hf://org/name@rev
    tables = load_tables(folder, method.tables, method_name)
    tables["facts"] = select_facts(tables["facts"], _relations(args), args.limit)
    cfg = EvalConfig(method=method_name, dataset=str(folder), out=args.out,
                     relations=_relations(args), limit=args.limit, dry_run=args.dry_run,
                     progress=not args.quiet)
    plan = method.plan(tables, method_cfg)
    planted = load_planted(args.model)
    out = run_eval(cfg, _backend_config(args), plan, method_cfg, dataset_info(folder),
                   masked=method.masked,
                   metrics_fn=lambda outputs: method.metrics(outputs, planted, method_cfg))
    return f"wrote {out}" if out else ""


def _run_zp_lke(args) -> str:
    from probes.zp_lke import ZPLKEConfig
    if args.corrupt and args.corrupt_count <= 0:
        raise UserError("--corrupt needs --corrupt-count N (how many examples to replace)")
    cfg = ZPLKEConfig(n_examples=args.examples, seeds=args.seeds, sep_so=args.sep,
                      sep_pair=args.pair_sep, compat=args.compat,
                      response_tokens=max(0, args.response_tokens), corrupt=args.corrupt or "",
                      corrupt_count=args.corrupt_count, corrupt_layout=args.corrupt_layout,
                      positions=max(0, args.positions))
    return run_method("zp-lke", args, cfg)


EPILOG_PLANT = """examples:
  factprobe plant --dataset data/datasets/sample-mc --out data/models/planted
  factprobe plant --dataset mc/ --out model/ --epochs 40 --layers 6 --width 256
"""


def _add_plant(subparsers, common) -> None:
    from probes.plant import PlantConfig
    d = PlantConfig("", "")
    p = subparsers.add_parser("plant", parents=[common],
                              help="train a small reference model with known knowledge",
                              epilog=EPILOG_PLANT,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="dataset folder (facts with splits)")
    p.add_argument("--out", required=True, help="model folder to write")
    for flag, attr in (("--seed", "seed"), ("--epochs", "epochs"), ("--layers", "layers"),
                       ("--width", "width"), ("--heads", "heads"), ("--vocab-size", "vocab_size"),
                       ("--batch-size", "batch_size"), ("--block", "block"),
                       ("--lists-per-relation", "lists_per_relation"),
                       ("--list-size", "list_size")):
        p.add_argument(flag, dest=attr, type=int, default=getattr(d, attr),
                       help=f"default {getattr(d, attr)}")
    p.add_argument("--lr", type=float, default=d.lr, help=f"default {d.lr}")
    p.set_defaults(run=_run_plant)


def _run_plant(args) -> str:
    from probes.plant import PlantConfig, plant
    fields = PlantConfig.__dataclass_fields__
    cfg = PlantConfig(**{k: getattr(args, k) for k in fields
                         if k not in ("progress",) and hasattr(args, k)},
                      progress=not args.quiet)
    return f"wrote {plant(cfg)}"


def register(subparsers, common) -> None:
    ev = subparsers.add_parser("eval", help="probe a model with one of the methods")
    sub = ev.add_subparsers(dest="method", required=True, metavar="METHOD")
    _add_zp_lke(sub, common)
    _add_plant(subparsers, common)
