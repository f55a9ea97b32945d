"""Running the real console script with its peak memory and wall time measured.

The command runs under a small Python wrapper that waits for it and reports the peak resident
memory of the command and its children (``RUSAGE_CHILDREN``), so one test's number is never
mixed with another's. Its address space is capped well above the 1.5 GB the contract allows:
a regression ends as a failed test rather than as a machine out of memory.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.contract.harness import factprobe_exe

LIMIT_MB = 1536           # the contract: a hostile input never takes more
WALL_S = 60               # ... nor longer, with --timeout 5
ADDRESS_SPACE = 4 << 30   # the guard rail for the machine, not the assertion

_WRAPPER = """
import json, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
p = subprocess.run(sys.argv[3:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
open(sys.argv[2], "w").write(json.dumps({"rc": p.returncode, "peak_mb": peak}))
"""


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    peak_mb: int
    wall_s: float


def run_measured(argv: list[str], cwd: Path, env: dict | None = None, timeout: float = 120
                 ) -> Measured:
    """Run ``factprobe argv``; a command still running at ``timeout`` fails the test."""
    report = cwd / ".measured.json"
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
                "FACTPROBE_CACHE_DIR": str(cwd / ".cache-factprobe"), **(env or {})}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, str(ADDRESS_SPACE), str(report),
                           *factprobe_exe(), *argv], cwd=cwd, capture_output=True, text=True,
                          env=full_env, timeout=timeout)
    wall = time.monotonic() - start
    result = json.loads(report.read_text())
    report.unlink()
    return Measured(result["rc"], proc.stdout, proc.stderr, result["peak_mb"], wall)


def check_refused(m: Measured, needles: tuple[str, ...] = ()) -> None:
    """Exit 2, one line, no traceback, within the memory and time the contract allows."""
    assert "Traceback" not in m.stderr, m.stderr[-3000:]
    assert m.returncode == 2, f"exit {m.returncode}: {m.stderr[-3000:]}"
    lines = [ln for ln in m.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"want one line on stderr, got {len(lines)}:\n{m.stderr[-3000:]}"
    for n in needles:
        assert n in lines[0], f"{n!r} not in: {lines[0]}"
    assert m.peak_mb < LIMIT_MB, f"peak memory {m.peak_mb} MB"
    assert m.wall_s < WALL_S, f"took {m.wall_s:.0f} s"
