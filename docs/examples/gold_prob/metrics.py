"""evaluators/metrics/suites/gold_prob.py of docs/extending.md's worked example."""
from factprobe.evaluators.metrics.stats import rnd
from factprobe.evaluators.metrics.suite import OPTIONS, MethodMetrics, need_stage


def gold_prob_metrics(outputs, planted, cfg, *, options=OPTIONS) -> dict:
    rows = need_stage(outputs, "gold", "gold-prob")
    per_relation = rows.groupby("relation_id")["logprob"].mean()
    return {"method": "gold-prob", "facts": int(rows["fact_id"].nunique()),
            "mean_logprob": {"value": rnd(rows["logprob"].mean()),
                             "per_relation": {rel: {"value": rnd(v)}
                                              for rel, v in per_relation.items()}}}


def gold_prob_facts(outputs, cfg) -> dict:
    """Per fact, the number the report's paired tests compare (here the log-probability)."""
    rows = outputs[outputs["stage"] == "gold"]
    return {"": rows.assign(correct=rows["logprob"])[["relation_id", "fact_id", "correct"]]}


METRICS = MethodMetrics(
    name="gold-prob", compute=gold_prob_metrics, stage="gold",
    columns=("relation_id", "fact_id", "logprob"), facts=gold_prob_facts,
    headlines={"mean_logprob": (("mean_logprob",), "mean gold log-prob", False)},
    main="mean_logprob", family="gold-prob", validity_blocks=())
