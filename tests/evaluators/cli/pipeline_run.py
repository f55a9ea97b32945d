"""Running a user's own repository from the tests: commands with the suite's interpreter first
on PATH, one torch thread and a fixed git identity, and the stages `factprobe init`'s pipeline
has for the methods table (tests/evaluators/cli/test_own_graph_doc.py and
test_init_planting.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from factprobe.evaluators.methods import METHODS

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
# every method with a DVC stage (the table's), and its stage in init's pipeline: masked-LM
# methods run on the masked planted model
PIPELINED = [n for n, m in METHODS.items() if m.probe.pipeline is not None]
EVAL_STAGES = [f"eval-{n}@planted" + ("-mlm" if METHODS[n].probe.backend == "hf-masked" else "")
               for n in PIPELINED]
ICL = "--max-names 1 --contexts zero,4-template --samples {} --sample-prompts 4"


def run(repo: Path, *cmd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "OMP_NUM_THREADS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(list(cmd), cwd=repo, env=env, capture_output=True, text=True,
                          timeout=1200)


def ok(repo: Path, *cmd: str) -> str:
    proc = run(repo, *cmd)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout
