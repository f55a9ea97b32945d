"""The model's part of one `factprobe eval`, timed apart from the command's one-thread work
(imports, loading, the plan, metrics): lanes of one torch thread against one lane on torch's
intra-op threads, free and with one core held by another process.

    python benchmarks/bench_lanes.py zp-lke --repeat 3 -- --dataset data/datasets/sample-mc \\
        --model data/models/planted --examples 50 --seeds 0 --no-subject-blind

The eval runs once (``--threads 1``) while its chunk jobs are recorded; then the same jobs are
computed again in this process under each setting, alternately, ``--repeat`` times. Every
setting's rows are compared with the first's (``same``: equal to the bit).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, machine, versions  # noqa: E402,F401  (common puts ROOT on sys.path)

SETTINGS = {"1 lane x 1 thread": (1, 1), "1 lane x 2 threads": (2, 1),
            "2 lanes x 1 thread": (1, 2)}


def capture(method: str, flags: list[str]):
    """Run the eval once; return its backend and every (stage, kind, jobs) it computed."""
    from factprobe.cli.app import build_parser
    from factprobe.evaluation import run_evaluation
    from factprobe.probes.engine import executors as ex
    seen, loaded = [], {}
    original = ex.LocalExecutor.run

    def recording(self, stage_name, kind, jobs, bar):
        seen.append((stage_name, kind, jobs))
        loaded["backend"] = self.backend
        yield from original(self, stage_name, kind, jobs, bar)
    out = Path(tempfile.mkdtemp()) / "run"
    ex.LocalExecutor.run = recording
    try:
        run_evaluation(method, build_parser().parse_args(
            ["eval", method, "--quiet", "--threads", "1", "--out", str(out), *flags]))
    finally:
        ex.LocalExecutor.run = original
        shutil.rmtree(out.parent, ignore_errors=True)
    return loaded["backend"], seen


def compute(backend, seen, intra_op: int, lanes: int) -> list:
    import torch

    from factprobe.core.lanes import Lanes
    from factprobe.probes.engine.executors import LocalExecutor
    torch.set_num_threads(intra_op)
    executor = LocalExecutor(backend, lanes)
    try:
        return [rows for stage, kind, jobs in seen
                for _, rows, _ in executor.run(stage, kind, jobs, None)]
    finally:
        executor.close()
        backend.lanes = Lanes(1)


def hold(core: int) -> subprocess.Popen:
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    return subprocess.Popen([sys.executable, "-c", code])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("method")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--free-only", action="store_true", help="no runs with a core held")
    ap.add_argument("--json", help="append the result to this JSON-lines file")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    flags = argv[cut + 1:]          # the eval's own flags, after --
    backend, seen = capture(args.method, flags)
    core = max(os.sched_getaffinity(0))
    runs: dict = {}
    first = None
    for _ in range(args.repeat):
        for held in (False,) if args.free_only else (False, True):
            for label, (intra_op, lanes) in SETTINGS.items():
                spinner = hold(core) if held else None
                try:
                    time.sleep(0.3 if held else 0)
                    load = os.getloadavg()[0]
                    t0 = time.perf_counter()
                    rows = compute(backend, seen, intra_op, lanes)
                    seconds = time.perf_counter() - t0
                finally:
                    if spinner is not None:
                        spinner.kill()
                        spinner.wait()
                text = json.dumps(rows, default=str, sort_keys=True)
                first = first or text
                got = {"seconds": round(seconds, 3), "load_before": round(load, 2),
                       "same": text == first}
                runs.setdefault(f"{label}, {'one core held' if held else 'free'}",
                                []).append(got)
                print(args.method, label, "held" if held else "free", got, file=sys.stderr)
    emit({"benchmark": "the model's part of eval on lanes and on intra-op threads",
          "method": args.method, "flags": flags,
          "chunks": {stage: len(jobs) for stage, _, jobs in seen},
          "median_s": {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()},
          "all_same": all(r["same"] for v in runs.values() for r in v), "runs": runs,
          "machine": machine(), "versions": versions()}, args.json, append=True)


if __name__ == "__main__":
    main()
