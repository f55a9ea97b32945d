"""Figures for degenerate runs: a MONITOR run in which no anchor matched has no number to draw;
the report says so instead of drawing an empty heatmap (matplotlib warned of identical xlims)."""
from __future__ import annotations

import warnings

import numpy as np

from factprobe.cli.app import main
from tests.evaluators import synth


def test_monitor_without_a_matched_anchor_gives_a_note_not_a_warning(tmp_path):
    rng = np.random.default_rng(41)
    runs = tmp_path / "results"
    synth.write_run(runs / "fktc" / "monitor" / "m", "monitor",
                    synth.monitor_outputs(rng, relations=0, unmatched=2), dataset="fktc")
    synth.write_run(runs / "mc" / "zp-lke" / "m", "zp-lke", synth.mc_outputs(rng), dataset="mc")
    out = tmp_path / "report"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["report", "--results", str(runs), "--out", str(out), "--quiet",
                     "--bootstrap", "20", "--samplings", "100"]) == 0
    drawn = [str(w.message) for w in caught if "matplotlib" in w.filename
             or "xlim" in str(w.message)]
    assert drawn == []
    report = (out / "report.md").read_text()
    assert "no MONITOR heatmap for monitor on fktc: no relation has a value" in report
    figures = {p.name for p in (out / "figures").iterdir()}
    assert "heatmap-mc-zp-lke.png" in figures                  # the other run is drawn
    assert not any("monitor" in name for name in figures)
