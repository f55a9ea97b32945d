"""BELIEF on a masked planted model (`plant --masked`): planted facts are predicted at the mask
above held-out ones, the subject-blind null stays near chance, a model that learned nothing
fails."""
from __future__ import annotations

from tests.planted.conftest import (
    assert_invalid,
    assert_valid,
    evaluate,
    validity_of,
)


def run(world, model, out):
    return evaluate("belief", world["multiprompt"], model, out, "--max-names", "1")


def test_planted_facts_score_above_held_out(world, masked_model, tmp_path):
    assert_valid(validity_of(run(world, masked_model, tmp_path / "r")))


def test_a_model_that_learned_nothing_fails(world, blank_masked, tmp_path):
    assert_invalid(validity_of(run(world, blank_masked, tmp_path / "r")))
