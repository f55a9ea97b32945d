"""The shipped pipeline's figures as `dvc repro` rebuilt them here: the same as committed where
the planted models are the committed bytes, and otherwise (another vendor's CPU plants other
bits: docs/planting.md, "Same bytes, which machine") still what the docs claim of them: every
method's validity AUROC at least 0.9 and its subject-blind null not flagged.

Measured 2026-12-02, the AMD EPYC lock rebuilt on an Intel Xeon (AMX): ZP-LKE 0.995 -> 0.996,
its null 0.531 -> 0.494, MONITOR 1.000 -> 0.968, the link-shuffle null 0.119 -> 0.149."""
from __future__ import annotations

import functools
import json
import subprocess

import pytest
import yaml

from factprobe.evaluators.metrics.validity import familiar
from tests.docs.test_doc_numbers import (
    CLAIMS,
    METRICS,
    ROOT,
    RUN_CLAIMS,
    committed,
    run_metrics,
    value,
)

MODELS = ("data/models/planted", "data/models/planted-mlm")
# the held-back check's floor for a planted model's validity (issue 30)
VALID = 0.9


def _model_hashes(lock: dict) -> dict:
    return {o["path"]: o["md5"] for stage in lock["stages"].values()
            for o in stage.get("outs", []) if o["path"] in MODELS}


@functools.cache          # once a session: every parametrised case asks
def same_models() -> bool:
    """Whether the workspace's dvc.lock (rewritten by a `dvc repro`) holds the committed
    lock's planted models; True where there is no git history to compare with."""
    proc = subprocess.run(["git", "-C", str(ROOT), "show", "HEAD:dvc.lock"],
                          capture_output=True, timeout=60)
    if proc.returncode != 0:
        return True
    here = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))
    return _model_hashes(here) == _model_hashes(yaml.safe_load(proc.stdout))


def _workspace(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


FILES = [(METRICS, keys) for _, _, keys in CLAIMS] + [(run_metrics(run), keys)
                                                       for _, _, run, keys in RUN_CLAIMS]


@pytest.mark.parametrize("rel,keys", FILES, ids=[f"{f}:{k[0]}" for f, k in FILES])
def test_the_same_models_give_the_committed_figures(rel, keys):
    if not same_models():
        pytest.skip("the planted models here are not the committed bytes (another CPU "
                    "vendor): test_rebuilt_validity_holds checks their figures")
    here, there = _workspace(rel), committed(rel)
    moved = [f"{k}: {value(there, k)} -> {value(here, k)}" for k in keys
             if value(here, k) != value(there, k)]
    assert not moved, f"{rel}: the same planted models, other figures: " + "; ".join(moved)


def test_rebuilt_validity_holds():
    report = _workspace(METRICS)
    runs = sorted({k.rsplit("/validity_auroc/", 1)[0] for _, _, keys in CLAIMS for k in keys
                   if "/validity_auroc/" in k})
    assert len(runs) == 5, runs          # ZP-LKE, HGP, BELIEF, BELIEF-ICL, MONITOR
    bad = []
    for run in runs:
        auroc = value(report, f"{run}/validity_auroc/value")
        if auroc < VALID:
            bad.append(f"{run}: validity AUROC {auroc} < {VALID}")
        # the report's own flag (MONITOR's null is undefined, None: never flagged)
        node = report
        for part in run.split("/"):
            node = node[part]
        null = node.get("subject_blind_auroc")
        if familiar(null):
            bad.append(f"{run}: subject-blind null {null} flagged")
    assert not bad, "; ".join(bad)
