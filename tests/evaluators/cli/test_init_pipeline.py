"""`factprobe init` end to end, as a new user: a fresh git + DVC repository, a graph factprobe has
never seen (48 facts), templates written as docs/own-graph.md says, and no edit to the generated
files: `dvc repro`, `dvc exp run --set-param`, `dvc metrics show`, `dvc plots show` (slow: the
whole pipeline, with the planted models init sized to the graph)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from factprobe.evaluators.methods import METHODS
from tests.evaluators.cli.own_graph import write_graph, write_templates

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


@pytest.mark.slow
def test_own_repository_from_init_to_report(tmp_path):
    if shutil.which("dvc", path=str(BIN)) is None:
        pytest.fail("dvc is missing: pip install 'factprobe[pipeline]'")
    repo = tmp_path / "probe"
    repo.mkdir()
    ok(repo, "git", "init", "-q")
    ok(repo, "dvc", "init", "-q")
    write_graph(repo / "langs.ttl")
    write_templates(repo / "templates")
    ok(repo, sys.executable, "-m", "factprobe.cli", "init", ".", "--path", "langs.ttl",
       "--relations", "ex:capital,ex:language")
    text = (repo / "dvc.yaml").read_text()
    assert "builders" not in text and "llm-cache\n" not in text and "sample-" not in text
    generated = {p: (repo / p).read_bytes() for p in ("dvc.yaml", "params.yaml")}
    assert yaml.safe_load(generated["params.yaml"])["mc"]["choices"] == 8   # sized to the graph

    out = ok(repo, "dvc", "repro")
    ran = {line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage")}
    assert {"facts", "aliases", "mc", "templates", "multiprompt", "fktc", "plant",
            "plant-masked", "report", *EVAL_STAGES} <= ran
    assert not any(s.startswith("nobel") for s in ran)           # off until params ask for it
    mc = json.loads((repo / "data/datasets/langs-mc/dataset.json").read_text())["counts"]
    assert set(mc["per_relation"]) == {"ex:capital", "ex:language"}   # both relations kept
    assert "up to date" in ok(repo, "dvc", "status")
    assert {p: (repo / p).read_bytes() for p in generated} == generated   # nothing edited

    # metrics: a handful of flat scalars, every method there, a short first line
    shown = ok(repo, "dvc", "metrics", "show")
    assert len(shown.splitlines()[0]) < 1000
    head = json.loads((repo / "reports/langs/headline.json").read_text())
    assert 5 <= len(head) <= 20
    for method in PIPELINED:
        assert any(k.startswith(method + "/") for k in head), (method, head)
    assert "zp-lke/planted/mc_accuracy" in shown

    # plots: one chart per figure, every series in it
    plots = json.loads(ok(repo, "dvc", "plots", "show", "--json"))["data"]
    cal = plots["reports/langs/plots/calibration.csv"]
    assert len(cal) == 1 and cal[0]["type"] == "vega"
    series = {row["series"] for row in cal[0]["content"]["data"]["values"]}
    assert series == {"belief: planted-mlm", "belief-icl: planted (zero)",
                      "belief-icl: planted (4-template)"}
    acc = plots["reports/langs/plots/accuracy_vs_examples.csv"][0]["content"]["data"]["values"]
    assert len({row["series"] for row in acc}) >= 2

    # one method's settings rerun that method's evaluation (and the report) only
    ok(repo, "git", "add", "-A")
    ok(repo, "git", "commit", "-qm", "pipeline")
    out = ok(repo, "dvc", "exp", "run", "--set-param", f"eval.belief_icl.args='{ICL.format(3)}'")
    ran = {line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage")}
    assert ran == {"eval-belief-icl@planted", "report"}
    columns = ok(repo, "dvc", "exp", "show", "--csv").splitlines()[0].split(",")
    assert len(columns) < 120
    assert "# Written by factprobe init" in (repo / "params.yaml").read_text().splitlines()[0]
