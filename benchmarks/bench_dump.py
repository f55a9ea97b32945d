"""`factprobe build facts --source wikidata-dump` against a plain `bzip2 -dc` of the same file.

    python benchmarks/bench_dump.py --entities 25000,100000 --repeat 3 --json .bench/dump.jsonl
    python benchmarks/bench_dump.py --dense --entities 25000,100000 --json .bench/dump.jsonl
    git archive BASE_COMMIT | tar -x -C /tmp/base     # before / after in the same pairs:
    python benchmarks/bench_dump.py --dense --base-src /tmp/base --json .bench/dump.jsonl

``--dense``: the shape of a real probing extraction, twenty common relations (P31, P17, P27,
P106, P131...) with several facts per entity and one entity in two hundred holding hundreds of
statements (``DENSE_RELATIONS`` in tests/wikidata_dump_synthetic.py).

For each size, a synthetic JSON dump is written once under --work (``dump-N.json.bz2``): lines
shaped like real ones (2-5 KB: labels and descriptions in several languages, aliases, four to
nine statements with SHA-1 hashes and statement GUIDs, some references, ranks, unknown values
and dated qualifiers; see tests/wikidata_dump_fixture.py). Then, alternating, ``bzip2 -dc FILE >
/dev/null`` and the build, each a fresh child process: wall time, and peak memory both as the
kernel reports the largest process (ru_maxrss, which also counts the memory of the process it
was started from, so this script stays small until the end) and as the sampled sum over the
whole process tree (the build may run parser processes). The build's facts are checked against every
best-rank fact of the asked relations that the generator wrote (minus those whose subject or
object has no English label, which every source drops). The ratio is taken within each pair of
runs, so a busy machine slows both sides alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, emit, in_fresh_process, machine, versions  # noqa: E402


def generate(n: int, relations: tuple[str, ...], path: Path, expected: Path,
             dense: bool = False) -> None:
    from tests.wikidata_dump_synthetic import write_synthetic
    t0 = time.perf_counter()
    facts, labelled = write_synthetic(path, n, seed=0, relations=relations, dense=dense)
    kept = sorted(f for f in facts if f[1] in labelled and f[2] in labelled)
    expected.write_text(json.dumps({"facts": kept, "all_best_rank": len(facts)}))
    print(f"wrote {path.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


class TreePeak:
    """Samples the resident memory of a process and all its descendants."""

    def __init__(self, pid: int, every_s: float = 0.02):
        import psutil
        self.proc = psutil.Process(pid)
        self.peak = 0
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil
        while not self._stop.is_set():
            total = 0
            try:
                for p in [self.proc, *self.proc.children(recursive=True)]:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            self.peak = max(self.peak, total)
            time.sleep(self.every_s)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 2 ** 20


def timed(cmd: list[str], env: dict | None = None, sample: bool = False) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, env=env)
    sampler = TreePeak(proc.pid) if sample else None
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    out = {"seconds": round(seconds, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
           "max_process_rss_mb": round(usage.ru_maxrss / 1024)}
    if sampler:
        out["tree_rss_mb"] = round(sampler.stop())
    return out


# Runs `factprobe` from another source folder (a `git archive` of an earlier commit) with this
# environment's packages: the editable install's folder map is pointed there before import.
_BASE_SHIM = (
    "import sys, runpy\n"
    "import __editable___factprobe_0_1_0_finder as f\n"
    "here, base = sys.argv[1], sys.argv[2]\n"
    "for k, v in list(f.MAPPING.items()):\n"
    "    f.MAPPING[k] = v.replace(here, base)\n"
    "sys.path.insert(0, base)\n"
    "sys.argv = ['factprobe'] + sys.argv[3:]\n"
    "runpy.run_module('factprobe.cli.app', run_name='__main__')\n")


def sha256s(folder: Path) -> dict:
    """The tables' hashes, and dataset.json's without what differs between two runs."""
    import hashlib
    out = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
           for name in ("facts.parquet", "relations.parquet")}
    manifest = json.loads((folder / "dataset.json").read_text())
    for key in ("name", "provenance"):   # the folder's name, the code's git state
        manifest.pop(key, None)
    out["dataset.json (counts)"] = hashlib.sha256(
        json.dumps(manifest, sort_keys=True).encode()).hexdigest()
    return out


def parse_costs(dump: Path, relations: tuple[str, ...], lines: int = 20000,
                repeat: int = 5) -> dict:
    """CPU per line of the JSON reader as built (msgspec types that skip unwanted claims) and
    of the alternative the issue suggests, a test for the wanted ids on the raw line first
    (lines without one decoded for their names only); both must give the same rows."""
    import bz2

    from factprobe.builders.sources.wikidata_dump.json_lines import EntityReader
    from factprobe.builders.sources.wikidata_dump.rows import PieceStats, Rows
    from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
    with bz2.open(dump, "rb") as fh:
        fh.readline()
        sample = [fh.readline() for _ in range(lines)]
    batch = b"".join(sample)
    typed = EntityReader(ExtractSpec("json", "en", relations))
    names_only = EntityReader(ExtractSpec("json", "en", ()))
    needles = [f'"{p}":['.encode() for p in relations]

    def as_built() -> Rows:
        rows = Rows()
        typed.read(batch, rows, PieceStats())
        return rows

    def raw_test_first() -> Rows:
        rows = Rows()
        hits, misses = [], []
        for line in sample:
            (hits if any(n in line for n in needles) else misses).append(line)
        typed.read(b"".join(hits), rows, PieceStats())
        names_only.read(b"".join(misses), rows, PieceStats())
        return rows

    out = {}
    for name, fn in (("typed_skip", as_built), ("raw_test_first", raw_test_first)):
        best = float("inf")
        for _ in range(repeat):
            t0 = time.process_time()
            rows = fn()
            best = min(best, time.process_time() - t0)
        out[name] = {"us_per_line": round(best / lines * 1e6, 2),
                     "statements": len(rows.statements["subject_id"])}
    out["lines"] = lines
    out["json_mb"] = round(len(batch) / 2 ** 20, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", default="25000,100000", help="comma-separated sizes")
    ap.add_argument("--relations", help="default P19,P36,P37, or with --dense the twenty "
                    "dense relations")
    ap.add_argument("--dense", action="store_true",
                    help="a dense dump: several facts per entity over twenty relations")
    ap.add_argument("--repeat", type=int, default=3, help="bzip2 / build pairs per size")
    ap.add_argument("--work", default=str(ROOT / ".bench"))
    ap.add_argument("--workers", type=int, help="--workers for the build (default: auto)")
    ap.add_argument("--threads", type=int, help="--threads for the build (default: auto)")
    ap.add_argument("--executor", choices=("local", "ray"), help="--executor for the build "
                    "(default: local)")
    ap.add_argument("--json", help="append one line per size to this JSON-lines file")
    ap.add_argument("--base-src", help="a source folder of an earlier commit (git archive "
                    "COMMIT | tar -x -C DIR): each pair becomes bzip2 -dc, that build, this "
                    "build, and the outputs' sha256 are compared")
    args = ap.parse_args()
    if args.base_src:
        import importlib.util
        if not (Path(args.base_src) / "builders").is_dir():
            raise SystemExit(f"--base-src {args.base_src}: not a factprobe source folder "
                             f"(make one with: git archive COMMIT | tar -x -C DIR)")
        if importlib.util.find_spec("__editable___factprobe_0_1_0_finder") is None:
            raise SystemExit("--base-src needs factprobe installed in editable mode "
                             "(pip install -e .): its folder map is what is pointed there")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    from tests.wikidata_dump_synthetic import DENSE_RELATIONS
    relations = (tuple(r.strip() for r in args.relations.split(",")) if args.relations
                 else DENSE_RELATIONS if args.dense else ("P19", "P36", "P37"))
    shape = "dense" if args.dense else "dump"
    sizes = [int(s) for s in args.entities.split(",")]
    rows = []
    for n in sizes:
        dump, expected = work / f"{shape}-{n}.json.bz2", work / f"{shape}-{n}.expected.json"
        if not dump.exists() or not expected.exists():
            in_fresh_process(generate, n, relations, dump, expected, args.dense)
        want = json.loads(expected.read_text())
        want["facts"] = [list(f) for f in want["facts"]]
        out = work / f"dump-facts-{n}"
        env = {**os.environ, "FACTPROBE_CACHE_DIR": str(work / "dump-cache")}
        build = [sys.executable, "-m", "factprobe.cli.app", "build", "facts", "--quiet",
                 "--source", "wikidata-dump", "--path", str(dump), "--relations",
                 ",".join(relations), "--out", str(out)]
        for flag in ("workers", "threads", "executor"):
            if getattr(args, flag) is not None:
                build += [f"--{flag}", str(getattr(args, flag))]
        base = None
        if args.base_src:
            base_out = work / f"dump-facts-{n}-base"
            base = [sys.executable, "-c", _BASE_SHIM, str(ROOT), str(Path(args.base_src).resolve()),
                    *(str(base_out) if a == str(out) else a for a in build[3:])]
        runs = []
        for _ in range(args.repeat):
            load = os.getloadavg()[0]
            ref = timed(["bzip2", "-dc", str(dump)])
            run = {"load_before": round(load, 2), "bzip2": ref}
            if base:
                before = timed(base, env, sample=True)
                run.update(before=before, ratio_before=round(before["seconds"] / ref["seconds"], 3))
            mine = timed(build, env, sample=True)
            runs.append({**run, "factprobe": mine,
                         "ratio": round(mine["seconds"] / ref["seconds"], 3)})
        got = json.loads(subprocess.run(
            [sys.executable, "-c", "import json, sys, pyarrow.parquet as pq; t = pq.read_table("
             "sys.argv[1], columns=['relation_id', 'subject_id', 'object_id']); print(json.dumps("
             "sorted(list(r.values()) for r in t.to_pylist())))", str(out / "facts.parquet")],
            check=True, capture_output=True, text=True).stdout)
        row = {"benchmark": "build facts --source wikidata-dump vs bzip2 -dc", "shape": shape,
               "entities": n,
               "relations": list(relations), "input_mb": round(dump.stat().st_size / 2 ** 20, 1),
               "json_mb": None, "facts": len(got), "best_rank_facts_written": want[
                   "all_best_rank"], "facts_equal_expected": got == want["facts"],
               "ratio_median": statistics.median(r["ratio"] for r in runs),
               "factprobe_s_min": min(r["factprobe"]["seconds"] for r in runs),
               "bzip2_s_min": min(r["bzip2"]["seconds"] for r in runs),
               "tree_rss_mb_max": max(r["factprobe"]["tree_rss_mb"] for r in runs),
               "max_process_rss_mb": max(r["factprobe"]["max_process_rss_mb"] for r in runs),
               "runs": runs, "loadavg_after": os.getloadavg(), "command": build[2:]}
        if base:
            row["same_bytes"] = sha256s(out) == sha256s(base_out)
            row["sha256"] = sha256s(out)
            row["ratio_before_median"] = statistics.median(r["ratio_before"] for r in runs)
            row["before_s_min"] = min(r["before"]["seconds"] for r in runs)
            row["before_max_process_rss_mb"] = max(r["before"]["max_process_rss_mb"]
                                                   for r in runs)
        with subprocess.Popen(["bzip2", "-dc", str(dump)], stdout=subprocess.PIPE) as p:
            row["json_mb"] = round(sum(len(b) for b in iter(lambda: p.stdout.read(1 << 22),
                                                            b"")) / 2 ** 20, 1)
        rows.append(row)
        if not row["facts_equal_expected"]:
            raise SystemExit(f"the build's facts differ from the generator's at {n} entities")
    # machine() imports torch to look for a GPU: done only now, because a child's ru_maxrss
    # includes the peak memory of the process it was started from.
    info = {"machine": machine(), "versions": versions()}
    for row in rows:
        emit({**row, **info}, args.json, append=True)
    small, big = rows[0], rows[-1]
    # Measured last: it loads the reader into this process, which would otherwise count in the
    # memory of every child started after it.
    costs = parse_costs(work / f"{shape}-{small['entities']}.json.bz2", relations,
                        lines=min(20000, small["entities"]))
    # Peak memory 100k / 25k two ways: the largest process (ru_maxrss: the build's own, the
    # figure of the acceptance) and the sampled sum over the process tree (parser processes
    # or Ray's workers included, but a 20 ms sample of a tree that forks can double-count).
    summary = {"process_memory_ratio": round(big["max_process_rss_mb"]
                                             / small["max_process_rss_mb"], 3),
               "memory_ratio": round(big["tree_rss_mb_max"] / small["tree_rss_mb_max"], 3),
               "entities": [small["entities"], big["entities"]],
               "time_ratio_vs_bzip2": {r["entities"]: r["ratio_median"] for r in rows},
               "build_cpu_mb_per_s": {r["entities"]: round(
                   r["json_mb"] / min(x["factprobe"]["cpu_s"] for x in r["runs"]), 1)
                   for r in rows},
               # MB of JSON per CPU-second of the whole build (every core it used), and
               # facts written per second of wall time
               "facts_per_s": {r["entities"]: round(r["facts"] / r["factprobe_s_min"])
                               for r in rows},
               "facts_per_entity": {r["entities"]: round(r["facts"] / r["entities"], 2)
                                    for r in rows},
               "parse_costs": costs}
    if args.base_src:
        summary["before"] = {
            "memory_ratio": round(big["before_max_process_rss_mb"]
                                  / small["before_max_process_rss_mb"], 3),
            "time_ratio_vs_bzip2": {r["entities"]: r["ratio_before_median"] for r in rows},
            "build_cpu_mb_per_s": {r["entities"]: round(
                r["json_mb"] / min(x["before"]["cpu_s"] for x in r["runs"]), 1) for r in rows},
            "facts_per_s": {r["entities"]: round(r["facts"] / r["before_s_min"]) for r in rows}}
        summary["same_bytes"] = {r["entities"]: r["same_bytes"] for r in rows}
    emit({"benchmark": "bench_dump summary", "shape": shape, **summary, **info}, args.json,
         append=True)


if __name__ == "__main__":
    main()
