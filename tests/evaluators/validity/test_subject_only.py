"""The subject-only check (probes/subject_only.py): every eval of a planted model also scores
log P("." | subject) and the subject's own likelihood for each planted and held-out fact, and
every validity block carries their AUROCs between the halves, flagged when off (issue #28)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from factprobe.core.tables import base_manifest, write_dataset
from factprobe.probes.subject_only import STAGE, subject_scores
from tests.evaluators.cli.test_eval_cli import run


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_causal_dir):
    from tests.probes.engine.test_runner import facts_many
    root = tmp_path_factory.mktemp("subject-only")
    facts = facts_many()
    write_dataset(root / "mc", {"facts": pa.Table.from_pandas(facts, preserve_index=False)},
                  base_manifest("mc", "mc", {}, {}, {}))
    test = sorted(facts.loc[facts["split"] == "test", "fact_id"])
    planted = {"planted": test[:3], "held_out": test[3:]}
    shutil.copytree(tiny_causal_dir, root / "model")
    (root / "model" / "planted.json").write_text(json.dumps(planted), encoding="utf-8")
    proc = run("eval", "zp-lke", "--dataset", str(root / "mc"), "--model", str(root / "model"),
               "--examples", "3", "--response-tokens", "0", "--no-subject-blind",
               "--out", str(root / "run"))
    assert proc.returncode == 0, proc.stderr
    return root, facts, planted


def _auroc(pos, neg) -> float:
    """P(pos > neg), ties one half, by counting pairs."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_the_run_asks_the_subject_alone(world):
    root, facts, planted = world
    out = pd.read_parquet(root / "run" / "outputs.parquet")
    prompts = pd.read_parquet(root / "run" / "prompts.parquet").set_index("prompt_id")["text"]
    rows = out[out["stage"] == STAGE]
    ids = set(planted["planted"]) | set(planted["held_out"])
    assert set(rows["fact_id"]) == ids and len(rows) == 2 * len(ids)
    subject = dict(zip(facts["fact_id"], facts["subject"]))
    for r in rows.itertuples():
        text = prompts[r.prompt_id]
        # log P("." | subject) asks after the subject alone; the likelihood has no context
        assert text == (subject[r.fact_id] if r.subject_score == "period_after_subject"
                        else "")
    run_json = json.loads((root / "run" / "run.json").read_text())
    assert run_json["plan"][STAGE] == {"facts": len(ids), "requests": 2 * len(ids)}


def test_every_validity_block_carries_the_check(world):
    root, _, planted = world
    m = json.loads((root / "run" / "metrics.json").read_text())
    check = m["validity"]["subject_only"]
    scores = subject_scores(pd.read_parquet(root / "run" / "outputs.parquet"))
    for name in ("period_after_subject", "subject_likelihood"):
        s = scores.set_index("fact_id")[name]
        want = _auroc(s[planted["planted"]].to_numpy(), s[planted["held_out"]].to_numpy())
        assert abs(check[name]["auroc"]["value"] - round(want, 4)) < 1e-9
        assert check[name]["auroc"]["ci_low"] <= want <= check[name]["auroc"]["ci_high"]
    # the probe's own numbers never see the subject-only rows: 7 test facts, 7 questions
    assert m["facts"] == 7 and m["questions"] == 7


def test_the_report_shows_it(world, tmp_path):
    root, _, _ = world
    proc = run("report", "--results", str(root / "run"), "--out", str(tmp_path / "rep"),
               "--no-plots", "--bootstrap", "50", "--html")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "subject-only AUROC ('.' / own)" in text
    table = pd.read_csv(tmp_path / "rep" / "tables" / "validity.csv")
    assert not np.isnan(table["period_auroc_value"].iloc[0])
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "period_auroc_value" in page


def test_a_subject_the_model_ends_more_readily_is_flagged(tmp_path):
    from tests.evaluators import synth
    from tests.evaluators.report.test_report_cli import cli
    from tests.evaluators.validity.test_link_shuffle import FACTS, HELD, PLANTED, _run, link
    rows = _run(link)
    extra = []
    for f in FACTS:
        # "." after a planted subject at log-prob -0.1, after a held-out one -3; the
        # subjects' own likelihood the same for all
        for score, lp in (("period_after_subject", [-0.1 if f in PLANTED else -3.0]),
                          ("subject_likelihood", [-2.0, -2.0])):
            extra.append({"fact_id": f, "relation_id": "r", "stage": STAGE, "kind": "score",
                          "prompt_id": f"s-{f}-{score}", "subject_score": score,
                          "option": 0.0, "token_logprobs": lp, "logprob": sum(lp),
                          "n_tokens": len(lp)})
    rows = pd.concat([rows, pd.DataFrame(extra)], ignore_index=True)
    model = synth.model_dir(tmp_path, {"planted": PLANTED, "held_out": HELD})
    synth.write_run(tmp_path / "runs" / "z", "zp-lke", rows, dataset="mc", model_dir=model)
    proc = cli("report", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"),
               "--no-plots", "--bootstrap", "200")
    assert proc.returncode == 0, proc.stderr
    m = json.loads(next((tmp_path / "rep" / "runs").rglob("metrics.json")).read_text())
    check = m["validity"]["subject_only"]
    assert check["period_after_subject"]["auroc"]["value"] == 1.0          # 16 of 16 pairs
    assert check["period_after_subject"]["leans"] == "planted"
    assert check["subject_likelihood"]["auroc"]["value"] == 0.5            # all tie
    assert check["subject_likelihood"]["leans"] is None
    text = (tmp_path / "rep" / "report.md").read_text()
    line = [ln for ln in text.splitlines() if "subject-only check" in ln]
    assert len(line) == 1 and 'log P(".\" | subject) (AUROC 1.000) favours planted' in line[0]
    assert "own likelihood" not in line[0]
