"""BELIEF's bias level (Sec. 5.4, footnote 12: the three content-free inputs' distributions
"ensembled"): when to renormalise is a named option, --bias-renormalise each (default) or after
(issue #28). Values worked out by hand."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from factprobe.evaluators.metrics.belief import bias_level
from tests.evaluators import synth
from tests.evaluators.report.test_report_cli import cli


def test_the_two_readings_by_hand():
    # "N/A" puts (0.3, 0.1) on the two candidates, "" (0.01, 0.03), "?" (0.2, 0.2).
    cf = pd.DataFrame({"relation_id": ["r"] * 3, "template_id": ["t"] * 3,
                       "candidate_probs": [[0.3, 0.1], [0.01, 0.03], [0.2, 0.2]]})
    # each: (0.75, 0.25), (0.25, 0.75), (0.5, 0.5) -> mean (0.5, 0.5): bias 0
    assert bias_level(cf)["single_prompt"] == 0.0
    # after: mean (0.17, 0.11) -> (0.6071, 0.3929): 1 - H / log 2
    p = np.array([0.51, 0.33]) / 0.84
    want = 1 - float(-(p * np.log(p)).sum()) / math.log(2)
    assert abs(bias_level(cf, "after")["single_prompt"] - round(want, 4)) < 1e-9
    assert round(want, 4) == 0.0334


def test_the_report_reads_the_run_s_choice(tmp_path):
    rng = np.random.default_rng(3)
    out = synth.belief_outputs(rng)
    for name, cfg in (("each", {}), ("after", {"bias_renormalise": "after"})):
        synth.write_run(tmp_path / "runs" / name, "belief", out, dataset="mp", config=cfg)
    proc = cli("report", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"),
               "--no-plots", "--bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    got = {p.parent.name: json.loads(p.read_text())["bias"]
           for p in (tmp_path / "rep" / "runs").rglob("metrics.json")}
    cf = out[out["stage"] == "content_free"]
    assert got["each"]["single_prompt"] == bias_level(cf)["single_prompt"]
    assert got["after"]["single_prompt"] == bias_level(cf, "after")["single_prompt"]
    assert got["each"] != got["after"]
