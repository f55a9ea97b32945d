"""Accuracy@K (Wu et al., App. D) worked by hand, under both of the appendix's readings: its set
D_K = {c | pred(c) >= K} (the default) and its prose, "confidence levels > threshold K"."""
from __future__ import annotations

import math

import pandas as pd

from factprobe.evaluators.metrics import zp_lke as Z
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.suites.zp_lke import zp_lke_metrics


def two_choice_outputs() -> pd.DataFrame:
    # question  P(option 0), P(option 1)  gold  prediction            correct  pred(c) = top prob
    # a         0.5, 0.5                  0     0 (tie: lowest index) yes      0.5
    # b         0.5, 0.5                  1     0 (tie: lowest index) no       0.5
    # c         0.8, 0.2                  0     0                     yes      0.8
    # d         0.3, 0.7                  1     1                     yes      0.7
    rows = []
    for fid, probs, gold in (("a", (.5, .5), 0), ("b", (.5, .5), 1), ("c", (.8, .2), 0),
                             ("d", (.3, .7), 1)):
        for k, p in enumerate(probs):
            rows.append({"stage": "mc", "relation_id": "r", "fact_id": fid, "option": k,
                         "is_gold": k == gold, "logprob": math.log(p) - 2.0})
    return pd.DataFrame(rows)


def test_formula_and_text_readings_by_hand():
    preds = Z.mc_predictions(two_choice_outputs())
    assert preds["correct"].tolist() == [True, False, True, True]
    formula = Z.accuracy_at_k(preds, thresholds=(0.5, 0.7, 0.8), resamples=0)
    text = Z.accuracy_at_k(preds, thresholds=(0.5, 0.7, 0.8), rule="text", resamples=0)
    # K = 0.5: >= keeps a, b, c, d -> 3/4 right, share 4/4; > keeps c, d -> 2/2, share 2/4
    assert (formula["0.5"]["value"], formula["0.5"]["share"]) == (0.75, 1.0)
    assert (text["0.5"]["value"], text["0.5"]["share"]) == (1.0, 0.5)
    # K = 0.7: >= keeps c, d (0.7 is kept) -> 1.0, share 0.5; > keeps c only -> 1.0, share 0.25
    assert (formula["0.7"]["n"], formula["0.7"]["share"]) == (2, 0.5)
    assert (text["0.7"]["n"], text["0.7"]["share"]) == (1, 0.25)
    # K = 0.8: >= keeps c -> 1.0, share 0.25; > keeps none: no value, share 0
    assert (formula["0.8"]["value"], formula["0.8"]["share"]) == (1.0, 0.25)
    assert (text["0.8"]["value"], text["0.8"]["n"], text["0.8"]["share"]) == (None, 0, 0.0)


def test_the_method_flag_picks_the_reading():
    opts = MetricsOptions(resamples=0, thresholds=(0.5,))
    out = zp_lke_metrics(two_choice_outputs(), None, {}, options=opts)
    assert out["accuracy_at_k"]["0.5"]["value"] == 0.75 and out["accuracy_at_k_rule"] == "formula"
    out = zp_lke_metrics(two_choice_outputs(), None, {"accuracy_at_k": "text"}, options=opts)
    assert out["accuracy_at_k"]["0.5"]["value"] == 1.0 and out["accuracy_at_k_rule"] == "text"
