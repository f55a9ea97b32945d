"""evaluators/metrics/suites/gold_prob.py of docs/extending.md's worked example."""
import numpy as np

from factprobe.evaluators.metrics.stats import rnd
from factprobe.evaluators.metrics.suite import OPTIONS, MethodMetrics, need_stage
from factprobe.evaluators.metrics.validity import validity


def gold_log_share(outputs):
    """Per fact, the gold's log-probability share among its relation's objects."""
    rows = outputs[outputs["stage"] == "gold"]
    total = rows.groupby("fact_id")["logprob"].transform(
        lambda lp: lp.max() + np.log(np.exp(lp - lp.max()).sum()))
    gold = rows.assign(logprob=rows["logprob"] - total)[rows["is_gold"].astype(bool)]
    return gold[["relation_id", "fact_id", "logprob"]]


def gold_prob_metrics(outputs, planted, cfg, *, options=OPTIONS) -> dict:
    need_stage(outputs, "gold", "gold-prob")
    rows = gold_log_share(outputs)
    per_relation = rows.groupby("relation_id")["logprob"].mean()
    per_fact = rows.groupby("fact_id", as_index=False)["logprob"].mean()
    return {"method": "gold-prob", "facts": int(rows["fact_id"].nunique()),
            "mean_logprob": {"value": rnd(rows["logprob"].mean()),
                             "per_relation": {rel: {"value": rnd(v)}
                                              for rel, v in per_relation.items()}},
            # on a planted model (planted.json beside it): taught facts against held-out ones
            "validity": validity(per_fact, planted, column="logprob",
                                 resamples=options.resamples, seed=options.seed)}


def gold_prob_facts(outputs, cfg) -> dict:
    """Per fact, the number the report's paired tests compare (here the log-probability)."""
    rows = gold_log_share(outputs)
    return {"": rows.assign(correct=rows["logprob"])[["relation_id", "fact_id", "correct"]]}


METRICS = MethodMetrics(
    name="gold-prob", compute=gold_prob_metrics, stage="gold",
    columns=("relation_id", "fact_id", "logprob", "is_gold"), facts=gold_prob_facts,
    headlines={"mean_logprob": (("mean_logprob",), "mean gold log-share", False)},
    main="mean_logprob", family="gold-prob", validity_blocks=("validity",),
    # the link-shuffle null scores each fact against another fact's gold: a request this
    # method never made (it scores the gold alone)
    no_link_shuffle="gold-prob scores each fact's own gold only")
