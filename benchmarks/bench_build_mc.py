"""Time and peak memory of `factprobe build mc` on N synthetic T-REx-shaped facts.

    python benchmarks/bench_build_mc.py --facts 1000000
    python benchmarks/bench_build_mc.py --facts 10000000

The facts table is generated once per N (cached under --work) with T-REx-like skew: relation
sizes follow a Zipf law, objects per relation are Zipf-distributed too, and about one subject
in five has several answers. `build mc` then runs as a child process, so its peak resident
memory is measured alone (``os.wait4``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, emit, in_fresh_process, machine, run_child, versions  # noqa: E402

from factprobe.core.tables import FACTS_SCHEMA, base_manifest, write_dataset  # noqa: E402


def synthetic_facts(n: int, relations: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    target, n = n, int(n * 1.2)  # oversample: duplicates are removed below, then cut to target
    weights = 1.0 / np.arange(1, relations + 1) ** 0.8
    rel = rng.choice(relations, size=n, p=weights / weights.sum())
    per_rel = np.bincount(rel, minlength=relations)
    # subjects: ~n/1.25 distinct, so about a fifth of pairs carry a second answer
    subj = rng.integers(0, max(1, int(n / 1.25 / relations)), size=n)
    n_objects = np.maximum(50, (per_rel / 20).astype(np.int64))
    obj = (rng.zipf(1.3, size=n) - 1) % n_objects[rel]
    order = np.lexsort((obj, subj, rel))
    rel, subj, obj = rel[order], subj[order], obj[order]
    keep = np.ones(n, dtype=bool)
    keep[1:] = (rel[1:] != rel[:-1]) | (subj[1:] != subj[:-1]) | (obj[1:] != obj[:-1])
    rel, subj, obj = rel[keep], subj[keep], obj[keep]
    if len(rel) > target:
        pick = np.sort(rng.choice(len(rel), size=target, replace=False))
        rel, subj, obj = rel[pick], subj[pick], obj[pick]
    m = len(rel)
    rid = np.char.add("P", (rel + 10).astype(str))
    sid = np.char.add(np.char.add(rid, "_Q"), subj.astype(str))
    oid = np.char.add(np.char.add(rid, "_O"), obj.astype(str))
    empty = pa.array([[]] * m, type=pa.list_(pa.string()))
    cols = {
        "fact_id": pa.array(np.char.add("f", np.arange(m).astype(str))),
        "relation_id": pa.array(rid), "subject_id": pa.array(sid), "object_id": pa.array(oid),
        "subject": pa.array(np.char.add("Subject ", sid)),
        "object": pa.array(np.char.add("Object ", oid)),
        "subject_aliases": empty, "object_aliases": empty,
        # answers are not read by build mc (it recomputes them from the rows)
        "answers": empty,
        "split": pa.array([""] * m), "source": pa.array(["synthetic"] * m),
    }
    return pa.table(cols, schema=FACTS_SCHEMA)


def generate(facts_dir: Path, facts: int, relations: int, seed: int) -> None:
    t0 = time.perf_counter()
    table = synthetic_facts(facts, relations, seed)
    write_dataset(facts_dir, {"facts": table}, base_manifest(
        facts_dir.name, "facts", {"type": "synthetic"},
        {"facts": facts, "relations": relations, "seed": seed}, {"facts": table.num_rows}))
    print(f"generated {table.num_rows:,} facts in {time.perf_counter() - t0:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--relations", type=int, default=60)
    ap.add_argument("--work", default=str(ROOT / ".bench"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="append the numbers to this JSON-lines file")
    args = ap.parse_args()
    work = Path(args.work)
    facts_dir = work / f"synthetic-{args.facts}"
    if not (facts_dir / "facts.parquet").exists():
        in_fresh_process(generate, facts_dir, args.facts, args.relations, args.seed)
    cmd = [sys.executable, "-m", "factprobe.cli.app", "build", "mc", "--quiet", "--facts",
           str(facts_dir), "--out", str(work / f"mc-{args.facts}")]
    seconds, peak_mb = run_child(cmd)
    manifest = json.loads((work / f"mc-{args.facts}" / "dataset.json").read_text())
    row = {"benchmark": "build mc",
           "facts": json.loads((facts_dir / "dataset.json").read_text())["counts"]["facts"],
           "relations_kept": manifest["counts"]["relations"], "rows": manifest["counts"]["rows"],
           "seconds": round(seconds, 2), "peak_rss_mb": round(peak_mb),
           "machine": machine(), "versions": versions()}
    emit(row, args.json, append=True)


if __name__ == "__main__":
    main()
