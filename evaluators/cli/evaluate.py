"""``factprobe eval METHOD`` and ``factprobe plant``."""
from __future__ import annotations

import argparse

from builders.core.argtypes import count, positive, positive_float, relation_list
from builders.core.errors import UserError
from probes.methods.flags import nonempty


def _device(value: str) -> str:
    from probes.backends.loading import DEVICE
    if not DEVICE.match(value):
        raise argparse.ArgumentTypeError(f"{value!r}: use auto, cpu, cuda, cuda:N or mps")
    return value


def _backend_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", required=True, type=nonempty,
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
    from dataclasses import replace

    from evaluators.methods import METHODS, load_tables
    from probes.backends import KINDS
    from probes.engine.runner import EvalConfig, dataset_info, run_eval, select_facts
    from probes.planting.plant import load_planted
    method = METHODS[method_name]
    backend_cfg = replace(_backend_config(args), kind=method.probe.backend)
    from builders.publish.hub import open_dataset
    folder = open_dataset(args.dataset)  # a folder, a Hub-layout folder, or hf://org/name@rev
    tables = load_tables(folder, method.probe.tables, method_name)
    tables["facts"] = select_facts(tables["facts"], args.relations, args.limit)
    cfg = EvalConfig(method=method_name, dataset=str(folder), out=args.out,
                     relations=args.relations, limit=args.limit, dry_run=args.dry_run,
                     progress=not args.quiet, too_long=args.too_long)
    plan = method.probe.plan(tables, method_cfg)
    planted = load_planted(args.model)
    out = run_eval(cfg, backend_cfg, plan, method_cfg, dataset_info(folder), kinds=KINDS,
                   metrics_fn=lambda outputs: method.metrics.compute(outputs, planted,
                                                                     method_cfg))
    return f"wrote {out}" if out else ""


def _add_method(sub, common, method) -> None:
    """``factprobe eval NAME``: the shared dataset and model flags, then the method's own."""
    probe = method.probe
    p = sub.add_parser(probe.name, parents=[common], help=probe.summary,
                       epilog="examples:\n" + probe.examples,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _eval_flags(p)
    probe.add_flags(p)
    p.set_defaults(run=lambda args: run_method(probe.name, args, probe.from_args(args)))


EPILOG_PLANT = """examples:
  factprobe plant --dataset data/datasets/sample-mc --out data/models/planted
  factprobe plant --dataset mc/ --out model/ --epochs 40 --layers 6 --width 256
"""


def _add_plant(subparsers, common) -> None:
    from probes.planting.plant import PlantConfig
    d = PlantConfig("", "")
    p = subparsers.add_parser("plant", parents=[common],
                              help="train a small reference model with known knowledge",
                              epilog=EPILOG_PLANT,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="dataset folder (facts with splits)")
    p.add_argument("--out", required=True, help="model folder to write")
    p.add_argument("--seed", type=count, default=d.seed, help=f"default {d.seed}")
    p.add_argument("--epochs", type=positive, default=None,
                   help="default 60, or 15 with --masked")
    for flag, attr in (("--layers", "layers"), ("--width", "width"), ("--heads", "heads"),
                       ("--vocab-size", "vocab_size"), ("--batch-size", "batch_size"),
                       ("--block", "block"), ("--list-size", "list_size")):
        p.add_argument(flag, dest=attr, type=positive, default=getattr(d, attr),
                       help=f"default {getattr(d, attr)}")
    p.add_argument("--lists-per-relation", type=count, default=d.lists_per_relation,
                   help=f"default {d.lists_per_relation} (0: no ZP-LKE lists)")
    p.add_argument("--lr", type=positive_float, default=d.lr, help=f"default {d.lr}")
    p.add_argument("--templates", default=d.templates,
                   help="statement and question templates to teach the facts in; '' for "
                        "simple label forms ('The <relation> of X is Y.')")
    p.add_argument("--masked", action="store_true",
                   help="train a masked LM (for BELIEF) instead of a causal one")
    p.set_defaults(run=_run_plant)


def _run_plant(args) -> str:
    from probes.planting.plant import PlantConfig, plant
    fields = PlantConfig.__dataclass_fields__
    cfg = PlantConfig(**{k: getattr(args, k) for k in fields
                         if k not in ("progress",) and hasattr(args, k)},
                      progress=not args.quiet)
    if args.quiet:
        _silence_libraries()
    return f"wrote {plant(cfg)}"


def _silence_libraries() -> None:
    """--quiet: transformers' own bars ("Writing model shards") and warnings, too."""
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    from huggingface_hub.utils import disable_progress_bars
    disable_progress_bars()


def register(subparsers, common) -> None:
    ev = subparsers.add_parser("eval", help="probe a model with one of the methods")
    sub = ev.add_subparsers(dest="method", required=True, metavar="METHOD")
    from evaluators.methods import METHODS
    for method in METHODS.values():
        _add_method(sub, common, method)
    _add_plant(subparsers, common)
