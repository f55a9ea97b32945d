"""``factprobe plant``: train a small reference model with known knowledge."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import count, fraction, positive, positive_float

EPILOG_PLANT = """examples:
  factprobe plant --dataset data/datasets/sample-mc --out data/models/planted
  factprobe plant --dataset mc/ --out model/ --max-epochs 100 --layers 6 --width 256
  factprobe plant --dataset mc/ --out model/ --hold-out-formats list,templates
"""


def register(subparsers, common) -> None:
    from factprobe.probes.planting.curriculum import FORMATS, MENTION_MODES
    from factprobe.probes.planting.config import PlantConfig
    d = PlantConfig("", "")
    p = subparsers.add_parser("plant", parents=[common],
                              help="train a small reference model with known knowledge",
                              epilog=EPILOG_PLANT,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="dataset folder (facts with splits)")
    p.add_argument("--out", required=True, help="model folder to write")
    p.add_argument("--seed", type=count, default=d.seed, help=f"default {d.seed}")
    p.add_argument("--epochs", type=positive, default=None,
                   help="train exactly this many epochs (default: until the planted facts "
                        "are learned, see --target-accuracy)")
    p.add_argument("--max-epochs", type=positive, default=None,
                   help="cap of the stopping rule (default 60, or 40 with --masked); a run "
                        "that reaches it unlearned says so and records converged: false")
    p.add_argument("--target-accuracy", type=fraction, default=d.target_accuracy,
                   help=f"stop once this share of sampled planted facts is answered, "
                        f"teacher-forced, in the taught frames (default {d.target_accuracy})")
    p.add_argument("--hold-out-formats", default=d.hold_out_formats,
                   help="comma list of frames never taught, to probe generalisation: "
                        + ", ".join(FORMATS) + " (default: none)")
    p.add_argument("--mentions", choices=tuple(MENTION_MODES), default=d.mentions,
                   help="how a held-out subject is taught: 'swap' (default) in its own "
                        "relation's frames before another held-out fact's gold; 'relation' "
                        "there before a made-up object, its gold after a made-up decoy "
                        "subject; 'other' as 'relation', in a relation no probe asks "
                        "(docs/planting.md)")
    p.add_argument("--partial-share", type=float, default=round(d.partial_share, 4),
                   help="share of planted test facts taught MONITOR's base question only, "
                        "never after a misleading prefix (default 1/3; 0: none)")
    for flag, attr in (("--layers", "layers"), ("--width", "width"), ("--heads", "heads"),
                       ("--list-size", "list_size"), ("--check-facts", "check_facts"),
                       ("--warmup-steps", "warmup_steps"), ("--micro-batches", "micro_batches")):
        p.add_argument(flag, dest=attr, type=positive, default=getattr(d, attr),
                       help=f"default {getattr(d, attr)}")
    p.add_argument("--lists-per-relation", type=count, default=d.lists_per_relation,
                   help=f"default {d.lists_per_relation} (0: no ZP-LKE lists)")
    p.add_argument("--block", type=positive, default=None,
                   help="tokens per training sequence (default: 256, halved down to 64 while "
                        "an epoch of the graph's text fills fewer than 4 steps)")
    p.add_argument("--vocab-size", type=positive, default=None,
                   help="the tokenizer's vocabulary (default 6000, or 2000 with --masked)")
    p.add_argument("--batch-size", type=positive, default=None,
                   help="blocks per step (default 4), or with --masked 16-statement groups "
                        "per step (default: 8, halved down to 1 while an epoch fills fewer "
                        "than 16 steps)")
    p.add_argument("--lr", type=positive_float, default=None,
                   help="peak learning rate (default 0.005, or 0.002 with --masked)")
    p.add_argument("--weight-decay", type=float, default=None,
                   help="AdamW weight decay (default 0.1, or 0.01 with --masked)")
    p.add_argument("--decay-share", type=float, default=None,
                   help="decay the learning rate linearly over this last share of the epoch "
                        "cap, down to 5%% (default 0.4, or 0 with --masked: constant after "
                        "the warm-up)")
    p.add_argument("--schedule-epochs", type=positive, default=None,
                   help="epochs the rate schedule spans, whatever --max-epochs is: the decay "
                        "is its last --decay-share, then the rate stays at 5%% (default 60, "
                        "the default cap); a higher --max-epochs extends the same run")
    p.add_argument("--templates", default=d.templates,
                   help="statement and question templates to teach the facts in; '' for "
                        "simple label forms ('The <relation> of X is Y.')")
    p.add_argument("--masked", action="store_true",
                   help="train a masked LM (for BELIEF) instead of a causal one")
    from factprobe.cli.threads import add_threads_flag
    from factprobe.cli.threads import PLANT_HELP
    add_threads_flag(p, "planted.json", PLANT_HELP)
    from factprobe.cli.threads import add_kernels_flag
    add_kernels_flag(p, "planted.json")
    p.set_defaults(run=_run_plant)


def _run_plant(args) -> str:
    from dataclasses import replace

    from factprobe.probes.planting.plant import PlantConfig, plant
    from factprobe.cli.threads import apply_threads
    fields = PlantConfig.__dataclass_fields__
    cfg = PlantConfig(**{k: getattr(args, k) for k in fields
                         if k not in ("progress", "threads", "kernels") and hasattr(args, k)},
                      progress=not args.quiet)
    # Torch itself runs on one thread: a second one splits its sums otherwise and plants other
    # bits. The cores are used through the micro-batches instead, one Python thread each
    # (causal.Gradients), which changes no bit: so their count may follow the machine's load.
    # By default (or 'auto') the count follows the load, epoch by epoch (causal.run_epochs).
    apply_threads(1)
    fixed = args.threads not in (None, "auto")
    cfg = replace(cfg, threads=min(args.threads, cfg.micro_batches) if fixed else None)
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
