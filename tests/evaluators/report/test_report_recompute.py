"""Acceptance: every metric in ``factprobe report``'s metrics.json equals an independent
computation (tests/evaluators/independent.py: plain loops, no evaluators import) from the same
held-back outputs tables (tests/evaluators/synth.py, drawn from seeds used nowhere else)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from tests.evaluators import independent as ind
from tests.evaluators import synth

HELD_BACK_SEED = 917_304
TOL = 1.01e-4            # metrics.json rounds to 4 digits


def close(got, want, tol=TOL):
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None
    return got is not None and abs(got - want) <= tol


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("held-back")
    rng = np.random.default_rng(HELD_BACK_SEED)
    tables = {
        ("synth-mc", "zp-lke", "model-a"): synth.mc_outputs(rng),
        ("synth-prompt", "prompt", "model-a"): synth.mc_outputs(rng, method="prompt"),
        ("synth-mp", "belief", "model-a"): synth.belief_outputs(rng),
        ("synth-icl", "belief-icl", "model-a"): synth.icl_outputs(rng),
        ("synth-fktc", "monitor", "model-a"): synth.monitor_outputs(rng),
        ("synth-fktc-compat", "monitor", "model-a"): synth.monitor_outputs(rng, compat=True),
    }
    # a second model on the same facts as the first ZP-LKE run (for the paired comparison)
    b = tables[("synth-mc", "zp-lke", "model-a")].copy()
    noise = rng.normal(0, 1.5, size=len(b))
    b.loc[b["stage"] == "mc", "logprob"] = (b.loc[b["stage"] == "mc", "logprob"]
                                            + noise[b["stage"] == "mc"]).round(6)
    tables[("synth-mc", "zp-lke", "model-b")] = b
    ids = sorted({f for t in tables.values() for f in t["fact_id"].dropna()})
    planted = synth.planted_for(ids, rng)
    model = synth.model_dir(root, planted)
    for (ds, method, label), table in tables.items():
        synth.write_run(root / "results" / ds / method / label, method, table, dataset=ds,
                        model_dir=model)
    out = root / "report"
    from factprobe.cli.app import main
    assert main(["report", "--results", str(root / "results"), "--out", str(out),
                 "--quiet"]) == 0

    def metrics(ds, method, label="model-a"):
        return json.loads((out / "runs" / ds / method / label / "metrics.json").read_text())
    return {"tables": tables, "planted": planted, "metrics": metrics, "out": out}


def check_summary(got: dict, want: dict):
    assert close(got["value"], want["value"]), (got["value"], want["value"])
    assert close(got["macro"], want["macro"])
    assert got["n"] == want["n"]
    assert set(got["per_relation"]) == set(want["per_relation"])
    for rel, v in want["per_relation"].items():
        assert close(got["per_relation"][rel]["value"], v), rel


def check_validity(got: dict, want: dict):
    assert close(got["planted"]["value"], want["planted"])
    assert close(got["held_out"]["value"], want["held_out"])
    assert got["planted"]["n"] == want["n_planted"]
    assert got["held_out"]["n"] == want["n_held_out"]
    assert close(got["difference"]["value"], want["planted"] - want["held_out"], 2.1e-4)
    assert close(got["auroc"]["value"], want["auroc"])
    for k in ("planted", "held_out", "auroc"):
        assert got[k]["ci_low"] <= got[k]["value"] + TOL <= got[k]["ci_high"] + 2 * TOL


def test_zp_lke(world):
    table = world["tables"][("synth-mc", "zp-lke", "model-a")]
    want = ind.zp_lke(table, world["planted"])
    got = world["metrics"]("synth-mc", "zp-lke")
    for name in ("mc_accuracy", "probability_mass", "response_accuracy"):
        check_summary(got[name], want[name])
    for k, v in want["accuracy_at_k"].items():
        assert close(got["accuracy_at_k"][k]["value"], v["value"]), k
        assert close(got["accuracy_at_k"][k]["share"], v["share"]), k
    check_validity(got["validity"], want["validity"])
    # the bootstrap interval follows its documented recipe exactly
    ci = want["ci"]
    assert close(got["mc_accuracy"]["ci_low"], ci["micro"][0])
    assert close(got["mc_accuracy"]["ci_high"], ci["micro"][1])
    assert close(got["mc_accuracy"]["macro_ci_low"], ci["macro"][0])
    for rel, (lo, hi) in ci["per_relation"].items():
        assert close(got["mc_accuracy"]["per_relation"][rel]["ci_low"], lo)
        assert close(got["mc_accuracy"]["per_relation"][rel]["ci_high"], hi)
    # accuracy by example count: one entry per n
    assert set(got["mc_accuracy_by_n"]) == {"2", "5"}


def test_zp_lke_compat_counts_ties_against_the_gold(world):
    table = world["tables"][("synth-mc", "zp-lke", "model-a")]
    from factprobe.evaluators.metrics.suites.zp_lke import zp_lke_metrics
    got = zp_lke_metrics(table, None, {"compat": True})
    want = ind.zp_lke(table, None, compat=True)
    check_summary(got["mc_accuracy"], want["mc_accuracy"])
    default = ind.zp_lke(table, None)["mc_accuracy"]["value"]
    assert want["mc_accuracy"]["value"] < default       # the table has ties with the gold


def test_prompt(world):
    table = world["tables"][("synth-prompt", "prompt", "model-a")]
    want = ind.zp_lke(table, world["planted"])
    got = world["metrics"]("synth-prompt", "prompt")
    for name in ("mc_accuracy", "probability_mass", "response_accuracy"):
        check_summary(got[name], want[name])
    check_validity(got["validity"], want["validity"])


def test_belief(world):
    table = world["tables"][("synth-mp", "belief", "model-a")]
    want = ind.belief(table, world["planted"])
    got = world["metrics"]("synth-mp", "belief")
    check_summary(got["accuracy"], want["accuracy"])
    check_summary(got["consistency"], want["consistency"])
    check_summary(got["coverage"]["average"], want["average"])
    check_summary(got["coverage"]["oracle"], want["oracle"])
    assert close(got["coverage"]["maximum"]["value"], want["maximum"])
    for rel, v in want["maximum_per_relation"].items():
        assert close(got["coverage"]["maximum"]["per_relation"][rel]["value"], v)
    assert close(got["overconfidence"]["value"], want["overconf"])
    curve = got["overconfidence"]["calibration"]
    assert len(curve) == len(want["calibration"])
    for (c, a, n), key in zip(want["calibration"], sorted(curve)):
        assert close(curve[key]["confidence"], c) and close(curve[key]["accuracy"], a)
        assert curve[key]["n"] == n
    assert close(got["bias"]["single_prompt"], want["bias"]["single_prompt"])
    assert close(got["bias"]["multi_prompt"], want["bias"]["multi_prompt"])
    for rel, (single, multi) in want["bias"]["per_relation"].items():
        assert close(got["bias"]["per_relation"][rel]["single_prompt"], single)
        assert close(got["bias"]["per_relation"][rel]["multi_prompt"], multi)
    assert got["pairs_skipped_multi_token"] == want["skipped_pairs"] > 0
    assert got["skipped"]["pairs"] == want["skipped_pairs"]
    assert sum(got["skipped"]["reasons"]["multi-token objects"].values()) == want["skipped_pairs"]
    check_validity(got["validity"], want["validity"])
    fl = got["acc1_fluctuation"]
    n = fl["samplings"]
    assert n == 50_000 and close(fl["expected"], want["acc1_expected"])
    assert abs(fl["mean"] - want["acc1_expected"]) <= 5 * want["acc1_std_theory"] / n ** .5 + TOL
    assert abs(fl["std"] - want["acc1_std_theory"]) <= 0.03 * want["acc1_std_theory"] + TOL
    assert close(fl["range"], fl["max"] - fl["min"], 2.1e-4)
    # (the hand-worked Acc@1 fluctuation, Consist and Overconf are in
    # tests/evaluators/metrics/test_belief_by_hand.py)


def test_belief_icl(world):
    table = world["tables"][("synth-icl", "belief-icl", "model-a")]
    want = ind.belief_icl(table, world["planted"])
    got = world["metrics"]("synth-icl", "belief-icl")["contexts"]
    assert set(got) == set(want) == {"zero", "4-template"}
    for ctx, w in want.items():
        g = got[ctx]
        check_summary(g["accuracy"], w["accuracy"])
        check_summary(g["consistency"], w["consistency"])
        check_summary(g["coverage"]["oracle"], w["oracle"])
        assert close(g["coverage"]["maximum"]["value"], w["maximum"])
        assert close(g["one_word_rate"]["value"], w["one_word_rate"])
        assert g["sampled_prompts"] == w["sampled_prompts"] > 0
        assert close(g["overconfidence"]["value"], w["overconf"])
        check_validity(g["validity"], w["validity"])
    # lemma matching mattered: some answers are right only after lemmatisation
    greedy = table[table["stage"] == "greedy"]
    assert any(t.strip().lower() == "guitars" and g == "guitar"
               for t, g in zip(greedy["text"], greedy["gold"]))


@pytest.mark.parametrize("ds", ["synth-fktc", "synth-fktc-compat"])
def test_monitor(world, ds):
    table = world["tables"][(ds, "monitor", "model-a")]
    want = ind.monitor(table, world["planted"])
    got = world["metrics"](ds, "monitor")
    assert got["facts_with_anchor"] == want["facts_with_anchor"] > 0
    assert close(got["monitor"]["value"], want["monitor"])
    for rel, v in want["per_relation"].items():
        assert close(got["monitor"]["per_relation"][rel]["value"], v)
    # a relation where no anchor matched: present, null, with the reason
    nulls = [rel for rel, v in want["per_relation"].items() if v is None]
    assert nulls and all("no primary anchor" in got["pfd"]["per_relation"][rel]["reason"]
                         for rel in nulls)
    assert got["notes"][:-1] == [f"no anchor matched in relation {rel} "
                                 f"({sum(1 for f in set(table[table.relation_id == rel].fact_id))} "
                                 f"facts): MONITOR/PFD/IRD are null" for rel in nulls]
    # the facts the distances leave out: every fact but those whose anchor matched
    left_out = table["fact_id"].nunique() - want["facts_with_anchor"]
    assert got["skipped"]["facts"] == left_out and got["skipped"]["relations"] == nulls
    in_nulls = table[table.relation_id.isin(nulls)]["fact_id"].nunique()
    assert got["notes"][-1].startswith(f"MONITOR/PFD/IRD leave out {left_out - in_nulls} facts")
    assert close(got["pfd"]["value"], want["pfd"])
    assert close(got["ird"]["value"], want["ird"])
    assert close(got["anchor_probability"]["value"], want["anchor_probability"])
    assert close(got["anchor_match"]["value"], want["anchor_match"])
    fa = got["frame_accuracy"]
    assert close(fa["avg"]["value"], want["frame_avg"])
    assert close(fa["max"], want["frame_max"]) and close(fa["min"], want["frame_min"])
    check_validity(got["validity"], want["validity"])


def test_monitor_alphas_are_parameters(world):
    table = world["tables"][("synth-fktc", "monitor", "model-a")]
    from factprobe.evaluators.metrics.suite import MetricsOptions
    from factprobe.evaluators.metrics.suites.monitor import monitor_metrics
    got = monitor_metrics(table, None, {}, options=MetricsOptions(alphas=(1.0, 0.0, 0.0),
                                                                  resamples=0))
    want = ind.monitor(table, None, alphas=(1.0, 0.0, 0.0))
    assert close(got["monitor"]["value"], want["monitor"])
    # the alphas' effect on hand-worked values: tests/evaluators/metrics/test_monitor_paper.py


def sign_flip_p(diffs: list[float]) -> tuple[float, int]:
    """Two-sided exact sign-flip p-value of paired differences, and how many differ."""
    nz = [round(d, 9) for d in diffs if abs(d) > 1e-12]
    dist = {0.0: 1}                       # sum of s_i d_i -> number of flips giving it
    for d in nz:
        nxt: dict = {}
        for total, ways in dist.items():
            for v in (round(total + d, 9), round(total - d, 9)):
                nxt[v] = nxt.get(v, 0) + ways
        dist = nxt
    observed = abs(sum(nz))
    hits = sum(w for v, w in dist.items() if abs(v) >= observed - 1e-9)
    return hits / 2 ** len(nz), len(nz)


def test_paired_comparison_and_subsumption(world):
    comp = pd.read_csv(world["out"] / "tables" / "comparisons.csv")
    row = comp[comp["dataset"] == "synth-mc"].iloc[0]
    a = ind.zp_lke(world["tables"][("synth-mc", "zp-lke", "model-a")], None)
    b = ind.zp_lke(world["tables"][("synth-mc", "zp-lke", "model-b")], None)
    facts = sorted(a["per_fact"])
    assert row["n"] == len(facts)
    diffs = [a["per_fact"][f] - b["per_fact"][f] for f in facts]
    assert close(row["difference"], ind.mean(diffs))
    assert row["a_only"] == sum(1 for f in facts if a["per_fact"][f] > .5 >= b["per_fact"][f])
    # the sign-flip p-value, exact, from the distribution of sum(s_i d_i) over all 2^m flips
    # of the m differing facts, built by convolution (differences are multiples of 1/seeds)
    exact, m = sign_flip_p(diffs)
    assert row["p_value"] == round(exact, 4) if 2 ** m <= 10_000 else \
        abs(row["p_value"] - exact) < 0.02            # 10,000 random flips: s.e. <= 0.005
    assert row["ci_low"] <= row["difference"] <= row["ci_high"]
    sub = pd.read_csv(world["out"] / "tables" / "subsumption-synth-mc.csv", index_col=0)
    ka, kb = a["known"], b["known"]
    # the paper's reading (Tables 2, 11): eta within each relation, averaged over the
    # relations where the row knows a fact
    rel = dict(zip(*(world["tables"][("synth-mc", "zp-lke", "model-a")][c]
                     for c in ("fact_id", "relation_id"))))

    def eta(x, y):
        rates = [len({f for f in x & y if rel[f] == r}) / len({f for f in x if rel[f] == r})
                 for r in sorted({rel[f] for f in x})]
        return sum(rates) / len(rates)
    assert close(sub.loc["zp-lke:model-a", "zp-lke:model-b"], eta(ka, kb))
    assert close(sub.loc["zp-lke:model-b", "zp-lke:model-a"], eta(kb, ka))


def test_leaderboard_and_summary_agree_with_run_metrics(world):
    board = pd.read_csv(world["out"] / "tables" / "leaderboard.csv")
    got = world["metrics"]("synth-mc", "zp-lke")
    row = board[(board["dataset"] == "synth-mc") & (board["model"] == "model-a")
                & (board["metric"] == "mc_accuracy")].iloc[0]
    assert close(row["value"], got["mc_accuracy"]["value"])
    summary = json.loads((world["out"] / "metrics.json").read_text())
    assert summary["synth-mc"]["zp-lke"]["model-a"]["mc_accuracy"]["value"] == \
        got["mc_accuracy"]["value"]
    rel = pd.read_csv(world["out"] / "tables" / "per_relation.csv")
    icl = rel[(rel["method"] == "belief-icl") & (rel["setting"] == "zero")]
    assert len(icl) == 2 and icl["value"].notna().all()
