"""The docs quote the numbers the shipped report holds (issue 29: docs/metrics/validity.md called
the sample's ZP-LKE null 0.778 and flagged while the run gave 0.503), and what they say the
generated params.yaml carries, it carries (docs/own-graph.md's `--answer-suffix`).

Each claim is a pattern in a doc and the metrics.json keys its numbers come from: a number
quoted with k decimals must be the report's value rounded to k. A pattern no longer found fails
too (the sentence changed: point the claim at the new words). When the pipeline's numbers
change, `dvc repro` rewrites reports/sample and this test names every sentence to update.

The numbers the docs must quote are the committed ones (git's HEAD), not the workspace's: a
`dvc repro` on another vendor's CPU plants other bits (docs/planting.md, "Same bytes, which
machine") and rewrites the figures, which tests/docs/test_rebuilt_figures.py then checks
against what the docs claim of them. Outside a git checkout the workspace's files stand in."""
from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
METRICS = "reports/sample/metrics.json"
NUM = r"(\d\.\d+)"

ZP = "sample-mc/zp-lke/planted"
HGP = "sample-mc/prompt/planted"
BELIEF = "sample-multiprompt/belief/planted-mlm"
ICL4 = "sample-multiprompt/belief-icl/planted (4-template)"
MONITOR = "sample-fktc/monitor/planted"


def _row(label: str, run: str) -> tuple[str, list[str]]:
    """A row of planting.md's table of the shipped pipeline: AUROC (low-high) | null (low-high)."""
    return (rf"\| {re.escape(label)} \| {NUM} \({NUM}-{NUM}\) \| {NUM} \({NUM}-{NUM}\) \|",
            [f"{run}/validity_auroc/{k}" for k in ("value", "ci_low", "ci_high")]
            + [f"{run}/subject_blind_auroc/{k}" for k in ("value", "ci_low", "ci_high")])


# (doc, pattern with one group per number, the metrics.json key of each number)
CLAIMS = [
    ("docs/metrics/validity.md",
     rf"ZP-LKE with 50 examples gives validity\s+AUROC {NUM} and a subject-blind null of {NUM} "
     rf"\[{NUM}, {NUM}\]",
     [f"{ZP}/validity_auroc/value", f"{ZP}/subject_blind_auroc/value",
      f"{ZP}/subject_blind_auroc/ci_low", f"{ZP}/subject_blind_auroc/ci_high"]),
    ("docs/planting.md", *_row("ZP-LKE (gold probability)", ZP)),
    ("docs/planting.md", *_row("prompt / HGP (gold probability)", HGP)),
    ("docs/planting.md", *_row("BELIEF (masked model)", BELIEF)),
    ("docs/planting.md", *_row("BELIEF-ICL, 4-template", ICL4)),
    # MONITOR's subject-blind pass names no gold on the shipped model: the null is undefined
    # (docs/metrics/validity.md), and the report has no number for it
    ("docs/planting.md",
     rf"\| MONITOR \(anchor probability\) \| {NUM} \({NUM}-{NUM}\) \| undefined: ",
     [f"{MONITOR}/validity_auroc/{k}" for k in ("value", "ci_low", "ci_high")]),
]
# Claims on numbers the report's metrics.json does not hold (the link-shuffle null, the
# subject-only check): read from the shipped run's own metrics.json, which the same
# `dvc repro` writes. (doc, pattern, run folder under data/results, key of each number)
ZP_RUN = "sample-mc/zp-lke/planted"
_SO = "validity/subject_only"
RUN_CLAIMS = [
    ("docs/metrics/validity.md",
     rf"ZP-LKE on the sample's planted model: {NUM} \[{NUM}, {NUM}\]\)",
     ZP_RUN, [f"validity/link_shuffle/auroc/{k}" for k in ("value", "ci_low", "ci_high")]),
    ("docs/metrics/validity.md",
     rf"P\(\"\.\" \| subject\) AUROC {NUM} \[{NUM}, {NUM}\] and the subject's likelihood {NUM}"
     rf"\s+\[{NUM}, {NUM}\]",
     ZP_RUN, [f"{_SO}/{s}/auroc/{k}" for s in ("period_after_subject", "subject_likelihood")
              for k in ("value", "ci_low", "ci_high")]),
    ("docs/metrics/validity.md",
     rf"its link-shuffle\s+null is {NUM} \[{NUM}, {NUM}\]",
     ZP_RUN, [f"validity/link_shuffle/auroc/{k}" for k in ("value", "ci_low", "ci_high")]),
    ("docs/planting.md",
     rf"`dot` {NUM} \({NUM}-{NUM}\) and `own` {NUM}\s+\({NUM}-{NUM}\), and no",
     ZP_RUN, [f"{_SO}/{s}/auroc/{k}" for s in ("period_after_subject", "subject_likelihood")
              for k in ("value", "ci_low", "ci_high")]),
]


@functools.cache          # read once a session: every parametrised case asks (read-only)
def committed(rel: str) -> dict:
    """The JSON file at ``rel`` (from the repository's root) as HEAD holds it; the
    workspace's where this is no git checkout or the file is not committed."""
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{rel}"],
                              capture_output=True, timeout=60)
    except OSError:
        proc = None
    if proc is not None and proc.returncode == 0:
        return json.loads(proc.stdout)
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def run_metrics(run: str) -> str:
    return f"data/results/{run}/metrics.json"


def value(metrics: dict, key: str) -> float:
    *path, stat = key.split("/")
    node = metrics
    for part in path:
        node = node[part]
    return float(node[stat])


def agrees(quoted: str, actual: float) -> bool:
    """A quoted number agrees when it is the value rounded to the quote's decimals.

    >>> agrees("0.503", 0.5032), agrees("0.778", 0.5032), agrees("0.50", 0.5032)
    (True, False, True)
    """
    decimals = len(quoted.split(".")[1])
    return abs(float(quoted) - round(actual, decimals)) < 10 ** -(decimals + 3)


@pytest.mark.parametrize("doc,pattern,keys", CLAIMS,
                         ids=[f"{c[0]}:{c[2][0]}" for c in CLAIMS])
def test_doc_quotes_the_shipped_report(doc, pattern, keys):
    metrics = committed(METRICS)
    text = (ROOT / doc).read_text(encoding="utf-8")
    m = re.search(pattern, text)
    assert m, f"{doc}: the sentence quoting {keys[0]} is gone; point CLAIMS at its new words"
    wrong = [f"{k}: doc says {q}, report has {value(metrics, k)}"
             for q, k in zip(m.groups(), keys) if not agrees(q, value(metrics, k))]
    assert not wrong, f"{doc}: " + "; ".join(wrong)


@pytest.mark.parametrize("doc,pattern,run,keys", RUN_CLAIMS,
                         ids=[f"{c[0]}:{c[3][0]}" for c in RUN_CLAIMS])
def test_doc_quotes_the_shipped_run(doc, pattern, run, keys):
    metrics = committed(run_metrics(run))
    text = (ROOT / doc).read_text(encoding="utf-8")
    m = re.search(pattern, text)
    assert m, f"{doc}: the sentence quoting {run}'s {keys[0]} is gone; point RUN_CLAIMS at it"
    wrong = [f"{k}: doc says {q}, the run has {value(metrics, k)}"
             for q, k in zip(m.groups(), keys) if not agrees(q, value(metrics, k))]
    assert not wrong, f"{doc}: " + "; ".join(wrong)


def test_validity_doc_flags_as_the_report_does():
    metrics = committed(METRICS)
    text = (ROOT / "docs/metrics/validity.md").read_text(encoding="utf-8")
    m = re.search(rf"subject-blind null of {NUM} \[{NUM}, {NUM}\]: (not flagged|flagged)", text)
    assert m, "validity.md no longer says whether the sample's ZP-LKE null is flagged"
    # the doc must say what the report decides: its own rule, not a copy of its margin
    from factprobe.evaluators.metrics.validity import familiar
    null = {k: value(metrics, f"{ZP}/subject_blind_auroc/{k}") for k in ("value", "ci_low",
                                                                         "ci_high")}
    assert m.group(4) == ("flagged" if familiar(null) else "not flagged")


def test_own_graph_doc_says_what_the_generated_params_carry():
    """docs/own-graph.md's "`eval.X` carries `FLAGS`" / "passes no flag" is what init writes."""
    import yaml

    from factprobe.scaffold.render import InitConfig, rendered
    params = yaml.safe_load(rendered(InitConfig(dir=".", path="graph.ttl"))["params.yaml"])
    text = (ROOT / "docs" / "own-graph.md").read_text(encoding="utf-8")
    said = re.findall(r"`eval\.(\w+)`\s+(carries\s+`([^`]+)`|passes no flag)", text)
    assert said, "own-graph.md no longer says which flags an eval section carries"
    for section, claim, flags in said:
        args = params["eval"][section]["args"]
        if flags:
            assert flags in args, (section, flags, args)
        else:
            assert args == "", (section, args)


def test_validity_doc_band_is_the_reports_margin():
    """validity.md's "outside 0.4-0.6" is the band the report flags by (FAMILIARITY_MARGIN)."""
    from factprobe.evaluators.metrics.validity import FAMILIARITY_MARGIN
    text = (ROOT / "docs/metrics/validity.md").read_text(encoding="utf-8")
    bands = re.findall(r"outside (\d\.\d+)-(\d\.\d+)", text)
    assert bands, "validity.md no longer says which band of a null is off"
    want = (0.5 - FAMILIARITY_MARGIN, 0.5 + FAMILIARITY_MARGIN)
    assert all(abs(float(lo) - want[0]) < 1e-9 and abs(float(hi) - want[1]) < 1e-9
               for lo, hi in bands), (bands, want)
