"""The methods' DVC stages come from the table of methods: the shipped dvc.yaml / params.yaml
are what factprobe/scaffold/stages.py writes from METHODS, and `factprobe init`'s pipeline has
one stage per method, whichever methods the table holds."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from factprobe.evaluators.methods import METHODS
from factprobe.scaffold import stages
from factprobe.scaffold.render import SOURCES, InitConfig, rendered

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_files_are_what_the_table_writes():
    dvc, params = (ROOT / "dvc.yaml").read_text(), (ROOT / "params.yaml").read_text()
    assert stages.with_stages(dvc) == dvc
    assert stages.with_params(params) == params
    assert stages.main(["--root", str(ROOT), "--check"]) == 0


@pytest.mark.parametrize("name", list(METHODS))
def test_shipped_pipeline_has_the_method(name):
    m = METHODS[name]
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][f"eval-{name}"]
    key = stages.key(name)
    assert f"factprobe eval {name} --quiet" in stage["do"]["cmd"]
    assert stage["do"]["params"] == [f"eval.{key}"]
    models = "masked_models" if m.probe.backend == "hf-masked" else "models"
    assert stage["foreach"] == f"${{eval.{models}}}"
    section = yaml.safe_load((ROOT / "params.yaml").read_text())["eval"][key]
    assert section["dataset"] == f"sample-{m.probe.pipeline.dataset}"


@pytest.mark.parametrize("source", SOURCES)
def test_init_pipeline_has_every_method(source):
    files = rendered(InitConfig(dir="x", source=source, path="kg.ttl", endpoint="http://e/q"))
    dvc, params = yaml.safe_load(files["dvc.yaml"]), yaml.safe_load(files["params.yaml"])
    evals = sorted(s for s in dvc["stages"] if s.startswith("eval-"))
    assert evals == sorted(f"eval-{n}" for n in METHODS)
    for name in METHODS:
        assert stages.key(name) in params["eval"]
        assert "{{" not in params["eval"][stages.key(name)]["args"]
        cmd = dvc["stages"][f"eval-{name}"]["do"]["cmd"]
        assert cmd.startswith(f"factprobe eval {name} --quiet --dataset data/datasets/")
        assert cmd.endswith(f"${{eval.{stages.key(name)}.args}}")   # see dvc.yaml.in's note


def test_a_stale_file_is_rewritten(tmp_path):
    dvc = (ROOT / "dvc.yaml").read_text()
    params = (ROOT / "params.yaml").read_text()
    (tmp_path / "dvc.yaml").write_text(dvc.replace("eval-monitor:", "eval-monitor-old:"))
    (tmp_path / "params.yaml").write_text(params)
    assert stages.main(["--root", str(tmp_path), "--check"]) == 1
    assert stages.main(["--root", str(tmp_path)]) == 0
    assert (tmp_path / "dvc.yaml").read_text() == dvc
