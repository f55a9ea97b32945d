"""docs/extending.md's backend, first-class: a copy of the repository gets
docs/examples/unigram_backend exactly as the page says (its module as
``probes/backends/unigram.py`` and its row in ``KINDS``: 2 files), and then the command line
offers it: ``factprobe eval --help`` lists the kind and its flag, ``--backend unigram`` runs a
scoring method end to end with the kind's own numbers in outputs.parquet and run.json, a method
needing more than it offers is refused in one line before anything loads, another kind's flag
is refused, and the table-driven backend tests pass on the copy. The copy is imported through
tests/test_extending.py's shim (its folders, ahead of this venv's editable install)."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_extending import SHIM, _copy

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "unigram_backend"

pytestmark = pytest.mark.slow

CORPUS = "Paris is a city. Paris Paris Lima. Tokyo is big. The capital of Peru is Lima.\n"


def _add_backend(repo: Path) -> list[Path]:
    module = repo / "probes" / "backends" / "unigram.py"
    shutil.copy(EXAMPLE / "unigram.py", module)
    row = [line for line in (EXAMPLE / "kinds_row.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    table = repo / "probes" / "backends" / "__init__.py"
    text = table.read_text()
    anchor = "KINDS: dict[str, BackendKind] = {\n"
    head, tail = text.split(anchor)
    body, rest = tail.split("\n}\n", 1)
    table.write_text(head + anchor + body + "\n" + "\n".join(row) + "\n}\n" + rest)
    return [module, table]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    _copy(repo)
    changed = _add_backend(repo)
    shim = tmp_path_factory.mktemp("shim")
    (shim / "sitecustomize.py").write_text(SHIM)
    (repo / "corpus.txt").write_text(CORPUS)
    env = {**os.environ, "PYTHONPATH": str(shim), "FACTPROBE_COPY": str(repo),
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return repo, env, changed


def factprobe(copy, *args: str) -> subprocess.CompletedProcess:
    repo, env, _ = copy
    return subprocess.run([sys.executable, "-m", "factprobe.cli.app", *args], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=600)


def py(copy, code: str) -> str:
    repo, env, _ = copy
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def world(copy):
    """The planted-world datasets (tests/planted/conftest.py), built by the copy."""
    py(copy, """
        from pathlib import Path
        from tests.planted.conftest import build_world
        Path("world").mkdir()
        build_world(Path("world"))
        """)
    return copy[0] / "world"


def test_two_files_make_the_kind(copy):
    repo, _, changed = copy
    assert len(changed) == 2
    out = py(copy, "import factprobe.probes.backends as b; print(b.__file__); "
                   "print(sorted(b.KINDS))")
    assert out.startswith(str(repo)) and "'unigram'" in out


def test_eval_help_offers_it(copy):
    done = factprobe(copy, "eval", "prompt", "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert re.search(r"--backend \{[^}]*unigram[^}]*\}", text) or "unigram" in text
    assert "--unigram-alpha" in text


def test_a_scoring_method_runs_on_it(copy, world):
    repo = copy[0]
    done = factprobe(copy, "eval", "prompt", "--backend", "unigram", "--model", "corpus.txt",
                     "--dataset", str(world / "mc"), "--templates", str(ROOT / "data" /
                     "templates"), "--response-tokens", "0", "--out", "run-unigram", "--quiet",
                     "--no-subject-blind")
    assert done.returncode == 0, done.stderr
    run = json.loads((repo / "run-unigram" / "run.json").read_text())
    assert run["model"]["type"] == "unigram" and run["backend"] == {"alpha": 1.0}
    import pandas as pd
    out = pd.read_parquet(repo / "run-unigram" / "outputs.parquet")
    # the kind's own numbers: every option's log-prob is the sum of its words' smoothed
    # corpus frequencies, whatever the prompt
    words = re.findall(r"\w+|[^\w\s]", CORPUS)
    counts = {}
    for w in words:
        counts[w.lower()] = counts.get(w.lower(), 0) + 1
    total, vocab = len(words), len(counts) + 1
    assert len(out) > 0 and set(out["kind"]) == {"score"}
    for text, logprob in zip(out["option_text"], out["logprob"]):
        expected = sum(math.log((counts.get(w.lower(), 0) + 1) / (total + vocab))
                       for w in re.findall(r"\w+|[^\w\s]", str(text)))
        assert logprob == pytest.approx(expected, abs=1e-5), text
    assert json.loads((repo / "run-unigram" / "metrics.json").read_text())["method"] == "prompt"


def test_a_method_needing_more_is_refused_before_loading(copy, world):
    done = factprobe(copy, "eval", "monitor", "--backend", "unigram", "--model", "missing.txt",
                     "--dataset", str(world / "fktc"), "--out", "run-monitor", "--quiet")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    # the capability refusal, not the missing corpus: nothing was loaded
    assert "can generate" in lines[0] and "unigram" in lines[0], lines[0]
    assert not (copy[0] / "run-monitor").exists()


def test_another_kinds_flag_is_refused(copy, world):
    done = factprobe(copy, "eval", "prompt", "--backend", "unigram", "--model", "corpus.txt",
                     "--dtype", "float32", "--dataset", str(world / "mc"), "--templates",
                     str(ROOT / "data" / "templates"), "--out", "run-dtype", "--quiet")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "--dtype" in done.stderr


def test_backend_table_tests_pass_on_the_copy(copy):
    repo, env, _ = copy
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-x", "tests/probes/backends/test_contract.py", "tests/test_layers.py"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
