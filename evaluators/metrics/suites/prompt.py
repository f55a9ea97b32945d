"""The prompt baselines' metric set (HGP / MMP / FS-LKE): ZP-LKE's, plus how many templates
were used."""
from __future__ import annotations

import dataclasses

import pandas as pd

from evaluators.metrics.suite import OPTIONS, MetricsOptions
from evaluators.metrics.suites import zp_lke


def prompt_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS) -> dict:
    """The ZP-LKE metric set on the template baselines (HGP / MMP / FS-LKE)."""
    out = zp_lke.zp_lke_metrics(outputs, planted, cfg, options=options, method="prompt")
    if "template_id" in outputs.columns:
        tids = outputs.loc[outputs["stage"] == "mc", "template_id"].dropna().unique()
        out["templates"] = int(len(tids))
    return out


def prompt_facts(outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
    return zp_lke.mc_facts(outputs, cfg, "prompt")


METRICS = dataclasses.replace(zp_lke.METRICS, name="prompt", compute=prompt_metrics,
                              facts=prompt_facts)
