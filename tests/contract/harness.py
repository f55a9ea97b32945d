"""The user-facing contract of every ``factprobe`` command, as a table of bad inputs.

Each :class:`Case` runs the command in a fresh copy of a small workspace (built datasets, a tiny
model, a user's own files) and :func:`check` asserts the promise: exit code 2, one non-empty
line on stderr, no traceback, the ``--out`` target unchanged, no stray temp folder, and nothing
that existed before the command changed or vanished.

:func:`run` calls the console script's own function in this process (tests/inprocess.py
says what it isolates between runs): a new interpreter costs two seconds of
imports per case. What needs a real process (a kill, a signal, a terminal, the console script
itself, its start-up imports, a variable read at import) uses :func:`run_process`.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.inprocess import needs_process, run_in_process

# A command's own leftovers that must never outlive it (atomic writes, checkpoints).
STRAY = re.compile(r"^\..+\.(tmp-.*|old-\d+|partial)$")


def factprobe_exe() -> list[str]:
    """The installed console script, so the test runs what a user runs."""
    exe = shutil.which("factprobe") or str(Path(sys.executable).with_name("factprobe"))
    if Path(exe).exists():
        return [exe]
    return [sys.executable, "-m", "factprobe.cli.app"]


@dataclass(frozen=True)
class Case:
    """One bad input. ``argv`` may hold ``{name}`` placeholders, filled from the workspace
    (``{ws}`` is the workspace folder itself). ``setup`` prepares extra files in the workspace
    before the command runs; ``needles`` must appear in the error line."""

    id: str
    argv: tuple[str, ...]
    needles: tuple[str, ...] = ()
    setup: Callable[[Path], None] | None = None
    env: dict = field(default_factory=dict)
    timeout: int = 300


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``root`` -> (sha1 of the content or 'dir', mode)."""
    out: dict[str, tuple[str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = Path(dirpath) / d
            out[str(p.relative_to(root))] = ("dir", p.stat().st_mode)
        for f in filenames:
            p = Path(dirpath) / f
            if p.is_symlink():
                out[str(p.relative_to(root))] = ("link:" + os.readlink(p), 0)
                continue
            out[str(p.relative_to(root))] = (hashlib.sha1(p.read_bytes()).hexdigest(),
                                             p.stat().st_mode)
    return out


def _env(cwd: Path, env: dict | None) -> dict:
    return {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "FACTPROBE_CACHE_DIR": str(cwd / ".cache-factprobe"),
            **(env or {})}


def run(argv: list[str], cwd: Path, env: dict | None = None, timeout: int = 300
        ) -> subprocess.CompletedProcess:
    """``factprobe argv`` in ``cwd``: in this process, or in a new one when ``env`` sets a
    variable that a library reads only at import (inprocess.needs_process)."""
    if needs_process(env) or os.environ.get("FACTPROBE_TEST_PROCESSES") == "1":
        # the second: every case in a new process, to compare both ways (or time them)
        return run_process(argv, cwd, env, timeout)
    return run_in_process(list(argv), Path(cwd), _env(Path(cwd), env), timeout)


def run_process(argv: list[str], cwd: Path, env: dict | None = None, timeout: int = 300
                ) -> subprocess.CompletedProcess:
    """``factprobe argv`` as a user runs it: the installed console script, a new process."""
    return subprocess.run(factprobe_exe() + list(argv), cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **_env(Path(cwd), env)})


def expand(argv: tuple[str, ...], names: dict[str, str]) -> list[str]:
    return [a.format(**names) for a in argv]


def check(proc: subprocess.CompletedProcess, before: dict, after: dict, *,
          needles: tuple[str, ...] = (), new_ok: Callable[[str], bool] = lambda p: False
          ) -> None:
    """The contract for a user error (see the module docstring)."""
    err = proc.stderr
    assert "Traceback" not in err, err
    assert proc.returncode == 2, f"exit {proc.returncode}: {err}"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"want one line on stderr, got {len(lines)}:\n{err}"
    for n in needles:
        assert n in lines[0], f"{n!r} not in: {lines[0]}"
    changed = sorted(p for p in before if after.get(p) != before[p])
    assert not changed, f"changed or deleted: {changed[:10]}"
    new = sorted(p for p in after if p not in before)
    stray = [p for p in new if STRAY.match(Path(p).name)]
    assert not stray, f"stray temp entries left behind: {stray}"
    unexpected = [p for p in new if not new_ok(p)]
    assert not unexpected, f"a failed command wrote: {unexpected[:10]}"
