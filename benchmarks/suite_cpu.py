"""Where `make test`'s CPU goes: every Python process the suite starts, with its own CPU time,
what it had imported and the test that started it (issue 25's 8-minute question).

A machine of N cores runs at most N CPU-seconds a second, so a suite of C CPU-seconds cannot
take less than C / N of wall time however its tests are packed (``floor_s``); this says which
processes hold C.

    python benchmarks/suite_cpu.py --json .bench/suite_cpu.json            # the whole suite
    python benchmarks/suite_cpu.py -- tests/contract/test_bad_eval.py      # part of it

How: a start-up hook (a ``.pth`` file and its module, written into this interpreter's
site-packages for the run and removed after it, the only files it writes there; it refuses to
replace files of those names that it did not write) logs, at each process's exit, its
``getrusage`` CPU, whether torch/transformers were imported, its argv and
``PYTEST_CURRENT_TEST``. Only processes whose environment carries ``FACTPROBE_SUITE_CPU_LOG``
log (children started with a scrubbed environment do not), and a process killed by a signal
or ended by ``os._exit`` (Ray's workers) logs nothing: the whole run's CPU, from the children
rusage of the pytest process, is reported beside the logged sum, the difference "unlogged".
Not a timed test: the figures go to docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOOK = "factprobe_suite_cpu_hook"
MARK = "# written by benchmarks/suite_cpu.py for one run; removed after it\n"
HOOK_SOURCE = MARK + r'''
import atexit, os, sys

def _log():
    path = os.environ.get("FACTPROBE_SUITE_CPU_LOG")
    if not path:
        return
    try:
        import json, resource
        r = resource.getrusage(resource.RUSAGE_SELF)
        rec = {"cpu": r.ru_utime + r.ru_stime, "argv": sys.argv[:4],
               "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules,
               "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
               "worker": os.environ.get("PYTEST_XDIST_WORKER", "")}
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    except Exception:     # a measuring hook never changes how a process ends
        pass

atexit.register(_log)
'''


def kind(rec: dict) -> str:
    """What a logged process was.

    >>> kind({"argv": ["-c"], "worker": "gw0", "test": "", "transformers": True})
    'pytest itself (its workers: every in-process test)'
    >>> kind({"argv": [".venv/bin/dvc", "repro"], "worker": "", "test": "t", "transformers": False})
    'dvc'
    >>> kind({"argv": ["/x/pytest/__main__.py", "-q"], "worker": "gw0", "test": "t",
    ...       "transformers": False})
    'pytest run by a test'
    >>> kind({"argv": ["factprobe", "eval", "--out", "/tmp/pytest-of-me/x"], "worker": "gw1",
    ...       "test": "t", "transformers": True})
    'model command (transformers imported)'
    """
    exe = Path(rec["argv"][0]) if rec["argv"] else Path()
    is_pytest = "pytest" in exe.parts or exe.name.startswith("pytest")
    if not rec["test"] and (rec["worker"] or is_pytest):
        return PYTEST
    if exe.name == "dvc":
        return "dvc"
    if is_pytest:
        return "pytest run by a test"
    if rec["transformers"]:
        return "model command (transformers imported)"
    return "other Python process"


PYTEST = "pytest itself (its workers: every in-process test)"


def summarise(records: list[dict], total_cpu: float, cores: int) -> dict:
    by_kind: dict = defaultdict(lambda: {"processes": 0, "cpu_s": 0.0})
    by_file: dict = defaultdict(lambda: {"processes": 0, "cpu_s": 0.0})
    for rec in records:
        k = kind(rec)
        by_kind[k]["processes"] += 1
        by_kind[k]["cpu_s"] += rec["cpu"]
        if k != PYTEST:
            f = rec["test"].split("::")[0] or "(no test in its environment)"
            by_file[f]["processes"] += 1
            by_file[f]["cpu_s"] += rec["cpu"]
    logged = sum(r["cpu"] for r in records)
    top = dict(sorted(by_file.items(), key=lambda kv: -kv[1]["cpu_s"])[:25])
    return {"cpu_s": total_cpu, "logged_cpu_s": logged, "unlogged_cpu_s": total_cpu - logged,
            "floor_s": total_cpu / cores, "by_kind": dict(by_kind),
            "subprocesses_by_test_file": top}


def install_hook(site: Path) -> list[Path]:
    """Write the hook's module and its ``.pth`` into ``site``; refuses (exit 2) where a file of
    those names is there and not this script's."""
    files = [site / f"{HOOK}.py", site / f"{HOOK}.pth"]
    for f in files:
        if f.exists() and not f.read_text(encoding="utf-8").startswith(MARK):
            print(f"error: {f} exists and was not written by benchmarks/suite_cpu.py; move it "
                  "away first", file=sys.stderr)
            raise SystemExit(2)
    try:
        files[0].write_text(HOOK_SOURCE, encoding="utf-8")
        files[1].write_text(MARK + f"import {HOOK}\n", encoding="utf-8")
    except OSError as exc:
        remove_hook(files)
        print(f"error: cannot write the hook into {site}: {exc.strerror or exc}; run with an "
              "interpreter whose site-packages you can write (a virtual environment)",
              file=sys.stderr)
        raise SystemExit(2) from None
    return files


def remove_hook(files: list[Path]) -> None:
    for f in files:
        if f.exists() and f.read_text(encoding="utf-8").startswith(MARK):
            f.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=3, help="pytest-xdist workers (make test's)")
    ap.add_argument("--json", default=None)
    ap.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: all)")
    args = ap.parse_args()
    dist = ["-n", str(args.workers), "--dist", "loadfile", "--no-loadscope-reorder"] \
        if args.workers > 1 else ["-p", "no:xdist"]
    folder = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
    log = folder / "processes.jsonl"
    env = {**os.environ, "FACTPROBE_SUITE_CPU_LOG": str(log),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    files: list[Path] = []
    try:
        try:
            files = install_hook(Path(sysconfig.get_paths()["purelib"]))
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "pytest", *dist, "-q",
                                   "-p", "no:cacheprovider", *args.pytest_args], cwd=ROOT, env=env)
            wall = time.perf_counter() - start
        finally:
            remove_hook(files)
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] \
            if log.exists() else []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    info = machine()
    res = {"machine": info, "wall_s": wall, "pytest_exit": proc.returncode,
           **summarise(records, usage.ru_utime + usage.ru_stime, info["cores"] or 1)}
    emit(res, args.json)


if __name__ == "__main__":
    main()
