"""ZP-LKE's metric set (multiple choice, response test, Accuracy@K, positions, validity); the
prompt baselines reuse it (:mod:`.prompt`)."""
from __future__ import annotations

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics import details as D
from factprobe.evaluators.metrics import zp_lke as Z
from factprobe.evaluators.metrics.suite import (
    OPTIONS,
    VALIDITY_HEADLINES,
    Headline,
    MethodMetrics,
    MetricsOptions,
    cfg_value,
    need_stage,
)
from factprobe.evaluators.metrics.validity import validity

COLUMNS = ("relation_id", "fact_id", "option", "is_gold", "logprob")


def mc_predictions(outputs: pd.DataFrame, cfg, method: str = "zp-lke") -> pd.DataFrame:
    mc = need_stage(outputs, "mc", method)
    preds = Z.mc_predictions(mc, ties_against_gold=bool(cfg_value(cfg, "compat", False)))
    _check_complete(preds, method)
    return preds


def _check_complete(preds: pd.DataFrame, method: str) -> None:
    """Every fact of a relation must have the same questions (seeds x example counts x
    templates)."""
    extra = [k for k in ("seed", "n_examples", "template_id") if k in preds.columns]
    if not extra:
        return
    per_fact = preds.groupby(["relation_id", "fact_id"]).size().rename("got").reset_index()
    want = preds[["relation_id"] + extra].drop_duplicates().groupby("relation_id").size()
    per_fact["want"] = want.reindex(per_fact["relation_id"]).to_numpy()
    bad = per_fact[per_fact["got"] != per_fact["want"]]
    if len(bad):
        r = bad.iloc[0]
        raise UserError(f"fact {r['fact_id']} has {int(r['got'])} of its relation's "
                        f"{int(r['want'])} multiple-choice questions: outputs.parquet is "
                        f"missing rows; rerun 'factprobe eval {method}'")


def zp_lke_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS, method: str = "zp-lke") -> dict:
    """Multiple-choice accuracy, probability mass, accuracy by example count, Accuracy@K,
    response accuracy, per-position probabilities and validity."""
    kw = dict(resamples=options.resamples, seed=options.seed)
    preds = mc_predictions(outputs, cfg, method)
    # each question's accuracy by chance, 1 / its choices: the held-out half's is recorded
    # beside its accuracy (a graph whose names give held-out answers away shows it)
    facts = Z.per_fact(Z.main_n(preds.assign(chance=1.0 / preds["options"])),
                       ["correct", "gold_prob", "chance"])
    out: dict = {"method": method, "facts": int(facts["fact_id"].nunique()),
                 "questions": int(len(preds)), "options": options.as_dict(),
                 "mc_accuracy": Z.mc_accuracy(preds, **kw),
                 "probability_mass": Z.probability_mass(preds, **kw),
                 "mc_accuracy_by_n": Z.accuracy_by_n(preds, **kw),
                 "accuracy_at_k": Z.accuracy_at_k(
                     preds, thresholds=options.thresholds,
                     rule=cfg_value(cfg, "accuracy_at_k", None) or "formula", **kw)}
    out["accuracy_at_k_rule"] = cfg_value(cfg, "accuracy_at_k", None) or "formula"
    if "n_examples" in preds.columns:
        out["n_examples"] = int(preds["n_examples"].max())
    out["validity"] = validity(facts, planted, column="correct", score="gold_prob",
                               accuracy_means="multiple-choice correct (mean over seeds)",
                               score_means="gold probability normalised over the choices",
                               chance="chance", **kw)
    resp = outputs[outputs["stage"] == "response"] if "stage" in outputs.columns else None
    if resp is not None and len(resp):
        keys = [k for k in ("fact_id", "seed", "n_examples", "template_id")
                if k in resp.columns and k in preds.columns]
        have = set(map(tuple, resp[keys].drop_duplicates().to_numpy().tolist()))
        want = set(map(tuple, preds[keys].drop_duplicates().to_numpy().tolist()))
        if want - have:
            raise UserError(f"{len(want - have)} multiple-choice question(s) have no response "
                            f"row: outputs.parquet is missing rows; rerun 'factprobe eval "
                            f"{method}'")
        out["response_accuracy"] = Z.response_accuracy(resp, **kw)
        rfacts = Z.per_fact(Z.main_n(resp.assign(correct=Z.response_correct(resp).astype(
            float))), ["correct"])
        out["validity_response"] = validity(rfacts, planted, column="correct",
                                            accuracy_means="gold in the greedy continuation",
                                            score_means="response correctness", **kw)
    pos = outputs[outputs["stage"] == "position"] if "stage" in outputs.columns else None
    if pos is not None and len(pos):
        out["position_probability"] = Z.position_probability(pos)
    return out


def mc_facts(outputs: pd.DataFrame, cfg, method: str = "zp-lke") -> dict[str, pd.DataFrame]:
    """Per-fact correctness (mean over seeds) and ``known`` (correct > 0.5), for the paired
    tests and the subsumption matrix."""
    facts = Z.per_fact(Z.main_n(mc_predictions(outputs, cfg, method)))
    return {"": facts.assign(known=(facts["correct"] > 0.5).astype(float))}


HEADLINES: dict[str, Headline] = {
    "mc_accuracy": (("mc_accuracy",), "MC accuracy", True),
    "probability_mass": (("probability_mass",), "gold probability mass", True),
    "response_accuracy": (("response_accuracy",), "response accuracy", True),
    **VALIDITY_HEADLINES,
}

def subsumption(members, common: set, readings: dict) -> pd.DataFrame:
    """The report's subsumption matrix of a dataset's multiple-choice settings: which
    setting's known facts the other's contain, over the facts all of them share."""
    known = {n: set(f.loc[(f["fact_id"].isin(common)) & (f["known"] > 0), "fact_id"])
             for n, _, f in members}
    relation_of = {}
    for _, _, f in members:
        relation_of.update(zip(f["fact_id"], f["relation_id"]))
    return Z.subsumption_matrix(
        known, relation_of, reading=readings.get("subsumption", "per-relation")).round(4)


METRICS = MethodMetrics(
    name="zp-lke", compute=zp_lke_metrics, stage="mc", columns=COLUMNS, facts=mc_facts,
    headlines=HEADLINES, main="mc_accuracy", family="multiple choice",
    validity_blocks=("validity", "validity_response"),
    plots=frozenset({"accuracy_vs_examples", "accuracy_at_k"}),
    details=D.multiple_choice, matrix=("subsumption", subsumption))
