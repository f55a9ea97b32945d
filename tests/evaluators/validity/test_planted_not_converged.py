"""A planted model that did not learn its planted facts (planted.json ``converged: false``, as
'factprobe plant' writes when it stops at --max-epochs) is carried into every run that uses it
(run.json, metrics.json, a warning on stderr) and shown at the top of report.md and index.html
and beside the validity table, with what to do (issue #28: a user's graph planted to 0.708 at
its 40-epoch cap, and the report never said so)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pyarrow as pa
import pytest

from factprobe.core.tables import base_manifest, write_dataset
from tests.evaluators.cli.test_eval_cli import ROOT, run
from tests.inprocess import factprobe_cli


def loud(*args: str) -> subprocess.CompletedProcess:
    """The command without --quiet: the warning is on stderr."""
    return factprobe_cli([*args], cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def half_taught(tmp_path_factory, tiny_causal_dir):
    from tests.probes.engine.test_runner import facts_many
    root = tmp_path_factory.mktemp("half-taught")
    facts = facts_many()
    write_dataset(root / "mc", {"facts": pa.Table.from_pandas(facts, preserve_index=False)},
                  base_manifest("mc", "mc", {}, {}, {}))
    test = sorted(facts.loc[facts["split"] == "test", "fact_id"])
    planted = {"planted": sorted(facts.loc[facts["split"] == "train", "fact_id"]) + test[:3],
               "held_out": test[3:], "converged": False, "epochs_run": 40,
               "planted_accuracy": [0.41, 0.69, 0.708],
               "config": {"target_accuracy": 0.9, "max_epochs": 40}}
    for name, conv in (("model", False), ("model-ok", True)):
        shutil.copytree(tiny_causal_dir, root / name)
        (root / name / "planted.json").write_text(
            json.dumps(planted | {"converged": conv}), encoding="utf-8")
    procs = {}
    for name, model in (("run", "model"), ("run-ok", "model-ok")):
        procs[name] = loud("eval", "zp-lke", "--dataset", str(root / "mc"), "--model",
                          str(root / model), "--examples", "3", "--seeds", "0",
                          "--response-tokens", "2", "--no-subject-blind",
                          "--out", str(root / "results" / name))
        assert procs[name].returncode == 0, procs[name].stderr
    return root, procs


def test_run_json_and_metrics_json_carry_it(half_taught):
    root, procs = half_taught
    for where in ("run.json", "metrics.json"):
        got = json.loads((root / "results" / "run" / where).read_text())["planted_model"]
        assert got["converged"] is False and got["planted_accuracy"] == 0.708
        assert got["target_accuracy"] == 0.9 and got["epochs_run"] == 40
        assert "--max-epochs" in got["what_to_do"]
        ok = json.loads((root / "results" / "run-ok" / where).read_text())["planted_model"]
        assert ok["converged"] is True and ok["what_to_do"] == ""
    assert "did not learn its planted facts" in procs["run"].stderr
    assert "0.708 < target 0.9 after 40 epochs" in procs["run"].stderr
    assert "did not learn" not in procs["run-ok"].stderr


def test_the_report_says_it_at_the_top_and_beside_validity(half_taught, tmp_path):
    root, _ = half_taught
    proc = run("report", "--results", str(root / "results"), "--out", str(tmp_path / "rep"),
               "--no-plots", "--html", "--bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "rep" / "report.md").read_text()
    warn = [i for i, ln in enumerate(text.splitlines()) if "did not learn its planted" in ln]
    runs_at = text.splitlines().index("## Runs")
    val_at = text.splitlines().index("## Estimator validity (planted-knowledge model)")
    assert len(warn) == 2 and warn[0] < runs_at and val_at < warn[1]
    line = text.splitlines()[warn[0]]
    assert str(root / "model") in line and str(root / "model-ok") not in line
    assert "0.708 < target 0.9" in line and "--max-epochs" in line
    page = "".join(p.read_text() for p in (tmp_path / "rep").rglob("*")
                   if p.suffix in (".html", ".js"))
    assert "did not learn its planted facts" in page and "planted-warning" in page
