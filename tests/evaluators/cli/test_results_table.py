"""What ``factprobe eval`` prints when a run is done (factprobe/cli/results_table.py): golden text
from metrics written by hand, and a real run through the command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from factprobe.cli.results_table import results_text
from factprobe.evaluators.methods import METHODS
from factprobe.evaluators.metrics.monitor import summary
from tests.evaluators import synth

ROOT = Path(__file__).resolve().parents[3]


def _m(value, lo=None, hi=None, n=None, **more):
    return {"value": value, "ci_low": lo, "ci_high": hi, "n": n, **more}


RUN = {"dataset": {"name": "tiny-mc"}, "model": {"name": "models/tiny"},
       "eval": {"too_long": "skip"},
       "plan": {"too_long": {"skipped_too_long": 2, "skipped_per_relation": {"P36": 2}},
                "skipped_relations": {"P99": "no test facts"}}}


def test_zp_lke_table_golden():
    metrics = {
        "mc_accuracy": _m(0.625, 0.5, 0.75, 8, per_relation={
            "P36": _m(0.75, 0.5, 1.0, 4), "P37": _m(0.5, 0.25, 0.75, 4)}),
        "probability_mass": _m(0.6, 0.45, 0.7, 8, per_relation={
            "P36": _m(0.7, 0.6, 0.8, 4), "P37": _m(0.5, 0.3, 0.7, 4)}),
        "validity": {"auroc": {"value": 0.9, "ci_low": 0.8, "ci_high": 1.0}},
        "notes": ["something the metrics could not compute"],
    }
    got = results_text(METHODS["zp-lke"].metrics, metrics, RUN)
    assert got == """\
zp-lke on tiny-mc, model models/tiny

| metric                | value [95% CI]       | n |
|:----------------------|:---------------------|--:|
| MC accuracy           | 0.625 [0.500, 0.750] | 8 |
| gold probability mass | 0.600 [0.450, 0.700] | 8 |
| validity AUROC        | 0.900 [0.800, 1.000] |   |

| relation | MC accuracy          | gold probability mass | n |
|:---------|:---------------------|:----------------------|--:|
| P36      | 0.750 [0.500, 1.000] | 0.700 [0.600, 0.800]  | 4 |
| P37      | 0.500 [0.250, 0.750] | 0.500 [0.300, 0.700]  | 4 |

- skipped relation P99: no test facts
- skipped 2 prompts longer than the model's context (--too-long skip): P36 2
- something the metrics could not compute
"""


def test_contexts_get_a_column_and_missing_numbers_a_dash():
    block = {"accuracy": _m(0.5, 0.25, 0.75, 4, per_relation={"P36": _m(None, n=0)}),
             "one_word_rate": _m(1.0, 1.0, 1.0, 4)}
    metrics = {"contexts": {"zero": block, "4-template": block}}
    got = results_text(METHODS["belief-icl"].metrics, metrics,
                       {"dataset": {"path": "mp"}, "backend": {"model": "m"}})
    assert got == """\
belief-icl on mp, model m

| context    | metric        | value [95% CI]       | n |
|:-----------|:--------------|:---------------------|--:|
| zero       | Acc@1         | 0.500 [0.250, 0.750] | 4 |
| zero       | one-word rate | 1.000 [1.000, 1.000] | 4 |
| 4-template | Acc@1         | 0.500 [0.250, 0.750] | 4 |
| 4-template | one-word rate | 1.000 [1.000, 1.000] | 4 |

| context    | relation | Acc@1 | n |
|:-----------|:---------|:------|--:|
| zero       | P36      | –     | 0 |
| 4-template | P36      | –     | 0 |
"""


def test_monitor_counts_the_facts_its_distances_leave_out():
    out = synth.monitor_outputs(np.random.default_rng(3), relations=2, unmatched=1)
    s = summary(out, resamples=0)
    anchors = out[out["stage"] == "anchor"]
    matched = anchors["text"].str.endswith(".")
    assert s["skipped"]["facts"] == int((~matched).sum()) == len(anchors) - s["facts_with_anchor"]
    assert s["skipped"]["relations"] == ["rel:m2"]                 # the wholly unmatched one
    per = s["skipped"]["reasons"]["primary anchor is not the gold"]
    assert per == {r: int(n) for r, n in anchors[~matched].groupby("relation_id").size().items()}
    assert s["notes"][0].startswith("no anchor matched in relation rel:m2 (")
    partial = ", ".join(f"{r} {per[r]} of {int((anchors['relation_id'] == r).sum())}"
                        for r in ("rel:m0", "rel:m1"))
    assert s["notes"][1] == (f"MONITOR/PFD/IRD leave out {per['rel:m0'] + per['rel:m1']} facts "
                             f"(primary anchor is not the gold): {partial}")


def test_eval_prints_the_table_from_its_metrics(tmp_path, tiny_causal_dir):
    import pyarrow as pa

    from factprobe.core.tables import base_manifest, write_dataset
    from tests.probes.engine.test_runner import facts_many
    data = write_dataset(tmp_path / "mc", {"facts": pa.Table.from_pandas(
        facts_many(), preserve_index=False)}, base_manifest("mc", "mc", {}, {}, {}))
    argv = [sys.executable, "-m", "factprobe.cli.app", "eval", "zp-lke", "--dataset",
            str(data), "--model", str(tiny_causal_dir), "--examples", "2",
            "--response-tokens", "0"]
    proc = subprocess.run(argv + ["--out", str(tmp_path / "r")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    m = json.loads((tmp_path / "r" / "metrics.json").read_text())
    lines = proc.stdout.splitlines()
    assert lines[0] == f"zp-lke on mc, model {tiny_causal_dir}"
    acc = m["mc_accuracy"]
    row = next(x for x in lines if x.startswith("| MC accuracy "))
    assert f"{acc['value']:.3f} [{acc['ci_low']:.3f}, {acc['ci_high']:.3f}]" in row
    assert row.rstrip(" |").endswith(str(acc["n"]))
    for rel, v in acc["per_relation"].items():
        assert any(x.startswith(f"| {rel} ") and f"{v['value']:.3f}" in x for x in lines)
    assert proc.stderr.strip() == f"wrote {tmp_path / 'r'}"
    quiet = subprocess.run(argv + ["--out", str(tmp_path / "q"), "--quiet"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
