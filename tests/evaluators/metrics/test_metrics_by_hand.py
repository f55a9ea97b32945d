"""Every metric against numbers worked out by hand (in the comments) on tiny tables."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics import belief as B
from factprobe.evaluators.metrics import belief_icl as BI
from factprobe.evaluators.metrics import lemmas
from factprobe.evaluators.metrics import monitor as MO
from factprobe.evaluators.metrics import zp_lke as Z
from factprobe.evaluators.metrics.stats import auroc, bootstrap, paired_test
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.suites.monitor import monitor_metrics
from factprobe.evaluators.metrics.validity import validity

LN = math.log


def mc_table():
    # fact a (r): probabilities 0.5 / 0.3 / 0.2, gold = option 0 -> right, gold prob 0.5
    # fact b (r): 0.1 / 0.6 / 0.3, gold = option 2 -> wrong, gold prob 0.3
    # fact c (s): 0.4 / 0.4 / 0.2, gold = option 1, tie with option 0 -> wrong (lowest index
    #             wins), gold prob 0.4; top prob 0.4
    rows = []
    for rel, fid, probs, gold in (("r", "a", (.5, .3, .2), 0), ("r", "b", (.1, .6, .3), 2),
                                  ("s", "c", (.4, .4, .2), 1)):
        for k, p in enumerate(probs):
            rows.append({"relation_id": rel, "fact_id": fid, "option": k, "is_gold": k == gold,
                         "logprob": LN(p) - 3.0})       # any shift: normalised away
    return pd.DataFrame(rows)


def test_multiple_choice_by_hand():
    preds = Z.mc_predictions(mc_table())
    assert preds["correct"].tolist() == [True, False, False]
    assert preds["gold_prob"].round(6).tolist() == [0.5, 0.3, 0.4]
    acc = Z.mc_accuracy(preds, resamples=0)
    assert acc["value"] == 0.3333 and acc["macro"] == 0.25        # (1/2 + 0/1) / 2
    assert acc["per_relation"]["r"]["value"] == 0.5
    assert Z.probability_mass(preds, resamples=0)["value"] == 0.4  # (0.5 + 0.3 + 0.4) / 3
    # Accuracy@K: top probs 0.5, 0.6, 0.4; K = 0.5 keeps a (right) and b (wrong)
    at = Z.accuracy_at_k(preds, thresholds=(0.5, 0.6), resamples=0)
    assert (at["0.5"]["value"], at["0.5"]["share"]) == (0.5, 0.6667)
    assert (at["0.6"]["value"], at["0.6"]["n"]) == (0.0, 1)


def test_ties_against_gold_only_with_compat():
    t = mc_table()
    t.loc[(t.fact_id == "c") & (t.option == 0), "is_gold"] = True
    t.loc[(t.fact_id == "c") & (t.option == 1), "is_gold"] = False
    assert bool(Z.mc_predictions(t)["correct"].iloc[2]) is True          # the tie goes to 0
    assert bool(Z.mc_predictions(t, ties_against_gold=True)["correct"].iloc[2]) is False


def test_question_without_one_gold_is_a_user_error():
    t = mc_table()
    t.loc[t.fact_id == "b", "is_gold"] = False
    with pytest.raises(UserError, match="0 gold options"):
        Z.mc_predictions(t)


def test_response_accuracy_by_hand():
    g = pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": list("abcd"),
                      "gold": ["1879", "Paris", "New York", "Oslo"],
                      "text": [" 1879, Niels", " 18790", " new york.", " Osloer"]})
    # right: a (word), c (case, punctuation); wrong: b (part of a number), d (part of a word)
    assert Z.response_accuracy(g, resamples=0)["value"] == 0.5


def test_subsumption_by_hand():
    # A knows a, b, c; B knows b, c, d, e: eta(A|B) = 2/3, eta(B|A) = 2/4
    m = Z.subsumption_matrix({"A": {"a", "b", "c"}, "B": {"b", "c", "d", "e"}})
    assert round(m.loc["A", "B"], 4) == 0.6667 and m.loc["B", "A"] == 0.5
    known = Z.known_facts(pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": ["a"] * 3 + ["b"],
                                        "seed": [0, 1, 2, 0], "correct": [1, 1, 0, 0],
                                        "gold_prob": [0.5] * 4}))
    assert known.to_dict() == {"a": True, "b": False}                  # 2 of 3 seeds: known


def prompts(preds, correct, conf=None, pair="a", rel="r", templates=None):
    n = len(preds)
    return pd.DataFrame({"relation_id": [rel] * n, "fact_id": [pair] * n,
                         "template_id": templates or [f"t{i}" for i in range(n)],
                         "subject_name": ["X"] * n, "prompt_id": [f"{pair}{i}" for i in range(n)],
                         "prediction": preds, "correct": [float(c) for c in correct],
                         "confidence": conf or [0.5] * n})


def test_acc1_fluctuation_by_hand():
    # pair a: 1 of 2 prompts right; b: always right; c: never. One draw = (X + 1) / 3 with
    # X ~ Bernoulli(1/2): values 1/3 and 2/3, mean 1/2, sd 1/6, range 1/3.
    rows = pd.concat([prompts(["x", "y"], [1, 0], pair="a"), prompts(["x"], [1], pair="b"),
                      prompts(["x", "y", "z"], [0, 0, 0], pair="c")])
    f = B.acc1_fluctuation(rows, samplings=20_000, seed=3)
    assert (f["min"], f["max"], f["range"], f["expected"]) == (0.3333, 0.6667, 0.3333, 0.5)
    assert abs(f["mean"] - 0.5) < 0.005 and abs(f["std"] - 1 / 6) < 0.003
    # deterministic pairs: no fluctuation at all
    fixed = B.acc1_fluctuation(pd.concat([prompts(["x"], [1], pair="b"),
                                          prompts(["y"], [0], pair="c")]), samplings=100)
    assert (fixed["mean"], fixed["std"], fixed["range"]) == (0.5, 0.0, 0.0)


def test_consistency_by_hand():
    # pair a: x x y -> 1 agreeing of 3 prompt pairs; pair b: z z z z -> 6 of 6
    rows = pd.concat([prompts(["x", "x", "y"], [1, 1, 0], pair="a"),
                      prompts(["z"] * 4, [0] * 4, pair="b"), prompts(["q"], [1], pair="c")])
    c = B.consistency(rows).set_index("fact_id")["consist"]
    assert round(c["a"], 4) == 0.3333 and c["b"] == 1.0 and "c" not in c   # c: one prompt
    # two-directional lemma matching (BELIEF-ICL): "guitars" ~ "a guitar" ~ "Guitar." but
    # not "Paris": 3 of 6 pairs
    icl = prompts(["guitars", " a guitar", "Guitar.", "Paris"], [1, 1, 1, 0])
    got = B.consistency(icl, same=lemmas.same_answer)["consist"].iloc[0]
    assert got == 0.5


def test_overconfidence_by_hand():
    # confidences 0.9 0.8 0.6 0.4 0.3 0.1, correct 1 0 1 0 0 0; 3 bins of 2:
    # (0.85 - 0.5) + (0.5 - 0.5) + (0.2 - 0) -> mean 0.55 / 3 = 0.1833
    o = B.overconfidence([0.3, 0.9, 0.1, 0.6, 0.8, 0.4], [0, 1, 0, 1, 0, 0], bins=3)
    assert o["value"] == 0.1833
    assert o["calibration"]["01"] == {"accuracy": 0.5, "confidence": 0.85, "n": 2}
    # 7 prompts in 3 bins: sizes 3, 2, 2 (equal up to one)
    o = B.overconfidence(np.linspace(0.1, 0.7, 7), [1] * 7, bins=3)
    assert [v["n"] for v in o["calibration"].values()] == [3, 2, 2]


def test_bias_level_by_hand():
    nan = float("nan")
    cf = pd.DataFrame({"relation_id": ["r"] * 4, "template_id": ["t1", "t1", "t2", "t2"],
                       # t1, two content-free inputs: (0.2, 0.1, 0.1) -> (.5,.25,.25) and
                       # (0.5, 0.25, 0.25) -> the same; t2: uniform
                       "candidate_probs": [[0.2, 0.1, 0.1, nan], [0.5, 0.25, 0.25, nan],
                                           [0.1, 0.1, 0.1, nan], [0.3, 0.3, 0.3, nan]]})
    b = B.bias_level(cf)
    h = -(0.5 * LN(0.5) + 2 * 0.25 * LN(0.25))                # 1.0397
    t1 = 1 - h / LN(3)                                         # 0.0536
    assert b["per_relation"]["r"]["candidates"] == 3
    assert b["single_prompt"] == round((t1 + 0.0) / 2, 4)      # t2 is uniform: bias 0
    avg = np.array([(0.5 + 1 / 3) / 2, (0.25 + 1 / 3) / 2, (0.25 + 1 / 3) / 2])
    multi = 1 + (avg * np.log(avg)).sum() / LN(3)
    assert b["multi_prompt"] == round(multi, 4) and b["multi_prompt"] < b["single_prompt"]


def test_coverage_by_hand():
    # relation r, templates t1 t2; pair a: t1 right, t2 wrong; pair b: both wrong;
    # pair c: t2 right (two names: X right, Y wrong -> a(c, t2) = 0.5 as the names' mean,
    # 1 as the best name, footnote 16)
    rows = pd.DataFrame({"relation_id": ["r"] * 7, "fact_id": ["a", "a", "b", "b", "c", "c", "c"],
                         "template_id": ["t1", "t2", "t1", "t2", "t1", "t2", "t2"],
                         "subject_name": ["X"] * 6 + ["Y"], "correct": [1, 0, 0, 0, 0, 1, 0.]})
    c = B.coverage(rows, resamples=0)
    assert c["average"]["value"] == 0.25          # (0.5 + 0 + 0.25) / 3
    assert c["maximum"]["value"] == 0.3333        # t1: 1/3, t2: 1/3 (best name) -> 1/3
    assert c["maximum"]["best_template"] == {"r": "t1"}    # the first of the tied
    mean = B.coverage(rows, resamples=0, subject="mean")["maximum"]
    assert mean["value"] == 0.3333 and mean["best_template"] == {"r": "t1"}  # t2: 0.5/3
    assert c["oracle"]["value"] == 0.6667         # a and c have a right prompt
    assert B.sharing_rate(B.covered_units(rows), {("a", "t1", "X")}) == 0.5


def test_icl_matching_confidence_and_one_word_by_hand():
    assert lemmas.matches_gold(" Guitars.", ["guitar"])
    assert not lemmas.matches_gold(" guitar", ["a guitar"])               # one-directional
    assert lemmas.same_answer(" guitar", "a guitar")                      # two-directional
    greedy = pd.DataFrame({"context": ["zero"], "prompt_id": ["p"], "relation_id": ["r"],
                           "fact_id": ["a"], "prediction": [" the mice"], "correct": [1.0]})
    smp = pd.DataFrame({"stage": ["samples"] * 5, "context": ["zero"] * 5,
                        "prompt_id": ["p"] * 5, "fact_id": ["a"] * 5, "gold_names": [["mouse"]] * 5,
                        "text": [" mouse", "Mice.", " cat", " the mouse", ""]})
    c = BI.sample_confidence(smp, greedy).iloc[0]
    # vs "the mice" -> (the, mouse): "mouse" yes, "Mice." yes, "cat" no, "the mouse" yes,
    # "" never matches: 3 / 5; samples naming the gold: 3 / 5
    assert c["confidence"] == 0.6 and c["gold_share"] == 0.6
    rows = pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": ["a", "a", "b", "b"],
                         "one_word": [float(BI.one_word(t)) for t in
                                      (" Paris.", " New York", "", "Jean-Paul")]})
    assert BI.one_word_rate(rows, resamples=0)["value"] == 0.5


def monitor_table():
    # one fact: anchor " Paris." generated as (Par, is, .) with p (0.9, 0.5, 0.99); the
    # object's tokens (Par, is) give P+ = (0.9, 0.5), L = 2 (the "." is not the object's);
    # paraphrases (0.8, 0.5), (0.9, 0.3); negative (0.1, 0.5).
    # PFD = ((0.1 + 0) / 2 + (0 + 0.2) / 2) / 2 = 0.075,
    # IRD = (0.8 + 0) / 2 = 0.4, summand = sqrt((0.075^2 + 0.4^2 + 0.075 * 0.4) / 3) = 0.25536,
    # MONITOR = 0.25536 / 0.7 = 0.3648
    rows = [{"stage": "anchor", "relation_id": "r", "fact_id": "a", "gold": "Paris",
             "frame": "positive", "index": 0, "text": " Paris.", "token_ids": [5, 6, 9],
             "token_logprobs": [LN(0.9), LN(0.5), LN(0.99)]},
            {"stage": "object", "relation_id": "r", "fact_id": "a", "gold": "Paris",
             "frame": "positive", "index": 0, "token_logprobs": [LN(0.9), LN(0.5)],
             "n_paraphrases": 2, "n_negatives": 1},
            {"stage": "anchor", "relation_id": "r", "fact_id": "b", "gold": "Oslo",
             "frame": "positive", "index": 0, "text": " Rome", "token_ids": [7],
             "token_logprobs": [LN(0.4)]}]
    for frame, idx, probs in (("paraphrase", 0, (0.8, 0.5)), ("paraphrase", 1, (0.9, 0.3)),
                              ("negative", 0, (0.1, 0.5))):
        rows.append({"stage": "foreign", "relation_id": "r", "fact_id": "a", "gold": "Paris",
                     "frame": frame, "index": idx, "token_logprobs": [LN(p) for p in probs]})
    for fid, gold, texts in (("a", "Paris", [" Paris", " Paris, France", " Rome"]),
                             ("b", "Oslo", [" Oslo", " Osloer", " Oslo."])):
        for (frame, idx), text in zip((("paraphrase", 0), ("paraphrase", 1), ("negative", 0)),
                                      texts):
            rows.append({"stage": "frames", "relation_id": "r", "fact_id": fid, "gold": gold,
                         "frame": frame, "index": idx, "text": text})
    return pd.DataFrame(rows)


def test_monitor_by_hand():
    m = monitor_metrics(monitor_table(), None, {}, options=MetricsOptions(resamples=0))
    assert m["facts"] == 2 and m["facts_with_anchor"] == 1
    assert m["pfd"]["value"] == 0.075 and m["ird"]["value"] == 0.4
    assert m["monitor"]["value"] == 0.3648 and m["anchor_probability"]["value"] == 0.7
    assert m["anchor_match"]["value"] == 0.5
    # frames: paraphrase-0 2/2, paraphrase-1 1/2 ("Paris, France" yes, "Osloer" no),
    # negative-0 1/2 -> avg 4/6, max 1, min 0.5
    fa = m["frame_accuracy"]
    assert (fa["avg"]["value"], fa["max"], fa["min"]) == (0.6667, 1.0, 0.5)
    assert fa["per_frame"] == {"r": {"negative-0": 0.5, "paraphrase-0": 1.0,
                                     "paraphrase-1": 0.5}}


def test_monitor_missing_foreign_rows_is_a_user_error():
    t = monitor_table()
    with pytest.raises(UserError, match="incomplete"):
        MO.per_fact(t[~((t.stage == "foreign") & (t.frame == "negative"))])
    with pytest.raises(UserError, match="no foreign-anchor rows"):
        MO.per_fact(t[t.stage != "foreign"])


def test_validity_and_auroc_by_hand():
    # planted scores 0.9 0.4 0.6, held-out 0.4 0.2: pairs won 2 + 1.5 (tie) + 2 = 5.5 of 6
    assert auroc([0.9, 0.4, 0.6], [0.4, 0.2]) == pytest.approx(5.5 / 6)
    facts = pd.DataFrame({"fact_id": list("abcde"), "correct": [1.0, 0.0, 1.0, 0.0, 0.0],
                          "p": [0.9, 0.4, 0.6, 0.4, 0.2]})
    v = validity(facts, {"planted": ["a", "b", "c"], "held_out": ["d", "e"]}, score="p",
                 resamples=500)
    assert (v["planted"]["value"], v["held_out"]["value"], v["difference"]["value"]) == \
        (0.6667, 0.0, 0.6667)
    assert v["auroc"]["value"] == 0.9167
    assert v["difference"]["ci_low"] <= 0.6667 <= v["difference"]["ci_high"]
    assert validity(facts, None) == {}


def test_bootstrap_and_paired_test():
    b = bootstrap([1, 0] * 50, ["r"] * 100, resamples=2000, seed=1)
    # a proportion of 0.5 over 100 facts: standard error 0.05, interval about +-0.098
    assert b["value"] == 0.5 and 0.39 < b["ci_low"] < 0.42 and 0.58 < b["ci_high"] < 0.61
    assert bootstrap([1, 0] * 50, ["r"] * 100, resamples=2000, seed=1) == b   # seeded
    # paired: A right on 8 facts where B is wrong, never the reverse, 12 ties; exact sign-flip
    # over the 8 differing facts: only all + or all - reach |sum| = 8, p = 2 / 2^8 = 0.0078
    a = [1] * 8 + [1] * 6 + [0] * 6
    bb = [0] * 8 + [1] * 6 + [0] * 6
    t = paired_test(a, bb, resamples=200, seed=0)
    assert t["difference"] == 0.4 and (t["a_only"], t["b_only"]) == (8, 0)
    assert t["p_value"] == 0.0078
    assert paired_test(a, a)["p_value"] == 1.0


def test_paired_sign_flip_p_value_enumerated_by_hand():
    # per-fact values (facts averaged over seeds can be fractions):
    #   a = 1, 1, 0, 1,   1      b = 0, 0, 1, 0.5, 1     d = a - b = 1, 1, -1, 0.5, 0
    # observed |sum d| = 1.5; the last fact (d = 0) flips to itself. The 2^4 = 16 flips of
    # (1, 1, -1, 0.5): s1 + s2 + s3 takes 3 (1 way), 1 (3 ways), -1 (3), -3 (1), then +-0.5:
    #   3 -> |3.5|, |2.5|: both >= 1.5  (2 flips)     1 -> |1.5| yes, |0.5| no  (3 flips)
    #  -1 -> |-0.5| no, |-1.5| yes      (3 flips)    -3 -> |-2.5|, |-3.5|       (2 flips)
    # p = (2 + 3 + 3 + 2) / 16 = 10 / 16 = 0.625
    t = paired_test([1, 1, 0, 1, 1], [0, 0, 1, 0.5, 1], resamples=0)
    assert (t["difference"], t["p_value"], t["a_only"], t["b_only"]) == (0.3, 0.625, 3, 1)
    # 20 facts all won by A: 2^20 flips are more than 10,000, so 10,000 random flips; only 2
    # of the 2^20 reach |sum| = 20, so (seeded) none is drawn and p = (1 + 0) / (1 + 10,000)
    big = paired_test([1] * 20, [0] * 20, resamples=0)
    assert big["p_value"] == 0.0001


def test_missing_belief_and_icl_rows_are_user_errors():
    from factprobe.evaluators.metrics.suites.belief import belief_metrics
    from factprobe.evaluators.metrics.suites.belief_icl import belief_icl_metrics
    from tests.evaluators import synth
    rng = np.random.default_rng(3)
    out = synth.belief_outputs(rng, relations=1)
    opts = MetricsOptions(resamples=0, samplings=10)
    assert belief_metrics(out, None, {}, options=opts)["pairs"] > 0
    prompts = out[out["stage"] == "prompts"]
    first = prompts.iloc[0]
    one_template = (out["fact_id"] == first["fact_id"]) & \
        (out["template_id"] == first["template_id"])
    with pytest.raises(UserError, match="templates"):
        belief_metrics(out[~one_template], None, {}, options=opts)
    no_cf = (out["stage"] == "content_free") & (out["template_id"] == first["template_id"])
    with pytest.raises(UserError, match="content-free"):
        belief_metrics(out[~no_cf], None, {}, options=opts)
    icl = synth.icl_outputs(rng, relations=1)
    g = icl[(icl["stage"] == "greedy") & (icl["context"] == "zero")].index[0]
    with pytest.raises(UserError, match="context zero has"):
        belief_icl_metrics(icl.drop(index=g), None, {}, options=opts)
