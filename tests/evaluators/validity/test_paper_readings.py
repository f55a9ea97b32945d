"""The papers' readings of the comparison matrices by default, the other behind a named option
(issue #28): ZP-LKE's subsumption rate averaged over relations (Tables 2 and 11) rather than
pooled over facts, and BELIEF's knowledge sharing rate over covered facts per template (Sec. 7)
rather than per (fact, template, subject name). Values worked out by hand."""
from __future__ import annotations

import pandas as pd

from factprobe.evaluators.metrics.coverage import sharing_rate, sharing_units
from factprobe.evaluators.metrics.zp_lke import subsumption_matrix
from tests.evaluators import synth
from tests.evaluators.report.test_report_cli import cli


def test_subsumption_on_the_issue_s_two_relations():
    # A knows 390 facts of r1 and 10 of r2; B knows 380 and 2 of them.
    rel = {f"x{i}": "r1" for i in range(390)} | {f"y{i}": "r2" for i in range(10)}
    known = {"A": set(rel), "B": {f"x{i}" for i in range(380)} | {"y0", "y1"}}
    per = subsumption_matrix(known, rel)
    pooled = subsumption_matrix(known, rel, reading="pooled")
    assert round(per.loc["A", "B"], 3) == 0.587            # (380/390 + 2/10) / 2
    assert round(pooled.loc["A", "B"], 3) == 0.955         # 382 / 400
    assert per.loc["B", "A"] == pooled.loc["B", "A"] == 1.0


def test_sharing_counts_a_covered_fact_once_per_template():
    # A answers fact a under template t1 with both subject names X and Y, and b under t1
    # with Z; B answers a/t1 with X only. Paper: A covers {a/t1, b/t1}, B {a/t1}: 1/2.
    # Per prompt: A's 3 prompts, B shares 1: 1/3.
    a = {("a", "t1", "X"), ("a", "t1", "Y"), ("b", "t1", "Z")}
    b = {("a", "t1", "X")}
    assert sharing_rate(sharing_units(a), sharing_units(b)) == 0.5
    assert sharing_rate(sharing_units(a, "prompt"), sharing_units(b, "prompt")) == 1 / 3


def _mc_run(known: dict[str, tuple[str, bool]]) -> pd.DataFrame:
    """A ZP-LKE run with one seed and n: two options per fact, the gold's log-prob 0 against
    -5 for a known fact, -5 against 0 for an unknown one."""
    rows = []
    for fid, (rel, ok) in sorted(known.items()):
        meta = {"fact_id": fid, "relation_id": rel, "gold": f"g-{fid}", "n_examples": 3,
                "seed": 0, "corrupted": 0, "prompt_id": f"p-{fid}"}
        for k, gold in ((0, True), (1, False)):
            lp = (0.0 if ok else -5.0) if gold else (-5.0 if ok else 0.0)
            rows.append({**meta, "stage": "mc", "kind": "score", "option": float(k),
                         "option_text": f" {'g' if gold else 'o'}-{fid}", "is_gold": gold,
                         "token_logprobs": [lp], "logprob": lp, "n_tokens": 1})
        rows.append({**meta, "stage": "response", "kind": "generate", "sample": -1.0,
                     "text": " nothing", "token_ids": [1], "token_logprobs": [-1.0],
                     "logprob": -1.0, "n_tokens": 1})
    return pd.DataFrame(rows)


def test_the_report_s_subsumption_matrix_is_per_relation_by_default(tmp_path):
    # r1: 40 facts, A knows all, B 38 of them (0.95); r2: 4 facts, A knows all, B 1 (0.25).
    # Per relation (0.95 + 0.25) / 2 = 0.6; pooled 39 / 44 = 0.8864.
    facts = {f"a{i:02d}": ("r1", True) for i in range(40)} | \
        {f"b{i}": ("r2", True) for i in range(4)}
    b_knows = {f: (rel, f in {f"a{i:02d}" for i in range(38)} | {"b0"})
               for f, (rel, _) in facts.items()}
    synth.write_run(tmp_path / "runs" / "A", "zp-lke", _mc_run(facts), dataset="mc")
    synth.write_run(tmp_path / "runs" / "B", "zp-lke", _mc_run(b_knows), dataset="mc")
    got = {}
    for name, extra in (("default", ()), ("pooled", ("--subsumption", "pooled"))):
        out = tmp_path / f"rep-{name}"
        proc = cli("report", "--results", str(tmp_path / "runs"), "--out", str(out),
                   "--no-plots", "--bootstrap", "20", *extra)
        assert proc.returncode == 0, proc.stderr
        m = pd.read_csv(next((out / "tables").rglob("subsumption-*.csv")))
        got[name] = m
        text = (out / "report.md").read_text()
        assert ("averaged over the relations" in text) == (name == "default")
    for name, want in (("default", 0.6), ("pooled", 0.8864)):
        m = got[name].set_index(got[name].columns[0])
        a = [c for c in m.columns if c.endswith("A") or ":A" in c][0]
        b = [c for c in m.columns if c.endswith("B") or ":B" in c][0]
        assert abs(m.loc[a, b] - want) < 1e-4, (name, m)
        assert m.loc[b, a] == 1.0


def test_a_bad_reading_is_one_line_exit_2(tmp_path):
    proc = cli("report", "--results", str(tmp_path), "--out", str(tmp_path / "r"),
               "--subsumption", "mean")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--subsumption" in proc.stderr


def _belief_run(right: set[tuple[str, str]]) -> pd.DataFrame:
    """A BELIEF run on one template: fact a asked with subject names X and Y, fact b with Z;
    the prompts in ``right`` (fact, subject name) answer the gold, the others "the"."""
    rows = []
    for fid, gold, names in (("a", "Paris", ("X", "Y")), ("b", "Rome", ("Z",))):
        for sn in names:
            rows.append({"fact_id": fid, "relation_id": "rel:r", "subject_id": f"s-{fid}",
                         "template_id": "rel:r/t1", "subject_name": sn, "gold": gold,
                         "gold_names": [gold], "prompt_id": f"p-{fid}-{sn}",
                         "stage": "prompts", "kind": "fill_mask",
                         "top_tokens": [gold if (fid, sn) in right else "the", "x"],
                         "top_probs": [0.6, 0.1], "candidate_probs": [0.5, 0.2]})
    for cf in ("N/A", "", "?"):
        rows.append({"relation_id": "rel:r", "template_id": "rel:r/t1", "prompt_id": f"cf-{cf}",
                     "stage": "content_free", "kind": "fill_mask", "top_tokens": ["x"],
                     "top_probs": [0.5], "candidate_probs": [0.3, 0.2], "content_free": cf,
                     "candidates": ["Paris", "Rome"]})
    return pd.DataFrame(rows)


def test_the_report_s_sharing_matrix_counts_facts_per_template_by_default(tmp_path):
    # the hand-worked case above through 'factprobe report': A answers a/X, a/Y and b/Z,
    # B a/X only. Paper (Sec. 7): A covers {a/t1, b/t1}, B {a/t1}: 1/2; per prompt: 1/3
    synth.write_run(tmp_path / "runs" / "A", "belief",
                    _belief_run({("a", "X"), ("a", "Y"), ("b", "Z")}), dataset="mp")
    synth.write_run(tmp_path / "runs" / "B", "belief", _belief_run({("a", "X")}), dataset="mp")
    got = {}
    for name, extra in (("default", ()), ("prompt", ("--sharing-unit", "prompt"))):
        out = tmp_path / f"rep-{name}"
        proc = cli("report", "--results", str(tmp_path / "runs"), "--out", str(out),
                   "--no-plots", "--bootstrap", "20", *extra)
        assert proc.returncode == 0, proc.stderr
        m = pd.read_csv(next((out / "tables").rglob("sharing-*.csv")))
        got[name] = m.set_index(m.columns[0])
    for name, want in (("default", 0.5), ("prompt", 1 / 3)):
        m = got[name]
        a = [c for c in m.columns if c.endswith("A") or ":A" in c][0]
        b = [c for c in m.columns if c.endswith("B") or ":B" in c][0]
        assert abs(m.loc[a, b] - want) < 1e-4, (name, m)
        assert m.loc[b, a] == 1.0
