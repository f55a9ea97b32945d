"""The prompt baselines' metric set (HGP / MMP / FS-LKE): ZP-LKE's over all templates (each
fact averaged over its relation's templates: the mean of the paper's Sec. 4.1), plus each
template's own results (``per_template``) and how many templates were used."""
from __future__ import annotations

import dataclasses

import pandas as pd

from factprobe.evaluators.metrics import zp_lke as Z
from factprobe.evaluators.metrics.suite import OPTIONS, MetricsOptions
from factprobe.evaluators.metrics.suites import zp_lke

SUMMARY_KEYS = ("value", "ci_low", "ci_high", "n")


def per_template(outputs: pd.DataFrame, preds: pd.DataFrame, *, resamples: int = 1000,
                 seed: int = 0) -> dict:
    """Multiple-choice accuracy, gold probability mass and response accuracy of every
    template on its relation's facts (the paper reports each of its three templates).

    >>> preds = pd.DataFrame({"relation_id": ["r"] * 4, "fact_id": ["a", "b"] * 2,
    ...     "template_id": ["r/m1"] * 2 + ["r/m2"] * 2, "correct": [True, True, True, False],
    ...     "gold_prob": [0.9, 0.7, 0.6, 0.2]})
    >>> t = per_template(pd.DataFrame({"stage": []}), preds, resamples=0)
    >>> t["r/m1"]["mc_accuracy"]["value"], t["r/m2"]["mc_accuracy"]["value"]
    (1.0, 0.5)
    >>> t["r/m2"]["probability_mass"]["value"]
    0.4
    """
    kw = dict(resamples=resamples, seed=seed)
    resp = outputs[outputs["stage"] == "response"] if "stage" in outputs.columns else None
    out = {}
    for tid, g in preds.groupby("template_id", sort=True):
        block = {"relation_id": str(g["relation_id"].iloc[0]),
                 "mc_accuracy": _short(Z.mc_accuracy(g, **kw)),
                 "probability_mass": _short(Z.probability_mass(g, **kw))}
        if resp is not None and len(resp) and "template_id" in resp.columns:
            r = resp[resp["template_id"] == tid]
            if len(r):
                block["response_accuracy"] = _short(Z.response_accuracy(r, **kw))
        out[str(tid)] = block
    return out


def _short(summary: dict) -> dict:
    return {k: summary[k] for k in SUMMARY_KEYS}


def prompt_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS) -> dict:
    """The ZP-LKE metric set on the template baselines (HGP / MMP / FS-LKE)."""
    out = zp_lke.zp_lke_metrics(outputs, planted, cfg, options=options, method="prompt")
    if "template_id" in outputs.columns:
        tids = outputs.loc[outputs["stage"] == "mc", "template_id"].dropna().unique()
        out["templates"] = int(len(tids))
        preds = zp_lke.mc_predictions(outputs, cfg, "prompt")
        out["per_template"] = per_template(outputs, Z.main_n(preds),
                                           resamples=options.resamples, seed=options.seed)
    return out


def prompt_facts(outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
    return zp_lke.mc_facts(outputs, cfg, "prompt")


METRICS = dataclasses.replace(zp_lke.METRICS, name="prompt", compute=prompt_metrics,
                              facts=prompt_facts)
