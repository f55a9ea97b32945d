"""The link-shuffle null (evaluators/metrics/link_shuffle.py): every planted and held-out fact
scored again against the gold of another fact of its relation and half. A probe that reads the
subject-object link drops to 0.5 or below; one that reads answer familiarity does not, and is
flagged (issue #28). Worked out by hand on two synthesized ZP-LKE runs."""
from __future__ import annotations

import json

import pandas as pd

from factprobe.evaluators.metrics.link_shuffle import donors
from tests.evaluators import synth
from tests.evaluators.report.test_report_cli import cli

PLANTED = [f"p{i}" for i in range(4)]
HELD = [f"h{i}" for i in range(4)]
FACTS = PLANTED + HELD


def _run(logprob) -> pd.DataFrame:
    """One relation, 8 facts, every fact's choices the 8 golds (" g-<fact>");
    ``logprob(fact, option_fact)`` is the option's log-prob in the fact's question."""
    rows = []
    for f in FACTS:
        meta = {"fact_id": f, "relation_id": "r", "gold": f"g-{f}", "n_examples": 3,
                "seed": 0, "corrupted": 0, "prompt_id": f"p-{f}"}
        for k, o in enumerate(FACTS):
            lp = logprob(f, o)
            rows.append({**meta, "stage": "mc", "kind": "score", "option": float(k),
                         "option_text": f" g-{o}", "is_gold": o == f,
                         "token_logprobs": [lp], "logprob": lp, "n_tokens": 1})
    return pd.DataFrame(rows)


def link(f, o):             # planted facts: all mass on the own gold; held-out: uniform
    return (0.0 if o == f else -50.0) if f in PLANTED else 0.0


def familiar(f, o):         # every question favours the planted golds, whatever the subject
    return 0.0 if o in PLANTED else -50.0


def _report(tmp_path, name, fn):
    return synth.zp_lke_report(tmp_path / name, _run(fn), {"planted": PLANTED, "held_out": HELD})


def test_donors_stay_in_their_relation_and_half():
    rows = _run(link)
    got = donors(rows, {"planted": PLANTED, "held_out": HELD})
    assert set(got) == set(FACTS)
    assert all(d != f and (d in PLANTED) == (f in PLANTED) for f, d in got.items())
    assert donors(rows, {"planted": PLANTED, "held_out": HELD}, seed=0) == got   # seeded


def test_a_probe_that_reads_the_link_drops_below_0_5(tmp_path):
    v, text, _ = _report(tmp_path, "link", link)
    # own golds: planted prob ~1, held-out 1/8: AUROC 1. Shuffled: a planted fact's donor
    # gold has prob e^-50 / (1 + 7 e^-50) ~ 0, a held-out's 1/8: every pair goes to held-out,
    # AUROC 0
    assert v["auroc"]["value"] == 1.0
    ls = v["link_shuffle"]
    assert ls["auroc"]["value"] == 0.0
    assert (ls["planted"]["n"], ls["held_out"]["n"]) == (4, 4)
    assert "link-shuffle null AUROC" not in text          # below 0.5 is what the link gives
    assert "| link-shuffle AUROC |" in text and "| 0.000 [" in text


def test_a_probe_that_reads_familiarity_is_flagged(tmp_path):
    v, text, out = _report(tmp_path, "fam", familiar)
    # own golds: planted 1/4 each (4 planted golds at log-prob 0), held-out ~0: AUROC 1.
    # Shuffled: a planted fact's donor is a planted gold, 1/4; a held-out's a held-out
    # gold, ~0: AUROC 1, the link played no part
    assert v["auroc"]["value"] == 1.0
    assert v["link_shuffle"]["auroc"]["value"] == 1.0
    flagged = [ln for ln in text.splitlines() if "link-shuffle null AUROC 1.000" in ln]
    assert len(flagged) == 1 and "still favours planted facts" in flagged[0]
    page = "".join(p.read_text() for p in out.rglob("*") if p.suffix in (".js", ".html"))
    assert "still favours planted facts" in page


def test_belief_says_why_it_has_no_link_shuffle():
    from factprobe.evaluators.methods import METHODS
    assert "not computed for BELIEF" in METHODS["belief"].metrics.no_link_shuffle
    assert METHODS["zp-lke"].metrics.no_link_shuffle == ""


def test_monitor_shuffles_its_frames_and_says_why_not_its_anchor(tmp_path):
    import numpy as np
    own = synth.monitor_outputs(np.random.default_rng(4), relations=2, unmatched=0)
    facts = sorted(own["fact_id"].unique())
    planted = {"planted": facts[0::2], "held_out": facts[1::2]}
    # every frame answer of a planted fact says "Paris", of a held-out one "Lima": scored
    # against another planted fact's gold, a planted fact is right when that gold is Paris
    fr = own["stage"] == "frames"
    own.loc[fr, "text"] = np.where(own.loc[fr, "fact_id"].isin(planted["planted"]),
                                   " Paris", " Lima")
    model = synth.model_dir(tmp_path, planted)
    synth.write_run(tmp_path / "runs" / "m", "monitor", own, dataset="fktc", model_dir=model)
    out = tmp_path / "rep"
    proc = cli("report", "--results", str(tmp_path / "runs"), "--out", str(out), "--no-plots",
               "--bootstrap", "50")
    assert proc.returncode == 0, proc.stderr
    m = json.loads(next((out / "runs").rglob("metrics.json")).read_text())
    assert m["validity"]["link_shuffle"]["auroc"]["value"] is None
    assert m["validity"]["link_shuffle"]["reason"].startswith("undefined for MONITOR's anchor")
    frames = m["validity_frames"]["link_shuffle"]
    assert frames["auroc"]["value"] is not None and frames["planted"]["n"] > 0
    assert frames["planted"]["value"] > 0 and frames["held_out"]["value"] == 0


def test_donor_gold_comes_from_a_row_that_has_one():
    """BELIEF-ICL's first row of a fact may carry no gold_names (a row of another stage), and
    golds that are lists of one length must not become a 2-d assignment (both broke the
    sample's and a three-name graph's belief-icl eval)."""
    from factprobe.evaluators.metrics.link_shuffle import shuffled
    rows = pd.DataFrame({"fact_id": ["a", "a", "b", "b"], "relation_id": ["r"] * 4,
                         "stage": ["x"] * 4,
                         "gold_names": [None, ["Oslo"], ["Bern"], ["Bern"]]})
    out = shuffled(rows, {"planted": ["a", "b"], "held_out": []})
    assert [list(g) for g in out["gold_names"]] == [["Bern"], ["Bern"], ["Oslo"], ["Oslo"]]
