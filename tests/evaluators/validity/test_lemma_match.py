"""BELIEF-ICL's lemma matching (Sec. 3.2: two strings match "if a normalized string list is
included in the other"): a contiguous run by default, every lemma in any order behind
--lemma-match any-order (issue #28). Values worked out by hand."""
from __future__ import annotations

import json

import pandas as pd

from factprobe.evaluators.metrics.belief_icl import icl_correct
from factprobe.evaluators.metrics.lemmas import contains, same_answer
from tests.evaluators import synth
from tests.evaluators.report.test_report_cli import cli


def test_the_two_readings():
    long = ("nobel", "prize", "in", "physics")
    assert not contains(long, ("prize", "physics"))
    assert contains(long, ("prize", "physics"), "any-order")
    # the paper's own example: "a guitar" and "guitars" match either way
    assert icl_correct(" a guitar", ["guitars"]) and icl_correct(" a guitar", ["guitars"],
                                                                  "any-order")
    # "York, New" names "New York" only when order does not matter
    assert not icl_correct(" York, New", ["New York"])
    assert icl_correct(" York, New", ["New York"], "any-order")
    assert same_answer(" the prize for physics", "physics prize", "any-order")
    assert not same_answer(" the prize for physics", "physics prize")


def test_the_run_s_choice_reaches_the_metrics(tmp_path):
    import numpy as np
    out = synth.icl_outputs(np.random.default_rng(2), contexts=("zero",))
    greedy = out["stage"] == "greedy"
    # every greedy answer names its first gold name with its words reversed
    out.loc[greedy, "text"] = [" " + " ".join(reversed(str(list(g)[0]).split())) + " x"
                               for g in out.loc[greedy, "gold_names"]]
    multi = [len(str(list(g)[0]).split()) > 1 for g in out.loc[greedy, "gold_names"]]
    assert any(multi)
    for name, cfg in (("contiguous", {}), ("any", {"lemma_match": "any-order"})):
        synth.write_run(tmp_path / "runs" / name, "belief-icl", out, dataset="mp", config=cfg)
    proc = cli("report", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"),
               "--no-plots", "--bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    acc = {p.parent.name: json.loads(p.read_text())["contexts"]["zero"]["accuracy"]["value"]
           for p in (tmp_path / "rep" / "runs").rglob("metrics.json")}
    assert acc["any"] == 1.0 and acc["contiguous"] < 1.0
