"""Time and peak memory of `factprobe build facts` on N synthetic T-REx-shaped triples.

    python benchmarks/bench_build_facts.py --facts 1000000
    python benchmarks/bench_build_facts.py --facts 10000000 --sources csv

The triples come from the same generator as bench_build_mc.py (60 relations of Zipf-distributed
size, Zipf-distributed objects, a fifth of subjects with several answers) and are written once
per N under --work in two layouts: a LAMA-style folder of ``P<id>.jsonl`` files (``sub_uri``,
``sub_label``, ``obj_uri``, ``obj_label``, ``predicate_id`` and one evidence sentence, as in
T-REx) and one CSV (subject, relation, object, subject_label, object_label). Each build runs as
a child process; its own peak resident memory comes from ``os.wait4``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build_mc import synthetic_facts  # noqa: E402
from common import ROOT, emit, in_fresh_process, machine, run_child, versions  # noqa: E402

CHUNK = 200_000


def _columns(table: pa.Table, start: int, stop: int) -> tuple[list, ...]:
    part = table.slice(start, stop - start)
    return tuple(part.column(c).to_pylist() for c in
                 ("relation_id", "subject_id", "object_id", "subject", "object"))


def write_lama(table: pa.Table, folder: Path) -> None:
    """One ``P<id>.jsonl`` per relation (ids and labels are plain ASCII, so no escaping)."""
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    handles: dict[str, object] = {}
    try:
        for start in range(0, table.num_rows, CHUNK):
            rel, sid, oid, sub, obj = _columns(table, start, min(start + CHUNK, table.num_rows))
            lines: dict[str, list[str]] = {}
            for r, s, o, sl, ol in zip(rel, sid, oid, sub, obj):
                pid = r.split("_")[0]
                lines.setdefault(pid, []).append(
                    f'{{"predicate_id": "{pid}", "sub_uri": "{s}", "sub_label": "{sl}", '
                    f'"obj_uri": "{o}", "obj_label": "{ol}", "evidences": [{{"title": "{sl}", '
                    f'"masked_sentence": "{sl} is known for [MASK], as records show.", '
                    f'"obj_surface": "{ol}"}}]}}\n')
            for pid, chunk in lines.items():
                if pid not in handles:
                    handles[pid] = open(tmp / f"{pid}.jsonl", "w", encoding="utf-8")
                handles[pid].writelines(chunk)
    finally:
        for fh in handles.values():
            fh.close()
    tmp.rename(folder)


def write_csv(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("subject,relation,object,subject_label,object_label\n")
        for start in range(0, table.num_rows, CHUNK):
            rel, sid, oid, sub, obj = _columns(table, start, min(start + CHUNK, table.num_rows))
            fh.writelines(f"{s},{r.split('_')[0]},{o},{sl},{ol}\n"
                          for r, s, o, sl, ol in zip(rel, sid, oid, sub, obj))
    tmp.rename(path)


def generate(facts: int, relations: int, seed: int, missing: dict[str, Path]) -> None:
    """Write the inputs named in ``missing`` (source -> path) from one generated table."""
    t0 = time.perf_counter()
    table = synthetic_facts(facts, relations, seed)
    if "trex" in missing:
        write_lama(table, missing["trex"])
    if "csv" in missing:
        write_csv(table, missing["csv"])
    print(f"wrote {table.num_rows:,} triples in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--relations", type=int, default=60)
    ap.add_argument("--sources", default="trex,csv", help="comma-separated: trex, csv")
    ap.add_argument("--work", default=str(ROOT / ".bench"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="append the numbers to this JSON-lines file")
    args = ap.parse_args()
    work = Path(args.work)
    inputs = {"trex": work / f"trex-lama-{args.facts}", "csv": work / f"triples-{args.facts}.csv"}
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    if unknown := sorted(set(sources) - set(inputs)):
        ap.error(f"--sources: unknown {', '.join(unknown)}; choose from trex, csv")
    missing = {s: inputs[s] for s in sources if not inputs[s].exists()}
    if missing:
        in_fresh_process(generate, args.facts, args.relations, args.seed, missing)
    for source in sources:
        path = inputs[source]
        out = work / f"facts-{source}-{args.facts}"
        cmd = [sys.executable, "-m", "factprobe.cli.app", "build", "facts", "--quiet", "--source",
               source, "--path", str(path), "--relations", "all", "--out", str(out)]
        seconds, peak = run_child(cmd)
        manifest = json.loads((out / "dataset.json").read_text())
        size = sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() \
            else path.stat().st_size
        row = {"benchmark": f"build facts --source {source}", "input_facts": args.facts,
               "input_mb": round(size / 2 ** 20), "facts": manifest["counts"]["facts"],
               "relations": manifest["counts"]["relations"], "seconds": round(seconds, 1),
               "peak_rss_mb": round(peak), "machine": machine(), "versions": versions()}
        emit(row, args.json, append=True)


if __name__ == "__main__":
    main()
