"""`factprobe eval` and `factprobe plant` through the real command line."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from factprobe.core.tables import base_manifest, write_dataset
from factprobe.probes.methods.templates_in import load_templates
from tests.evaluators.cli.test_cli import assert_user_error
from tests.inprocess import factprobe_cli

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str) -> subprocess.CompletedProcess:
    return factprobe_cli([*args, "--quiet"], cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def mc_dir(tmp_path_factory):
    import pyarrow as pa

    from tests.probes.engine.test_runner import facts_many
    folder = tmp_path_factory.mktemp("mc") / "mc"
    write_dataset(folder, {"facts": pa.Table.from_pandas(facts_many(), preserve_index=False)},
                  base_manifest("mc", "mc", {}, {}, {}))
    return folder


def test_lpaqa_templates_heaviest_first(tmp_path):
    f = tmp_path / "P19.jsonl"
    f.write_text('{"template": "[X] was born in [Y] .", "weight": 0.2}\n'
                 '{"template": "[X] is a native of [Y] .", "weight": 0.7}\n')
    got = load_templates(str(f))
    assert [t.template for t in got] == ["[X] is a native of [Y] .", "[X] was born in [Y] ."]
    assert got[0].relation_id == "P19" and got[0].origin == "mined"
    f.write_text("not json\n")
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="P19.jsonl:1"):
        load_templates(str(f))


def test_eval_writes_a_run_folder(mc_dir, tiny_causal_dir, tmp_path):
    proc = run("eval", "zp-lke", "--dataset", str(mc_dir), "--model", str(tiny_causal_dir),
               "--out", str(tmp_path / "r"), "--examples", "2,3", "--response-tokens", "2")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert set(metrics["mc_accuracy_by_n"]) == {"2", "3"}
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["method_config"]["n_examples"] == [2, 3]
    assert info["model"]["parameters"] > 0 and info["versions"]["torch"]


@pytest.mark.parametrize("args,needles", [
    (["eval", "belief", "--model", "{causal}"], ["lacks templates.parquet"]),
    (["eval", "zp-lke", "--examples", "3", "--model", "{masked}"], ["not a causal"]),
    (["eval", "zp-lke", "--examples", "3", "--model", "{missing}"], ["cannot load model"]),
    (["eval", "zp-lke", "--model", "{causal}", "--relations", "nope"], ["nope", "born"]),
    (["eval", "zp-lke", "--model", "{causal}", "--relations", " , "], ["--relations", "empty"]),
    (["eval", "zp-lke", "--model", "{causal}", "--limit", "-1"], ["--limit", "must be >= 0"]),
    (["eval", "monitor", "--model", "{causal}"], ["lacks templates.parquet"]),
])
def test_bad_input(mc_dir, tiny_causal_dir, tiny_masked_dir, tmp_path, args, needles):
    subst = {"{causal}": str(tiny_causal_dir), "{masked}": str(tiny_masked_dir),
             "{missing}": str(tmp_path / "no-model")}
    args = [subst.get(a, a) for a in args]
    proc = run(*args, "--dataset", str(mc_dir), "--out", str(tmp_path / "out"))
    assert_user_error(proc, *needles)
    assert not (tmp_path / "out").exists()


def test_belief_refuses_a_causal_model(tiny_causal_dir, tmp_path):
    import pyarrow as pa

    from factprobe.builders.templates.files import TEMPLATES_SCHEMA
    from tests.probes.methods.test_golden_prompts import mp_facts
    folder = tmp_path / "mp"
    templates = pa.table({"template_id": ["cap/m1"], "relation_id": ["cap"],
                          "template": ["The capital of [X] is [Y]."], "style": ["statement"],
                          "origin": ["manual"], "parent_id": [""]}, schema=TEMPLATES_SCHEMA)
    write_dataset(folder, {"facts": pa.Table.from_pandas(mp_facts(), preserve_index=False),
                           "templates": templates}, base_manifest("mp", "multiprompt", {}, {}, {}))
    proc = run("eval", "belief", "--dataset", str(folder), "--model", str(tiny_causal_dir),
               "--out", str(tmp_path / "o"))
    assert_user_error(proc, "not a masked")


@pytest.mark.slow
@pytest.mark.parametrize("masked", [False, True])
def test_plant_writes_a_model_and_its_halves(mc_dir, tmp_path, masked):
    out = tmp_path / "planted"
    args = ["plant", "--dataset", str(mc_dir), "--out", str(out), "--epochs", "1", "--layers",
            "1", "--width", "32", "--heads", "2", "--vocab-size", "300", "--templates", ""]
    proc = run(*args, *(["--masked"] if masked else []))
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "planted.json").read_text())
    import pandas as pd
    facts = pd.read_parquet(mc_dir / "facts.parquet")
    test_ids = set(facts.loc[facts["split"] == "test", "fact_id"])
    planted, held = set(meta["planted"]), set(meta["held_out"])
    assert held and held <= test_ids and not planted & held
    assert planted | held == set(facts["fact_id"])
    assert meta["config"]["epochs"] == 1 and meta["config"]["masked"] is masked
    # one epoch of a 1-layer model learns nothing: planted.json says so (no warning: --epochs
    # asked for exactly one; the stopping rule's cap warns, tests/probes/planting)
    assert meta["epochs_run"] == 1 and meta["converged"] is False
    assert len(meta["planted_accuracy"]) == 1
    assert set(meta["frames"]["partial_facts"]) <= planted - (set(facts["fact_id"]) - test_ids)
    assert [p.name for p in tmp_path.iterdir()] == ["planted"]     # no temporary folder left
    from factprobe.probes.backends import BackendConfig
    from factprobe.probes.backends.loading import load_model
    loaded = load_model(BackendConfig(str(out)), masked=masked)
    assert loaded is not None


def test_plant_refuses_templates_that_miss_a_relation(mc_dir, tmp_path):
    # a templates folder with nothing for the dataset's relations would teach no template
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "rel_other.yaml").write_text(
        'relation: "rel:other"\nlabel: "other"\ntemplates:\n'
        '  - {id: m1, style: statement, text: "[X] is other than [Y]."}\n', encoding="utf-8")
    proc = run("plant", "--dataset", str(mc_dir), "--out", str(tmp_path / "m"),
               "--templates", str(folder))
    assert_user_error(proc, "no statement or question template")
    assert not (tmp_path / "m").exists()


def test_plant_refuses_a_missing_dataset(tmp_path):
    proc = run("plant", "--dataset", str(tmp_path / "nope"), "--out", str(tmp_path / "m"))
    assert_user_error(proc, "not found")
    assert not (tmp_path / "m").exists()
