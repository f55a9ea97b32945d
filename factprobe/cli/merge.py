"""``factprobe merge SHARD... --out RUN``: the shards of ``factprobe eval --shard I/N`` made
into the run one process would have written (:mod:`factprobe.probes.engine.shards`)."""
from __future__ import annotations

from pathlib import Path


def run_merge(args) -> str:
    from factprobe.evaluators.methods import method
    from factprobe.probes.engine.runner import final_table, write_run
    from factprobe.probes.engine.shards import merge_shards
    from factprobe.probes.planting.plant import load_planted
    outputs, prompts, run, integer = merge_shards([Path(s) for s in args.shards])
    out = Path(args.out)
    run["eval"] = run["eval"] | {"out": args.out}          # --out as given, as eval records it
    spec = method(run["method"], f"{args.shards[0]}/run.json")
    model = (run.get("backend") or {}).get("model") or ""
    planted = load_planted(model) if model and Path(model).is_dir() else None
    # the rows as outputs.parquet will hold them, and the method's config as run.json holds
    # it: what `factprobe eval` and `factprobe report` compute from
    outputs = final_table(outputs, integer).to_pandas()
    metrics = spec.metrics.checked_compute(outputs, planted, run["method_config"])
    write_run(out, outputs, prompts, run, metrics, integer)
    return f"wrote {out} from {len(args.shards)} shard(s)"


def register(subparsers, common) -> None:
    p = subparsers.add_parser("merge", parents=[common],
                              help="combine the shards of 'factprobe eval --shard I/N'")
    p.add_argument("shards", nargs="+", help="the shard folders (all N of one command)")
    p.add_argument("--out", required=True, help="run folder to write")
    p.set_defaults(run=run_merge)
