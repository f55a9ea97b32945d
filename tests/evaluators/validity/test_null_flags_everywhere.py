"""Every null of a validity block is flagged where it is kept (issue #28: "every validity block
in metrics.json, report.md and index.html carries the subject-blind, the subject-only and the
link-shuffle nulls, each flagged when off"): metrics.json says which way an off null leans
for the subject-blind and link-shuffle nulls too, as it does for the subject-only check, and
report.md, like index.html, keeps one null's reason for being missing when another null of the
same block is flagged."""
from __future__ import annotations

import pandas as pd

from factprobe.evaluators.metrics.validity import null_of
from factprobe.evaluators.report import tables
from factprobe.evaluators.report.markdown import familiarity_flags
from tests.evaluators.validity.test_link_shuffle import _report as shuffle_report
from tests.evaluators.validity.test_link_shuffle import familiar, link
from tests.evaluators.validity.test_null_flags import _report, _zp_world


def test_metrics_json_flags_a_subject_blind_null_and_its_direction(tmp_path):
    # the null favours held-out facts: 2 / 20 = 0.1 (test_null_flags' hand-worked world)
    metrics, _, _ = _report(_zp_world(tmp_path / "low", high_planted=2))
    assert metrics["validity"]["subject_blind"]["leans"] == "held_out"
    # 10 of 10 planted facts high as well: every pair ties, 0.5, not off
    metrics, _, _ = _report(_zp_world(tmp_path / "tie", high_planted=10))
    assert metrics["validity"]["subject_blind"]["auroc"]["value"] == 0.5
    assert metrics["validity"]["subject_blind"]["leans"] is None


def test_metrics_json_flags_a_link_shuffle_null_only_towards_planted_facts(tmp_path):
    # a probe that reads the link: shuffled AUROC 0.0, what the link gives, never flagged
    v, _, _ = shuffle_report(tmp_path, "link", link)
    assert v["link_shuffle"]["auroc"]["value"] == 0.0 and v["link_shuffle"]["leans"] is None
    # one that reads familiarity: 1.0, flagged as the report flags it
    v, _, _ = shuffle_report(tmp_path, "fam", familiar)
    assert v["link_shuffle"]["auroc"]["value"] == 1.0
    assert v["link_shuffle"]["leans"] == "planted"


def test_an_undefined_null_has_no_direction():
    assert null_of(None, "not computed for BELIEF")["leans"] is None


def _row(**subject_only) -> pd.DataFrame:
    """One validity-table row of a BELIEF-like block: no link-shuffle null (with its
    reason), a subject-blind null at 0.5, and the given subject-only AUROCs."""
    half = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 10}
    blind = null_of({"planted": half, "held_out": half, "auroc": half})
    check = {name: {"auroc": auroc} for name, auroc in subject_only.items()}
    row = {"dataset": "mp", "method": "belief", "model": "m", "setting": "",
           "estimator": "validity", "auroc_value": 0.95, "held_out_chance": None,
           "guessable": None, **tables._null_columns(blind),
           **tables._shuffle_columns(null_of(None, "not computed for BELIEF: no donor")),
           **tables._subject_only_columns(check)}
    return pd.DataFrame([row])


def test_report_md_keeps_the_missing_link_shuffle_when_the_subject_only_check_is_flagged():
    off = {"value": 0.95, "ci_low": 0.9, "ci_high": 1.0}
    fine = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}
    flagged = familiarity_flags(_row(period_after_subject=off, subject_likelihood=fine))
    quiet = familiarity_flags(_row(period_after_subject=fine, subject_likelihood=fine))
    # before, the reason line hung on the subject-only check's flag and was lost with it
    for text in (flagged, quiet):
        assert "no link-shuffle null (not computed for BELIEF: no donor)." in text, text
    assert "subject-only check" in flagged and "subject-only check" not in quiet
    # the order index.html's overview.js writes: subject-only, then link-shuffle
    assert flagged.index("subject-only check") < flagged.index("no link-shuffle null")
