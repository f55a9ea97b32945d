"""MONITOR's primary anchor (Sec. 4): the paper's Exact Match by default, with its
normalisation written down (whitespace and punctuation around the answer trimmed), and the
reading frame accuracy uses ("starts with the gold") behind --anchor-match prefix, so a model
that keeps writing after the answer keeps the fact (issue #28)."""
from __future__ import annotations

import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics import monitor as MO
from factprobe.probes.methods.monitor import anchor_ok


@pytest.mark.parametrize("text, exact, prefix", [
    (" Paris.", True, True),             # trailing punctuation trimmed
    ("Paris", True, True),
    (" Paris, France", False, True),     # kept writing after the answer
    (" Paris is the capital", False, True),
    (" Parisian", False, False),         # not on a word boundary
    (" paris", False, False),            # case is part of Exact Match
    (" The answer is Paris", False, False),
    ("", False, False),
])
def test_the_two_readings(text, exact, prefix):
    assert anchor_ok(text, "Paris") is exact
    assert anchor_ok(text, "Paris", "prefix") is prefix


@pytest.mark.parametrize("text, gold, exact, prefix", [
    # the gold's own punctuation is trimmed as the anchor's is: the model that writes the
    # label exactly keeps the fact (before, " Washington, D.C." trimmed to "Washington, D.C"
    # never equalled the untrimmed gold, under either reading)
    (" Washington, D.C.", "Washington, D.C.", True, True),
    (" Washington, D.C", "Washington, D.C.", True, True),
    (" Apple Inc.", "Apple Inc.", True, True),
    (" Apple Inc. makes phones", "Apple Inc.", False, True),
    (" Washington", "Washington, D.C.", False, False),
    (" U.S.A.", "U.S.", False, True),                   # prefix: "U.S", then a "."
    (" ?", "?", False, False),                          # nothing left of either: never a match
])
def test_the_gold_is_trimmed_like_the_anchor(text, gold, exact, prefix):
    assert anchor_ok(text, gold) is exact
    assert anchor_ok(text, gold, "prefix") is prefix
    assert MO.anchor_matched(text, gold) is exact


def _plan(**kw):
    from tests.probes.methods.test_golden_prompts import monitor_plan
    return monitor_plan(**kw)


ANCHORS = pd.DataFrame([{"stage": "anchor", "fact_id": "a", "text": " Paris, France",
                         "gold": "Paris", "token_ids": [5, 6, 7]},
                        {"stage": "anchor", "fact_id": "b", "text": " Lima.",
                         "gold": "Lima", "token_ids": [8, 9]}])


def test_exact_by_default_prefix_by_flag():
    default = [r.meta["fact_id"] for r in _plan().stages[2].build(ANCHORS)]
    prefix = _plan(anchor_match="prefix").stages[2].build(ANCHORS)
    assert default == ["b"]
    assert [r.meta["fact_id"] for r in prefix] == ["a", "b"]
    # the anchor is the object's own tokens either way (Eq. 1): " Paris", not ", France"
    assert prefix[0].continuations == (" Paris",)


def test_the_metrics_follow_the_probe_s_reading():
    # a prefix run scored the object of fact a: its anchor counts as matched
    rows = pd.concat([ANCHORS.assign(token_logprobs=[[-0.1] * 3, [-0.2] * 2]),
                      pd.DataFrame([{"stage": "object", "fact_id": f, "gold": g,
                                     "token_logprobs": [-0.5], "relation_id": "cap"}
                                    for f, g in (("a", "Paris"), ("b", "Lima"))])],
                     ignore_index=True).assign(relation_id="cap")
    got = MO.anchors(rows).set_index("fact_id")["matched"].to_dict()
    assert got == {"a": 1.0, "b": 1.0}
    exact = rows[~((rows["stage"] == "object") & (rows["fact_id"] == "a"))]
    assert MO.anchors(exact).set_index("fact_id")["matched"].to_dict() == {"a": 0.0, "b": 1.0}


def test_an_unknown_reading_is_refused():
    with pytest.raises(UserError, match="anchor match"):
        _plan(anchor_match="loose")
