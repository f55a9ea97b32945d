"""``factprobe report`` shows each validity block's subject-blind null and flags a null AUROC
farther than 0.1 from 0.5 (answer familiarity), on synthesized run folders whose null AUROC is
worked out by hand."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tests.evaluators import synth
from tests.evaluators.report.test_report_cli import cli

FLAG = "favours planted facts: without the subject it still scores the taught"


def _world(tmp_path, tied_held_out: int):
    """A ZP-LKE run with a null pass. The null's gold log-prob: 0 (others -50, gold probability
    1.0) for every planted fact and for ``tied_held_out`` of the 10 held-out facts, -50 (others
    0, gold probability ~e^-50) for the rest. AUROC = P(planted > held-out) with ties one half:
    1 - tied_held_out x 10 x 0.5 / (10 x 10) = 1 - tied_held_out / 20."""
    rng = np.random.default_rng(11)
    own = synth.mc_outputs(rng, relations=4, seeds=(0,), ns=(3,))
    facts = sorted(own["fact_id"].unique())
    planted = {"planted": facts[:10], "held_out": facts[10:20]}
    high = set(planted["planted"]) | set(planted["held_out"][:tied_held_out])
    blind = own.copy()
    mc = blind["stage"] == "mc"
    up = blind["fact_id"].isin(high)
    blind.loc[mc, "logprob"] = np.where(blind.loc[mc, "is_gold"] == up[mc], 0.0, -50.0)
    blind.loc[mc, "token_logprobs"] = pd.Series([[v] for v in blind.loc[mc, "logprob"]],
                                                index=blind.index[mc])
    blind.loc[~mc, "text"] = " something else"
    blind["prompt_id"] = "blind-" + blind["prompt_id"]
    table = pd.concat([own.assign(subject_blind=False), blind.assign(subject_blind=True)],
                      ignore_index=True)
    model = synth.model_dir(tmp_path, planted)
    synth.write_run(tmp_path / "runs" / "null", "zp-lke", table, dataset="mc", model_dir=model)
    synth.write_run(tmp_path / "runs-plain" / "plain", "zp-lke", own, dataset="mc",
                    model_dir=model)
    return tmp_path


def _report(root, results: str):
    proc = cli("report", "--results", str(root / results), "--out", str(root / f"rep-{results}"),
               "--no-plots")
    assert proc.returncode == 0, proc.stderr
    out = root / f"rep-{results}"
    metrics = json.loads(next((out / "runs").rglob("metrics.json")).read_text())
    return metrics, (out / "report.md").read_text(), out


def test_a_null_auroc_of_0_9_is_flagged(tmp_path):
    root = _world(tmp_path, tied_held_out=2)              # 1 - 2 / 20 = 0.9
    metrics, text, out = _report(root, "runs")
    null = metrics["validity"]["subject_blind"]
    assert null["auroc"]["value"] == 0.9
    assert null["planted"]["value"] == 1.0 and null["held_out"]["value"] == 0.2
    assert FLAG in text
    flagged = [ln for ln in text.splitlines() if FLAG in ln]
    assert len(flagged) == 1 and "zp-lke on mc" in flagged[0] and "validity**" in flagged[0]
    assert "0.900" in flagged[0]
    # the response null: every null answer is wrong, a constant score: undefined (ties alone
    # would give 0.5), with the reason, never 0.5
    resp = metrics["validity_response"]["subject_blind"]
    assert resp["auroc"]["value"] is None and resp["reason"].startswith("undefined")
    table = pd.read_csv(out / "tables" / "validity.csv")
    assert table["familiarity"].tolist() == [True, False]
    assert table["null_auroc_value"].tolist()[0] == 0.9
    assert pd.isna(table["null_auroc_value"].tolist()[1])
    # the leaderboard's DVC metrics carry the null
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["mc"]["zp-lke"]["null"]["subject_blind_auroc"]["value"] == 0.9
    # the run's own validity is that of the same run without a null pass
    plain, plain_text, _ = _report(root, "runs-plain")
    for block in ("validity", "validity_response"):
        got = dict(metrics[block])
        got.pop("subject_blind")
        assert got == plain[block]
    assert FLAG not in plain_text and "no null pass" in plain_text


def test_a_null_auroc_of_0_5_is_not_flagged(tmp_path):
    root = _world(tmp_path, tied_held_out=10)             # 1 - 10 / 20 = 0.5
    metrics, text, _ = _report(root, "runs")
    assert metrics["validity"]["subject_blind"]["auroc"]["value"] == 0.5
    assert FLAG not in text
    assert "subject-blind AUROC" in text
