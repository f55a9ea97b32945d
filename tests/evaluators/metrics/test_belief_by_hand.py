"""BELIEF's metrics on tables small enough to work out by hand from the paper's definitions
(Zhao et al., Sec. 2.2 Acc@1 and its fluctuation, Eq. 1 Consist, Eq. 2 Overconf, Sec. 2.1 the
top-1 token, Sec. 7 and footnote 16 coverage)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from factprobe.evaluators.metrics import belief as B
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.suites.belief import belief_metrics


def three_prompts() -> pd.DataFrame:
    """One pair (France, capital), three prompts; the gold token is "ĠParis"."""
    return pd.DataFrame({
        "stage": ["prompts"] * 3, "relation_id": ["cap"] * 3, "fact_id": ["fr"] * 3,
        "template_id": ["t1", "t2", "t3"], "subject_name": ["France"] * 3,
        "prompt_id": ["p1", "p2", "p3"], "gold_names": [["Paris"]] * 3,
        "top_tokens": [["ĠParis"], ["Ġparis"], ["ĠParis"]], "top_probs": [[0.9], [0.6], [0.3]],
        "candidate_probs": [[0.9], [0.2], [0.3]], "candidate_tokens": [["ĠParis"]] * 3})


def test_three_prompts_exact_by_hand():
    rows = B.belief_rows(three_prompts())
    # exact token (Sec. 2.1): "ĠParis" right, "Ġparis" wrong -> correct 1, 0, 1
    assert rows["correct"].tolist() == [1.0, 0.0, 1.0]
    s = B.belief_summary(rows, resamples=0, samplings=20_000, seed=1)
    # Acc@1 (Sec. 2.2): one prompt drawn per pair; one pair with 2 of 3 prompts right, so a
    # draw's accuracy is 1 with p = 2/3 and 0 otherwise: mean 2/3 = .6667, min 0, max 1,
    # range 1, population stdev sqrt(p (1 - p)) = sqrt(2/9) = .4714
    f = s["acc1_fluctuation"]
    assert (f["expected"], f["min"], f["max"], f["range"]) == (0.6667, 0.0, 1.0, 1.0)
    assert abs(f["mean"] - 2 / 3) < 0.01 and abs(f["std"] - math.sqrt(2 / 9)) < 0.01
    assert s["accuracy"]["value"] == 0.6667
    # Consist (Eq. 1): of the 3 prompt pairs (1,2) (1,3) (2,3) only (1,3) agree
    # ("ĠParis" = "ĠParis"; "Ġparis" is another token): 1 / (3 * 2 / 2) = .3333
    assert s["consistency"]["value"] == 0.3333
    # Overconf (Eq. 2), M = 10 bins over 3 prompts: 3 bins of one (empty bins dropped),
    # sorted by confidence: (.9 - 1) + (.6 - 0) + (.3 - 1) = -.2, mean over bins -.0667
    assert s["overconfidence"]["value"] == -0.0667
    assert [b["n"] for b in s["overconfidence"]["calibration"].values()] == [1, 1, 1]


def test_three_prompts_normalised_by_hand():
    rows = B.belief_rows(three_prompts(), match="normalised")
    # "Ġparis" without its word-start mark, lower-cased, is "paris" = "Paris" normalised
    assert rows["correct"].tolist() == [1.0, 1.0, 1.0]
    s = B.belief_summary(rows, resamples=0, samplings=1000)
    f = s["acc1_fluctuation"]
    assert (f["mean"], f["std"], f["range"]) == (1.0, 0.0, 0.0)   # every draw is right
    assert s["consistency"]["value"] == 0.3333       # Consist compares tokens, not matches
    # (.9 - 1) + (.6 - 1) + (.3 - 1) = -1.2, / 3 = -.4
    assert s["overconfidence"]["value"] == -0.4


def test_maximum_coverage_takes_the_best_subject_name():
    # pair a: t1 right with name X only; pair b: t2 right with name X only
    rows = pd.DataFrame({"relation_id": ["r"] * 8, "fact_id": ["a"] * 4 + ["b"] * 4,
                         "template_id": ["t1", "t1", "t2", "t2"] * 2,
                         "subject_name": ["X", "Y"] * 4,
                         "correct": [1, 0, 0, 0, 0, 0, 1, 0.]})
    c = B.coverage(rows, resamples=0)
    # footnote 16, a(t, tau) = best name: a(a,t1) = 1, a(a,t2) = 0, a(b,t1) = 0, a(b,t2) = 1
    # -> t1: (1 + 0) / 2 = .5, t2: (0 + 1) / 2 = .5 -> Maximum .5 (first best: t1)
    assert (c["maximum"]["value"], c["maximum"]["best_template"]) == (0.5, {"r": "t1"})
    # names' mean: a(a,t1) = .5, a(b,t2) = .5, others 0 -> t1 .25, t2 .25 -> .25
    assert B.coverage(rows, resamples=0, subject="mean")["maximum"]["value"] == 0.25
    # Average: each pair 1 of 4 prompts -> .25; Oracle: both pairs have a right prompt -> 1
    assert (c["average"]["value"], c["oracle"]["value"]) == (0.25, 1.0)


def test_the_metrics_follow_the_run_config():
    out = three_prompts()
    opts = MetricsOptions(resamples=0, samplings=1000)
    assert belief_metrics(out, None, {}, options=opts)["accuracy"]["value"] == 0.6667
    got = belief_metrics(out, None, {"match": "normalised"}, options=opts)
    assert got["accuracy"]["value"] == 1.0 and got["match"] == "normalised"


def test_skipped_pairs_are_counted_per_relation_and_said():
    nan = float("nan")
    # Reunion's "Saint Denis" (3 prompts, one per template) and Belgium's two languages (1
    # prompt) are no single token of the model
    out = pd.concat([three_prompts(), pd.DataFrame({
        "stage": ["prompts"] * 4, "relation_id": ["cap"] * 3 + ["lang"],
        "fact_id": ["re"] * 3 + ["be"], "template_id": ["t1", "t2", "t3", "l1"],
        "subject_name": ["Reunion"] * 3 + ["Belgium"], "prompt_id": ["p4", "p5", "p6", "p7"],
        "gold_names": [["Saint Denis"]] * 3 + [["Dutch", "French"]],
        "top_tokens": [["ĠParis"]] * 4, "top_probs": [[0.5]] * 4,
        "candidate_probs": [[nan]] * 3 + [[nan, nan]],
        "candidate_tokens": [[None]] * 3 + [[None, None]]})])
    m = belief_metrics(out, None, {}, options=MetricsOptions(resamples=0, samplings=100))
    assert m["pairs"] == 1 and m["pairs_skipped_multi_token"] == 2
    # lang's one pair is skipped: the relation is left out whole, and the note says so
    assert m["skipped"] == {"pairs": 2, "of": 3, "prompts": 4,
                            "reasons": {"multi-token objects": {"cap": 1, "lang": 1}},
                            "relations": ["lang"]}
    assert m["notes"] == [("skipped 2 of 3 pairs (multi-token objects): cap 1 of 2, lang 1 of "
                           "1; relation lang is left out whole")]


def test_outputs_without_candidate_tokens_match_the_single_token_names():
    # runs written before the column: the names the backend found to be one token
    out = three_prompts().drop(columns="candidate_tokens")
    out["top_tokens"] = [["Paris"], ["paris"], ["Paris"]]
    assert B.belief_rows(out)["correct"].tolist() == [1.0, 0.0, 1.0]


def test_an_unknown_match_is_a_user_error():
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="choose exact or normalised"):
        B.belief_rows(three_prompts(), match="fuzzy")
