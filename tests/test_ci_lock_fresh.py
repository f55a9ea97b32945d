"""CI fails before the run when the committed dvc.lock is stale (issue 29: a fresh clone's
`dvc repro` rewrote 28 lines of code hashes, and CI's checks after the run passed): a real git +
DVC repository, locked, cloned fresh (no outputs, no cache), then its code or params edited."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / ".ci" / "check_lock_fresh.py"
BIN = Path(sys.executable).parent
DVC_YAML = """stages:
  one:
    cmd: python3 code.py > one.txt
    deps: [code.py]
    params: [n]
    outs: [one.txt]
  two:
    cmd: cat one.txt > two.txt
    deps: [one.txt]
    outs: [two.txt]
"""


def sh(cwd: Path, *cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_stale_lock_fails_before_the_run(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "code.py").write_text("print(1)\n")
    (src / "params.yaml").write_text("n: 1\n")
    (src / "dvc.yaml").write_text(DVC_YAML)
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "repro", "-q"],
                ["git", "add", "-A"], ["git", "commit", "-qm", "locked"],
                ["git", "clone", "-q", str(src), str(tmp_path / "clone")]):
        proc = sh(src, *cmd)
        assert proc.returncode == 0, (cmd, proc.stderr)
    clone = tmp_path / "clone"
    fresh = sh(clone, sys.executable, str(CHECK))     # outputs missing: that is no staleness
    assert fresh.returncode == 0, fresh.stderr
    (clone / "code.py").write_text("print(2)\n")
    (clone / "params.yaml").write_text("n: 2\n")
    stale = sh(clone, sys.executable, str(CHECK))
    assert stale.returncode == 1
    assert "one: code.py modified" in stale.stderr and "one: params.yaml n modified" in stale.stderr
    assert "one.txt" not in stale.stderr and "  two:" not in stale.stderr   # outputs, expected


def test_ci_checks_the_lock_before_repro():
    run = (ROOT / ".ci" / "run").read_text()
    assert "check_lock_fresh.py" in run
    assert run.index("check_lock_fresh.py") < run.index("make repro")
