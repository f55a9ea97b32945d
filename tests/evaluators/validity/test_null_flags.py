"""The validity nulls' flags rest on intervals, say which half the null favours, and an empty
null (MONITOR without the subject: no anchor equals the gold, every score 0) is undefined with
its reason, never 0.5 (issue #28). Values worked out by hand."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics.validity import familiar, null_leans
from tests.evaluators import synth
from tests.evaluators.report.test_report_cli import cli


def test_a_null_whose_interval_holds_0_5_is_not_flagged():
    # BELIEF's null on the 36 / 23 facts: 0.360 [0.212, 0.505] was flagged on its
    # point estimate; its interval holds 0.5
    assert null_leans({"value": 0.360, "ci_low": 0.212, "ci_high": 0.505}) is None
    assert not familiar({"value": 0.360, "ci_low": 0.212, "ci_high": 0.505})
    # the sample's old ZP-LKE null 0.778 [0.733, 0.821]: off, towards planted facts
    assert null_leans({"value": 0.778, "ci_low": 0.733, "ci_high": 0.821}) == "planted"
    assert null_leans({"value": 0.30, "ci_low": 0.18, "ci_high": 0.46}) == "held_out"
    # inside 0.4-0.6 is never flagged, however narrow the interval
    assert null_leans({"value": 0.58, "ci_low": 0.55, "ci_high": 0.61}) is None


def _zp_world(tmp_path, high_planted: int):
    """A ZP-LKE run whose null gives gold probability ~1 to every held-out fact and to
    ``high_planted`` of the 10 planted ones, ~e^-50 to the rest. AUROC = P(planted >
    held-out), ties one half: high_planted x 10 x 0.5 / 100 = high_planted / 20."""
    rng = np.random.default_rng(11)
    own = synth.mc_outputs(rng, relations=4, seeds=(0,), ns=(3,))
    facts = sorted(own["fact_id"].unique())
    planted = {"planted": facts[:10], "held_out": facts[10:20]}
    high = set(planted["held_out"]) | set(planted["planted"][:high_planted])
    blind = own.copy()
    mc = blind["stage"] == "mc"
    up = blind["fact_id"].isin(high)
    blind.loc[mc, "logprob"] = np.where(blind.loc[mc, "is_gold"] == up[mc], 0.0, -50.0)
    blind.loc[mc, "token_logprobs"] = pd.Series([[v] for v in blind.loc[mc, "logprob"]],
                                                index=blind.index[mc])
    blind["prompt_id"] = "blind-" + blind["prompt_id"]
    table = pd.concat([own.assign(subject_blind=False), blind.assign(subject_blind=True)],
                      ignore_index=True)
    model = synth.model_dir(tmp_path, planted)
    synth.write_run(tmp_path / "runs" / "null", "zp-lke", table, dataset="mc", model_dir=model)
    return tmp_path


def _report(root):
    proc = cli("report", "--results", str(root / "runs"), "--out", str(root / "rep"),
               "--no-plots", "--html")
    assert proc.returncode == 0, proc.stderr
    out = root / "rep"
    metrics = json.loads(next((out / "runs").rglob("metrics.json")).read_text())
    return metrics, (out / "report.md").read_text(), out


def test_a_null_below_0_5_is_flagged_as_favouring_held_out_facts(tmp_path):
    metrics, text, out = _report(_zp_world(tmp_path, high_planted=2))   # 2 / 20 = 0.1
    null = metrics["validity"]["subject_blind"]["auroc"]
    assert null["value"] == 0.1 and null["ci_high"] < 0.5
    flagged = [ln for ln in text.splitlines() if "subject-blind null AUROC 0.100" in ln]
    assert len(flagged) == 1
    assert "favours held-out facts" in flagged[0] and "favours planted" not in flagged[0]
    table = pd.read_csv(out / "tables" / "validity.csv")
    assert table["null_leans"].tolist()[0] == "held_out"
    # the page says the same words
    page = "".join(p.read_text() for p in out.rglob("*") if p.suffix in (".js", ".html"))
    assert "favours held-out facts" in page


def _monitor_world(tmp_path):
    rng = np.random.default_rng(5)
    own = synth.monitor_outputs(rng, relations=2, unmatched=0)
    facts = sorted(own["fact_id"].unique())
    planted = {"planted": facts[0::2], "held_out": facts[1::2]}
    # without the subject no anchor is the gold: anchor rows only, each " Rome"
    blind = own[own["stage"].isin(["anchor", "frames"])].copy()
    blind.loc[blind["stage"] == "anchor", "text"] = " Rome"
    blind.loc[blind["stage"] == "frames", "text"] = " Lima"
    blind["prompt_id"] = "blind-" + blind["prompt_id"]
    table = pd.concat([own.assign(subject_blind=False), blind.assign(subject_blind=True)],
                      ignore_index=True)
    model = synth.model_dir(tmp_path, planted)
    synth.write_run(tmp_path / "runs" / "m", "monitor", table, dataset="fktc", model_dir=model)
    return tmp_path


def test_monitor_s_empty_null_is_undefined_with_its_reason_never_0_5(tmp_path):
    metrics, text, out = _report(_monitor_world(tmp_path))
    null = metrics["validity"]["subject_blind"]
    assert metrics["validity"]["auroc"]["value"] is not None
    assert null["auroc"] == {"value": None, "ci_low": None, "ci_high": None}
    assert null["reason"].startswith("undefined: the subject-blind pass named no planted or")
    assert "every score is 0" in null["reason"]
    assert null["planted"]["value"] == 0.0 and null["held_out"]["value"] == 0.0
    line = [ln for ln in text.splitlines() if "monitor on fktc" in ln and "undefined" in ln]
    assert line and "0.500" not in line[0]
    table = pd.read_csv(out / "tables" / "validity.csv")
    assert pd.isna(table.loc[table["estimator"] == "validity", "null_auroc_value"]).all()
