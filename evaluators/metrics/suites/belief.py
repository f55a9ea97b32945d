"""BELIEF's metric set on a masked LM: Acc@1 and its fluctuation, Consist, Overconf and
calibration, bias level, coverage and validity."""
from __future__ import annotations

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics import belief as B
from factprobe.evaluators.metrics import details as D
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


def check_templates(rows: pd.DataFrame, method: str) -> None:
    """Every pair of a relation must have prompts for each of the relation's templates."""
    per_rel = rows.groupby("relation_id")["template_id"].nunique()
    per_pair = rows.groupby(["relation_id", "fact_id"])["template_id"].nunique().reset_index()
    short = per_pair[per_pair["template_id"].to_numpy()
                     != per_rel.reindex(per_pair["relation_id"]).to_numpy()]
    if len(short):
        r = short.iloc[0]
        raise UserError(f"pair {r['fact_id']} ({r['relation_id']}) has prompts for "
                        f"{int(r['template_id'])} of its relation's "
                        f"{int(per_rel[r['relation_id']])} templates: outputs.parquet is "
                        f"missing rows; rerun 'factprobe eval {method}'")


def belief_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS) -> dict:
    """Acc@1 and fluctuation, Consist, Overconf and calibration, bias level, coverage and
    validity of a masked LM."""
    prompts = need_stage(outputs, "prompts", "belief")
    check_templates(prompts, "belief")
    rows = B.belief_rows(outputs, match=cfg_value(cfg, "match", "exact"))
    kw = dict(resamples=options.resamples, seed=options.seed)
    skipped = B.skipped_pairs(prompts, rows)
    out: dict = {"method": "belief", "options": options.as_dict(),
                 "match": cfg_value(cfg, "match", "exact"),
                 "prompts_total": int(len(prompts)),
                 "pairs_total": skipped["of"],
                 "pairs_skipped_multi_token": skipped["pairs"],
                 "skipped": {k: skipped[k] for k in ("pairs", "of", "prompts", "reasons",
                                                      "relations")}}
    if skipped["note"]:
        out["notes"] = [skipped["note"]]    # 'factprobe eval' prints them after its table
    if rows.empty:
        out["note"] = "no pair has a single-token gold name in this model's vocabulary"
        return out
    out.update(B.belief_summary(rows, samplings=options.samplings, bins=options.bins,
                                subject=cfg_value(cfg, "coverage_subject", "best"), **kw))
    cf = outputs[outputs["stage"] == "content_free"]
    if len(cf):
        missing = set(map(tuple, rows[["relation_id", "template_id"]].drop_duplicates()
                          .to_numpy().tolist())) - set(map(tuple, cf[["relation_id",
                                                                      "template_id"]]
                                                             .to_numpy().tolist()))
        if missing:
            rel, tid = sorted(missing)[0]
            raise UserError(f"template {tid} ({rel}) has no content-free rows: "
                            f"outputs.parquet is missing rows; rerun 'factprobe eval belief'")
        out["bias"] = B.bias_level(cf, cfg_value(cfg, "bias_renormalise", "each"))
    facts = rows.groupby(["relation_id", "fact_id"], sort=True).agg(
        correct=("correct", "mean"), gold_prob=("gold_prob", "mean")).reset_index()
    out["validity"] = validity(facts, planted, column="correct", score="gold_prob",
                               accuracy_means="top-1 correct (mean over the pair's prompts)",
                               score_means="gold names' probability at the mask "
                                           "(mean over prompts)", **kw)
    return out


def belief_facts(outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
    """Per-pair Acc@1, with the correctly answered prompts (``units``) for the sharing rate."""
    rows = B.belief_rows(outputs, match=cfg_value(cfg, "match", "exact"))
    facts = B.pair_accuracy(rows)
    facts.attrs["units"] = B.covered_units(rows)
    return {"": facts}


HEADLINES: dict[str, Headline] = {
    "acc1": (("accuracy",), "Acc@1", True),
    "acc1_range": (("acc1_fluctuation", "range"), "Acc@1 range", False),
    "acc1_std": (("acc1_fluctuation", "std"), "Acc@1 stdev", False),
    "consistency": (("consistency",), "Consist", True),
    "overconfidence": (("overconfidence", "value"), "Overconf", False),
    "bias_single": (("bias", "single_prompt"), "bias (single)", False),
    "bias_multi": (("bias", "multi_prompt"), "bias (multi)", False),
    "coverage_average": (("coverage", "average"), "coverage avg", True),
    "coverage_maximum": (("coverage", "maximum"), "coverage max", True),
    "coverage_oracle": (("coverage", "oracle"), "coverage oracle", True),
    **VALIDITY_HEADLINES,
}

def sharing(members, common: set, readings: dict) -> pd.DataFrame:
    """The report's knowledge-sharing matrix of a dataset's BELIEF settings (the share of one
    setting's correctly answered units the other answers too), over the facts all share."""
    from factprobe.evaluators.metrics.coverage import sharing_units
    names = [n for n, _, _ in members]
    unit = readings.get("sharing_unit", "fact-template")
    units = {n: sharing_units({u for u in f.attrs.get("units", set()) if u[0] in common}, unit)
             for n, _, f in members}
    return pd.DataFrame([[B.sharing_rate(units[a], units[b]) for b in names]
                         for a in names], index=names, columns=names).round(4)


METRICS = MethodMetrics(
    name="belief", compute=belief_metrics, stage="prompts",
    columns=("relation_id", "fact_id", "template_id", "subject_name", "gold_names",
             "top_tokens", "top_probs", "candidate_probs"),
    facts=belief_facts, headlines=HEADLINES, main="acc1", family="BELIEF",
    validity_blocks=("validity",), lower_is_better=frozenset({"acc1_range", "acc1_std"}),
    plots=frozenset({"calibration"}),
    no_link_shuffle="not computed for BELIEF: its rows keep the mask probability of each "
                    "fact's own gold names only, none of another fact's",
    details=D.belief, matrix=("sharing", sharing))
