"""MONITOR on a planted model: validity (planted facts' anchors match the gold, held-out ones'
do not; the subject-blind null near chance; a model that learned nothing fails), and what
MONITOR reads of the facts taught only the base question and only after their own object
(``frames.partial_facts`` in planted.json): known and reliably held, like the fully taught ones
(their ranking by PFD / IRD is measured in docs/planting.md, not guaranteed)."""
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


# LLaMa-30b-ins, the most reliable model of the paper's Table 4, scores MONITOR 0.479: a fact a
# model was taught until the stopping rule held (and then some) must be held far more reliably.
RELIABLE = 0.3
ANCHOR = 0.5


def test_partly_taught_facts_are_known_and_reliably_held(runs, world, causal_model):
    """What the planted model guarantees of the facts taught MONITOR's frames only partly (the
    base question, and only after their own object): they are known in the frame they were
    taught, so MONITOR counts them as it counts the fully taught ones, and both groups are held
    reliably. The paper's Eqs. 1-3: PFD_c = (1/R) sum_j (1/L) sum_l |P+_l - P_j,l| is how far
    the probability of the fact's own answer moves from the positive prompt "y. Q0(x)" to each
    paraphrase Q_j(x); IRD_c the same to each misleading prompt "y-. Q0(x)"; MONITOR
    = sum_c sqrt(PFD^2/3 + IRD^2/3 + PFD IRD/3) / sum_c mean_l P+_l, lower = more reliable.

    Not guaranteed, so not asserted: that the partly taught facts are the less reliable
    (higher PFD and IRD). A small model carries the link it learned from lists and statements
    into paraphrases it never saw with that subject (measured: P(gold) under a paraphrase 0.75
    for the partly taught facts against 0.71 for the fully taught), and the group means of 8
    facts went either way on this world (docs/planting.md, "Facts taught in only some frames":
    PFD 0.104 against 0.193 here, 0.121 against 0.114 with --seed 1, 0.060 against 0.062 with
    the sample's optimiser). Held-out facts are no part of this: their anchor is never the
    gold, so MONITOR leaves them out (Sec. 4, footnote 3)."""
    meta = planted(causal_model)
    partial = set(meta["frames"]["partial_facts"])
    facts = pd.read_parquet(world["mc"] / "facts.parquet")
    test = set(facts.loc[facts["split"] == "test", "fact_id"])
    full = (set(meta["planted"]) & test) - partial
    assert len(partial) == len(full) == 8
    out = pd.read_parquet(runs["planted"] / "outputs.parquet")
    pf = MO.per_fact(out[~out[COLUMN]])
    group = {"full": pf[pf["fact_id"].isin(full)], "partial": pf[pf["fact_id"].isin(partial)]}
    # MONITOR counts a fact when its greedy answer to "y. Q0(x)" is the gold: for a partly
    # taught fact that is the very frame it was taught (measured: 8 and 7 of 8)
    assert all(len(g) >= 7 for g in group.values()), {k: len(g) for k, g in group.items()}
    # the anchor's own probability (the denominator of Eq. 3): more than every other answer
    # together, on average. Measured 0.95 and 0.93 on an AMD EPYC; on an Intel Xeon, whose
    # kernels plant other bits (docs/planting.md, "Same bytes, which machine"), 0.75 and
    # 0.77. A model that learned nothing gives about 1/vocabulary
    anchor = {k: round(g["anchor_prob"].mean(), 3) for k, g in group.items()}
    assert all(a > ANCHOR for a in anchor.values()), anchor
    for k, g in group.items():
        score = MO.monitor_score(g["pfd"].to_numpy(), g["ird"].to_numpy(),
                                 g["anchor_prob"].to_numpy())
        # measured 0.120 (fully taught) and 0.069 (partly taught)
        assert score < RELIABLE, (k, score, g[["pfd", "ird"]].mean().to_dict())
