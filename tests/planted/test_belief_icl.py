"""BELIEF-ICL on a planted model, in both in-context settings: planted facts are answered
above held-out ones, the subject-blind null stays near chance, a model that learned nothing
fails."""
from __future__ import annotations

import pytest

from tests.planted.conftest import (
    assert_invalid,
    assert_valid,
    evaluate,
    validity_of,
)

ARGS = ("--max-names", "1", "--contexts", "zero,4-template", "--samples", "10",
        "--sample-prompts", "100")


@pytest.fixture(scope="module")
def runs(world, causal_model, blank_model, tmp_path_factory):
    out = {}
    for name, model in (("planted", causal_model), ("blank", blank_model)):
        out[name] = evaluate("belief-icl", world["multiprompt"], model,
                             tmp_path_factory.mktemp("belief-icl") / name, *ARGS)
    return out


@pytest.mark.parametrize("context", ["zero", "4-template"])
def test_planted_facts_score_above_held_out(runs, context):
    assert_valid(validity_of(runs["planted"], "contexts", context, "validity"))


@pytest.mark.parametrize("context", ["zero", "4-template"])
def test_a_model_that_learned_nothing_fails(runs, context):
    assert_invalid(validity_of(runs["blank"], "contexts", context, "validity"))
