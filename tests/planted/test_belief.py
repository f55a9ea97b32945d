"""BELIEF on a masked planted model (`plant --masked`): planted facts are predicted at the mask
above held-out ones, the subject-blind null stays near chance, a model that learned nothing
fails."""
from __future__ import annotations

from tests.planted.conftest import (
    VALID_AUROC,
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


def test_the_subject_alone_does_not_tell_the_halves_apart(world, masked_model, tmp_path):
    """The mask-filling subject-only check (issue #28): "." at a mask after the subject and
    the subject's pseudo-log-likelihood. Held-out subjects are taught in the same sentences
    as planted ones, as often (mention facts), so neither is flagged, while BELIEF's own
    score separates the halves."""
    v = validity_of(run(world, masked_model, tmp_path / "r"))
    assert v["auroc"]["value"] >= VALID_AUROC, v
    check = v["subject_only"]
    assert set(check) == {"period_after_subject", "subject_likelihood"}
    for name, c in check.items():
        # the multi-prompt set has no train/test split: every planted fact is asked
        assert c["planted"]["n"] == 32 and c["held_out"]["n"] == 16, (name, c)
        assert c["leans"] is None, (name, c)
