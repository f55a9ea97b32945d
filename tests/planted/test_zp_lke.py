"""ZP-LKE on a planted model (docs/planting.md): planted facts score above held-out ones, the
subject-blind null stays near chance, and the check fails where the knowledge is not there (a
model that learned nothing; the halves swapped)."""
from __future__ import annotations

import json
import shutil

from tests.planted.conftest import (
    VALID_AUROC,
    assert_invalid,
    assert_valid,
    evaluate,
    validity_of,
)

# 8 examples: every train fact of a relation, in the list the model was taught
ARGS = ("--examples", "8", "--seeds", "0")


def run(world, model, out):
    return evaluate("zp-lke", world["mc"], model, out, *ARGS)


def test_planted_facts_score_above_held_out(world, causal_model, tmp_path):
    out = run(world, causal_model, tmp_path / "r")
    assert_valid(validity_of(out))
    assert_valid(validity_of(out, "validity_response"))


def test_a_model_that_learned_nothing_fails(world, blank_model, tmp_path):
    assert_invalid(validity_of(run(world, blank_model, tmp_path / "r")))


def test_swapped_halves_fail(world, causal_model, tmp_path):
    """The same weights with planted.json's halves swapped: the facts called planted are the
    ones never taught, so the AUROC is the planted model's mirror image (1 - AUROC)."""
    model = tmp_path / "swapped"
    shutil.copytree(causal_model, model)
    meta = json.loads((model / "planted.json").read_text())
    meta["planted"], meta["held_out"] = meta["held_out"], meta["planted"]
    (model / "planted.json").write_text(json.dumps(meta))
    v = validity_of(run(world, model, tmp_path / "r"))
    assert v["auroc"]["value"] <= 1 - VALID_AUROC, v
