"""``factprobe eval --shard I/N`` and ``factprobe merge``: a run cut across processes that do
not talk to each other (a Slurm array, ``accelerate launch``), put back together.

Every shard plans the whole run and cuts it as the Ray executor does
(:mod:`factprobe.probes.engine.partition`: prefix groups, balanced by tokens, a pure function of the
plan), then computes its own partitions only. A shard folder is a run folder (run.json marks
it) holding ``chunks/``: the very checkpoint files of its chunks, named by stage and chunk
index, and the prompts it asked. ``merge`` reads the chunks back in the single process's
order, so the merged outputs.parquet has the bytes a single process writes. A stage built from
earlier outputs (MONITOR's ``object`` and ``foreign``) is built by each shard from its own
rows; its chunks are cut per shard, so those rows agree with a single process within float
noise (batch make-up), not to the byte.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder, stamp
from factprobe.core.tables import dumps_json, write_parquet
from factprobe.probes.engine.checkpoints import META_KEY, ChunkStats

CHUNKS = "chunks"


# The integer meta columns of shards written before plans declared theirs (Plan.integer_columns):
# what every shipped method's plan declares now.
LEGACY_INTEGER_COLUMNS = ("seed", "n_examples", "corrupted", "position", "index", "negative",
                          "n_paraphrases", "n_negatives")

def fingerprint(run: dict) -> str:
    """What must be equal for shards to be parts of one run: the command (method, its
    settings, the dataset's facts, the eval flags) and the model's identity."""
    same = {"method": run["method"], "method_config": run["method_config"],
            "dataset": run["dataset"].get("facts_sha256"),
            "eval": {k: v for k, v in run["eval"].items() if k not in ("out", "progress", "dataset")},
            "model": run["model"].get("identity"),
            "plan": {k: v for k, v in run["plan"].items() if k != "too_long"}}
    return hashlib.sha256(dumps_json(same).encode()).hexdigest()[:16]


def write_shard(out: Path, run: dict, prompts: dict, record: dict, partial: Path,
                shard: tuple[int, int], integer_columns: tuple[str, ...] = ()) -> Path:
    """Write shard ``shard`` (I, N) of a run: its chunk files (from the checkpoint folder
    ``partial``), its prompts and run.json (whose shard block keeps the plan's integer
    columns for the merge, which has no plan)."""
    index, count = shard
    stages = [{"key": k, **v} for k, v in record.items()]
    with atomic_folder(out, "run") as tmp:
        (tmp / CHUNKS).mkdir()
        for stage in stages:
            for name in stage["chunks"]:
                shutil.copyfile(partial / name, tmp / CHUNKS / name)
        keys = sorted(prompts)
        write_parquet(pa.table({"prompt_id": keys, "text": [prompts[k] for k in keys]}),
                      tmp / "prompts.parquet")
        meta = run | {"shard": {"index": index, "count": count, "fingerprint": fingerprint(run),
                                "stages": stages, "integer_columns": list(integer_columns)}}
        (tmp / "run.json").write_text(dumps_json(stamp(meta, tmp, "run")), encoding="utf-8")
    return out


def _read_shard(folder: Path) -> dict:
    try:
        run = jsonsafe.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{folder}: no readable run.json ({exc}); give the folders that "
                        f"'factprobe eval ... --shard I/N' wrote") from None
    if not isinstance(run, dict) or not isinstance(run.get("shard"), dict):
        raise UserError(f"{folder} is not a shard (it has no 'shard' in run.json); give the "
                        f"folders that 'factprobe eval ... --shard I/N' wrote")
    return run


def _chunk(path: Path) -> tuple[pd.DataFrame, ChunkStats]:
    try:
        table = pq.read_table(path)
        stats = ChunkStats(**jsonsafe.loads((table.schema.metadata or {})[META_KEY]))
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        raise UserError(f"{path}: cannot read this chunk ({exc}); run its shard again") from None
    return table.to_pandas(), stats


def _check(folders: list[Path], runs: list[dict]) -> None:
    first = runs[0]["shard"]
    for folder, run in zip(folders[1:], runs[1:]):
        if run["shard"]["fingerprint"] != first["fingerprint"]:
            what = [k for k in ("method", "method_config", "dataset", "eval", "model", "plan")
                    if json.dumps(run.get(k), sort_keys=True) !=
                    json.dumps(runs[0].get(k), sort_keys=True)]
            raise UserError(f"{folder} and {folders[0]} are shards of different commands or "
                            f"models ({', '.join(what) or 'settings'} differ); merge the "
                            f"shards of one command")
        if run["shard"]["count"] != first["count"]:
            raise UserError(f"{folder} is a shard of {run['shard']['count']}, {folders[0]} of "
                            f"{first['count']}; merge the shards of one command")
    seen: dict[int, Path] = {}
    for folder, run in zip(folders, runs):
        i = run["shard"]["index"]
        if i in seen:
            raise UserError(f"{folder} and {seen[i]} are both shard {i}/{first['count']}; "
                            f"give each shard once")
        seen[i] = folder
    lacking = [str(i) for i in range(first["count"]) if i not in seen]
    if lacking:
        raise UserError(f"shard(s) {', '.join(lacking)} of {first['count']} missing; run "
                        f"'--shard I/{first['count']}' for each and merge them all")


def merge_shards(folders: list[Path]) -> tuple[pd.DataFrame, dict, dict, tuple[str, ...]]:
    """(outputs, prompts, run.json, the plan's integer columns) of the run the shards in
    ``folders`` are parts of, rows in the order a single process computes them."""
    runs = [_read_shard(f) for f in folders]
    _check(folders, runs)
    order = sorted(range(len(runs)), key=lambda k: runs[k]["shard"]["index"])
    folders, runs = [folders[k] for k in order], [runs[k] for k in order]
    frames: list[pd.DataFrame] = []
    too_long: dict[str, int] = {}
    per_shard = [{"index": r["shard"]["index"], "tokens": 0, "seconds": 0.0} for r in runs]
    for s, stage in enumerate(runs[0]["shard"]["stages"]):
        parts = [(k, name) for k, run in enumerate(runs) for name in run["shard"]["stages"][s]
                 ["chunks"]]
        if not stage["built"]:
            # every shard planned the same chunks: put them back in chunk-index order
            parts.sort(key=lambda kn: int(kn[1].rsplit("-", 2)[1]))
        for k, name in parts:
            frame, stats = _chunk(folders[k] / CHUNKS / name)
            frames.append(frame)
            per_shard[k]["tokens"] += stats.tokens_computed
            per_shard[k]["seconds"] += stats.seconds
        for k, run in enumerate(runs):
            if stage["built"] or k == 0:   # a planned stage's counts are the same in each
                _add_counts(too_long, run["shard"]["stages"][s]["too_long"])
    prompts: dict[str, str] = {}
    for folder in folders:
        table = pq.read_table(folder / "prompts.parquet").to_pydict()
        prompts.update(zip(table["prompt_id"], table["text"]))
    outputs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    run = {k: v for k, v in runs[0].items() if k not in ("shard", "output", "files")}
    timings: dict[str, float] = {}
    for r in runs:
        for key, sec in r["timings_s"].items():
            timings[key] = round(timings.get(key, 0.0) + sec, 3)
    run |= {
        "plan": run["plan"] | {"too_long": too_long},
        "timings_s": timings,
        "tokens": {key: sum(r["tokens"][key] for r in runs) for key in runs[0]["tokens"]},
        "sessions": {key: sum(r["sessions"][key] for r in runs) for key in runs[0]["sessions"]},
        "executor": {"kind": "shards", "shards": len(runs),
                     "per_shard": [p | {"seconds": round(p["seconds"], 3)} for p in per_shard]},
        "rows": len(outputs),
    }
    integer = runs[0]["shard"].get("integer_columns", LEGACY_INTEGER_COLUMNS)
    return outputs, prompts, run, tuple(integer)



def parse_shard(value: str) -> tuple[int, int]:
    """``--shard I/N``: shard I (counted from 0) of N.

    >>> parse_shard("1/4")
    (1, 4)
    """
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise ValueError(f"{value!r}: use I/N, e.g. 0/4 (shards count from 0)") from None
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"{value!r}: I must be in 0..N-1 (shards count from 0)")
    return i, n


def _add_counts(total: dict, more: dict) -> None:
    """Add --too-long counts (numbers, or numbers per relation) into ``total``.

    >>> t = {"skipped_too_long": 1, "skipped_per_relation": {"P1": 1}}
    >>> _add_counts(t, {"skipped_too_long": 2, "skipped_per_relation": {"P1": 1, "P2": 1}})
    >>> t
    {'skipped_too_long': 3, 'skipped_per_relation': {'P1': 2, 'P2': 1}}
    """
    for key, n in more.items():
        if isinstance(n, dict):
            _add_counts(total.setdefault(key, {}), n)
        else:
            total[key] = total.get(key, 0) + n
