"""The prompt probe (HGP: hand-written templates) on a planted model: planted facts score above
held-out ones, the subject-blind null stays near chance, a model that learned nothing fails."""
from __future__ import annotations

from tests.planted.conftest import (
    TEMPLATES,
    assert_invalid,
    assert_valid,
    evaluate,
    validity_of,
)


def run(world, model, out):
    return evaluate("prompt", world["mc"], model, out, "--templates", str(TEMPLATES))


def test_planted_facts_score_above_held_out(world, causal_model, tmp_path):
    out = run(world, causal_model, tmp_path / "r")
    assert_valid(validity_of(out))
    assert_valid(validity_of(out, "validity_response"))


def test_a_model_that_learned_nothing_fails(world, blank_model, tmp_path):
    assert_invalid(validity_of(run(world, blank_model, tmp_path / "r")))
