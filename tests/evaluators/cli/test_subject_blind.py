"""``factprobe eval`` of a planted model runs the subject-blind null (docs/metrics/validity.md)
through the real command line: its prompts ask about the made-up name and never about a real
test subject, and the probe's own metrics are those of a run without the null, byte for
byte."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from factprobe.core.tables import base_manifest, dumps_json, write_dataset
from factprobe.probes.subject_blind import COLUMN, NULL_SUBJECT
from tests.evaluators import independent as ind
from tests.evaluators.cli.test_eval_cli import run


@pytest.fixture(scope="module")
def planted_world(tmp_path_factory, tiny_causal_dir):
    """The tiny model with a planted.json (as 'factprobe plant' writes: train facts and half of
    the test facts planted, the other half held out), and an mc dataset it was 'planted' on."""
    import pyarrow as pa

    from tests.probes.engine.test_runner import facts_many
    root = tmp_path_factory.mktemp("planted-null")
    facts = facts_many()
    write_dataset(root / "mc", {"facts": pa.Table.from_pandas(facts, preserve_index=False)},
                  base_manifest("mc", "mc", {}, {}, {}))
    model = root / "model"
    shutil.copytree(tiny_causal_dir, model)
    test = sorted(facts.loc[facts["split"] == "test", "fact_id"])      # f4, t0 ... t5
    planted = {"planted": sorted(facts.loc[facts["split"] == "train", "fact_id"]) + test[:3],
               "held_out": test[3:]}
    (model / "planted.json").write_text(json.dumps(planted), encoding="utf-8")
    args = ("eval", "zp-lke", "--dataset", str(root / "mc"), "--model", str(model),
            "--examples", "3", "--seeds", "0,1", "--response-tokens", "2")
    for name, extra in (("null", ()), ("plain", ("--no-subject-blind",))):
        proc = run(*args, "--out", str(root / name), *extra)
        assert proc.returncode == 0, proc.stderr
    return {"root": root, "facts": facts, "planted": planted}


def test_the_null_asks_about_the_made_up_name_only(planted_world):
    root, facts = planted_world["root"], planted_world["facts"]
    outputs = pd.read_parquet(root / "null" / "outputs.parquet")
    prompts = pd.read_parquet(root / "null" / "prompts.parquet").set_index("prompt_id")["text"]
    blind = outputs[outputs[COLUMN]]
    own = outputs[~outputs[COLUMN]]
    # the subject-only check (probes/subject_only.py) is part of the probe's own pass only
    own = own[own["stage"] != "subject_only"]
    assert len(blind) == len(own) > 0
    test_subjects = set(facts.loc[facts["split"] == "test", "subject"])
    assert test_subjects == {"Peter Grunberg"} | {f"Person {k}" for k in range(6)}
    for pid in set(blind["prompt_id"]):
        text = prompts[pid]
        assert text.endswith(NULL_SUBJECT), text               # the question is about it
        assert not any(s in text for s in test_subjects), text
    # and the probe's own prompts ask about the real subjects (so the check above can fail)
    own_endings = {prompts[p].rsplit(", ", 1)[-1] for p in set(own["prompt_id"])}
    assert own_endings == test_subjects
    run_json = json.loads((root / "null" / "run.json").read_text())
    assert {"blind_mc", "blind_response"} <= set(run_json["timings_s"])
    assert run_json["plan"]["subject_blind"]["facts"] == 7


def test_own_metrics_are_those_of_a_run_without_the_null(planted_world):
    root = planted_world["root"]
    with_null = json.loads((root / "null" / "metrics.json").read_text())
    plain_bytes = (root / "plain" / "metrics.json").read_bytes()
    nulls = {k: with_null[k].pop("subject_blind") for k in ("validity", "validity_response")}
    assert dumps_json(with_null).encode() == plain_bytes
    # the null is the validity block of the null pass's rows, computed independently
    outputs = pd.read_parquet(root / "null" / "outputs.parquet")
    blind = outputs[outputs[COLUMN]]
    want = ind.zp_lke(blind, planted_world["planted"])["validity"]
    got = nulls["validity"]
    assert abs(got["auroc"]["value"] - want["auroc"]) <= 1e-4
    assert abs(got["planted"]["value"] - want["planted"]) <= 1e-4
    assert abs(got["held_out"]["value"] - want["held_out"]) <= 1e-4
    assert (got["planted"]["n"], got["held_out"]["n"]) == (3, 4) == (want["n_planted"],
                                                                     want["n_held_out"])
    # and by hand: every null question is the same (the made-up name after the same three
    # train examples, facts_many's choices 1939 / 1901 / 1925 for every test fact), asked once
    # per chunk, so every fact has one score: all 3 x 4 pairs tie, AUROC = 12 x 0.5 / 12 = 0.5
    assert got["auroc"] == {"value": 0.5, "ci_low": 0.5, "ci_high": 0.5}
    assert "subject_blind" not in json.loads(plain_bytes)["validity"]
    # the probe's own rows are the plain run's rows
    own = pd.read_parquet(root / "null" / "outputs.parquet")
    own = own[~own[COLUMN]].drop(columns=COLUMN).reset_index(drop=True)
    pd.testing.assert_frame_equal(own, pd.read_parquet(root / "plain" / "outputs.parquet"))


def test_the_report_recomputes_the_null(planted_world, tmp_path):
    root = planted_world["root"]
    proc = run("report", "--results", str(root / "null"), "--out", str(tmp_path / "rep"),
               "--no-plots")
    assert proc.returncode == 0, proc.stderr
    again = next((tmp_path / "rep" / "runs").rglob("metrics.json"))
    assert again.read_bytes() == (root / "null" / "metrics.json").read_bytes()
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "subject-blind AUROC" in text and "Answer familiarity" not in text


def test_help_says_what_the_null_costs():
    proc = run("eval", "zp-lke", "--help")
    assert "--no-subject-blind" in proc.stdout and "second pass" in proc.stdout
