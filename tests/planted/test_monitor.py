"""MONITOR on a planted model: validity (planted facts' anchors match the gold, held-out ones'
do not; the subject-blind null near chance; a model that learned nothing fails), and PFD / IRD
against a known ranking: facts taught in every MONITOR frame against facts taught only the base
question and only after their own object (``frames.partial_facts`` in planted.json)."""
from __future__ import annotations

import pandas as pd
import pytest

from factprobe.evaluators.metrics import monitor as MO
from factprobe.probes.subject_blind import COLUMN
from tests.planted.conftest import (
    assert_invalid,
    assert_valid,
    evaluate,
    planted,
    validity_of,
)


@pytest.fixture(scope="module")
def runs(world, causal_model, blank_model, tmp_path_factory):
    out = {}
    for name, model in (("planted", causal_model), ("blank", blank_model)):
        out[name] = evaluate("monitor", world["fktc"], model,
                             tmp_path_factory.mktemp("monitor") / name)
    return out


def test_planted_facts_score_above_held_out(runs):
    assert_valid(validity_of(runs["planted"]))
    assert_valid(validity_of(runs["planted"], "validity_frames"))


def test_a_model_that_learned_nothing_fails(runs):
    assert_invalid(validity_of(runs["blank"]))


@pytest.mark.xfail(strict=True, reason=(
    "open (issue 28): since held-out subjects are taught mention facts in every frame, the "
    "tiny world's partly taught facts no longer all get their anchor (7 of 8) and their mean "
    "PFD falls below the fully taught ones' (0.10 vs 0.19; IRD keeps its order); the world "
    "has to be re-measured. strict: this fails loudly once the ranking holds again"))
def test_partly_taught_facts_are_less_reliable(runs, world, causal_model):
    """The paper's Eqs. 1-3: PFD_c = (1/R) sum_j (1/L) sum_l |P+_l - P_j,l| is how far the
    probability of the fact's own answer moves from the positive prompt "y. Q0(x)" to each
    paraphrase Q_j(x); IRD_c the same to each misleading prompt "y-. Q0(x)"; MONITOR
    = sum_c sqrt(PFD^2/3 + IRD^2/3 + PFD IRD/3) / sum_c mean_l P+_l, lower = more reliable.

    A fully taught fact was shown its object after every paraphrase and after misleading
    prefixes, so P_j and P-_m are as high as P+ (measured: about 0.87 under each of them against
    P+ 0.89) and PFD, IRD are small. A partly taught fact was shown the positive prompt's frame
    only (its base question, after its own object): the paraphrases and the misleading prefix
    carry only what transfers from its lists and statements, so P_j and P-_m fall further below
    P+ (about 0.79 against 0.83) and PFD, IRD and MONITOR come out larger (measured 0.11 vs
    0.05, 0.04 vs 0.02, 0.10 vs 0.04). Held-out facts are no part of the ranking: their anchor
    is (nearly) never the gold, so MONITOR leaves them out (Sec. 4, footnote 3)."""
    meta = planted(causal_model)
    partial = set(meta["frames"]["partial_facts"])
    facts = pd.read_parquet(world["mc"] / "facts.parquet")
    test = set(facts.loc[facts["split"] == "test", "fact_id"])
    full = (set(meta["planted"]) & test) - partial
    assert len(partial) == len(full) == 8
    out = pd.read_parquet(runs["planted"] / "outputs.parquet")
    pf = MO.per_fact(out[~out[COLUMN]])
    group = {"full": pf[pf["fact_id"].isin(full)], "partial": pf[pf["fact_id"].isin(partial)]}
    # every fact of both groups has its anchor (the gold), so none is left out of the means
    assert {k: len(g) for k, g in group.items()} == {"full": 8, "partial": 8}
    mean = {k: g[["pfd", "ird"]].mean() for k, g in group.items()}
    assert mean["full"]["pfd"] < mean["partial"]["pfd"], mean
    assert mean["full"]["ird"] < mean["partial"]["ird"], mean
    monitor = {k: MO.monitor_score(g["pfd"].to_numpy(), g["ird"].to_numpy(),
                                   g["anchor_prob"].to_numpy()) for k, g in group.items()}
    assert monitor["full"] < monitor["partial"], monitor
