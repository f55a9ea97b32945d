"""The probing methods ``factprobe eval`` knows: how each reads its dataset, plans its
requests and turns outputs into metrics. An explicit table, not a registry filled by imports."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from builders.errors import UserError
from builders.tables import read_table

from .metrics.zp_lke import mc_predictions, response_correct, summarise


@dataclass(frozen=True)
class Method:
    name: str
    tables: tuple[str, ...]          # tables the dataset must have
    masked: bool                     # needs a masked LM
    plan: Callable                   # (tables: dict[str, DataFrame], config) -> Plan
    metrics: Callable                # (outputs, planted | None, config) -> dict


def load_tables(folder: Path, names: tuple[str, ...], method: str) -> dict[str, pd.DataFrame]:
    missing = [n for n in names if not (folder / f"{n}.parquet").is_file()]
    if missing:
        raise UserError(f"{folder} lacks {', '.join(m + '.parquet' for m in missing)}, which "
                        f"{method} needs; build the right dataset first (see docs/methods)")
    return {n: read_table(folder, n).to_pandas() for n in names}


def planted_split(frame: pd.DataFrame, planted: dict | None) -> pd.DataFrame:
    if not planted:
        return frame.iloc[:0]
    where = pd.Series("other", index=frame.index)
    where[frame["fact_id"].isin(set(planted["planted"]))] = "planted"
    where[frame["fact_id"].isin(set(planted["held_out"]))] = "held_out"
    return frame.assign(planted=where)


def validity(per_fact: pd.DataFrame, planted: dict | None, column: str = "correct") -> dict:
    """Accuracy on planted vs held-out facts of a planted-knowledge model."""
    split = planted_split(per_fact, planted)
    if split.empty:
        return {}
    acc = split.groupby("planted")[column].mean()
    out = {k: round(float(acc.get(k, float("nan"))), 4) for k in ("planted", "held_out")}
    out["difference"] = round(out["planted"] - out["held_out"], 4)
    out["n"] = {k: int((split["planted"] == k).sum()) for k in ("planted", "held_out")}
    return out


def zp_lke_metrics(outputs: pd.DataFrame, planted: dict | None, cfg) -> dict:
    metrics: dict = {}
    mc = outputs[outputs["stage"] == "mc"]
    if len(mc):
        preds = mc_predictions(mc, ties_against_gold=getattr(cfg, "compat", False))
        if "n_examples" not in preds.columns:
            preds = preds.assign(n_examples=0)
        top_n = preds["n_examples"].max()
        main = preds[preds["n_examples"] == top_n]
        metrics["mc_accuracy"] = summarise(main)
        metrics["probability_mass"] = summarise(main, "gold_prob")
        if preds["n_examples"].nunique() > 1:
            metrics["mc_accuracy_by_n"] = {int(n): summarise(g)["overall"]
                                           for n, g in preds.groupby("n_examples")}
        metrics["validity_mc"] = validity(main, planted)
    resp = outputs[outputs["stage"] == "response"]
    if len(resp):
        resp = resp.assign(correct=response_correct(
            resp, pd.Series(resp["gold"].to_numpy(), index=resp["fact_id"])).astype(float))
        metrics["response_accuracy"] = summarise(resp)
        metrics["validity_response"] = validity(resp, planted)
    pos = outputs[outputs["stage"] == "position"]
    if len(pos):
        import numpy as np
        pos = pos.assign(prob=np.exp(pos["logprob"]))
        metrics["position_probability"] = {
            "mean_correct_examples": round(float(pos.loc[pos["corrupted"] == 0, "prob"].mean()), 4),
            "mean_corrupted_examples": round(float(pos.loc[pos["corrupted"] == 1, "prob"].mean()), 4)
            if (pos["corrupted"] == 1).any() else None}
    return metrics


def _zp_lke_plan(tables: dict, cfg):
    from probes.zp_lke import plan
    return plan(tables["facts"], cfg)


METHODS: dict[str, Method] = {
    "zp-lke": Method("zp-lke", ("facts",), False, _zp_lke_plan, zp_lke_metrics),
}


def _prompt_plan(tables: dict, cfg):
    from probes.prompt_baselines import plan
    from probes.templates_in import load_templates
    return plan(tables["facts"], load_templates(cfg.templates), cfg)


def prompt_metrics(outputs: pd.DataFrame, planted: dict | None, cfg) -> dict:
    return zp_lke_metrics(outputs, planted, cfg)


def _multiprompt_templates(tables: dict):
    from builders.template_files import Template
    fields = [f for f in Template.__dataclass_fields__]
    return [Template(**{k: r[k] for k in fields}) for r in tables["templates"].to_dict("records")]


def _belief_plan(tables: dict, cfg):
    from probes.belief import plan
    return plan(tables["facts"], _multiprompt_templates(tables), cfg)


def belief_metrics(outputs: pd.DataFrame, planted: dict | None, cfg) -> dict:
    from .metrics.belief import belief_rows
    rows = belief_rows(outputs)
    prompts = outputs[outputs["stage"] == "prompts"]
    out = {"prompts": int(len(prompts)), "answerable_prompts": int(len(rows)),
           "pairs_skipped_multi_token": int(prompts["fact_id"].nunique()
                                            - rows["fact_id"].nunique())}
    if len(rows):
        out["accuracy_all_prompts"] = summarise(rows.assign(correct=rows["correct"].astype(float)))
        per_fact = rows.groupby(["relation_id", "fact_id"])["correct"].mean().reset_index()
        out["validity"] = validity(per_fact, planted)
    return out


def _belief_icl_plan(tables: dict, cfg):
    from probes.belief_icl import plan
    return plan(tables["facts"], _multiprompt_templates(tables), cfg)


def belief_icl_metrics(outputs: pd.DataFrame, planted: dict | None, cfg) -> dict:
    from .metrics.belief import icl_rows
    rows = icl_rows(outputs)
    out = {"prompts": int(len(rows))}
    if len(rows):
        rows = rows.assign(correct=rows["correct"].astype(float))
        out["accuracy_all_prompts"] = {c: summarise(g) for c, g in rows.groupby("context")}
        per_fact = rows.groupby(["relation_id", "fact_id"])["correct"].mean().reset_index()
        out["validity"] = validity(per_fact, planted)
    return out


def _monitor_plan(tables: dict, cfg):
    from builders.template_files import Template
    from probes.monitor import plan
    fields = list(Template.__dataclass_fields__)
    templates = []
    for r in tables["templates"].to_dict("records"):
        t = Template(**{k: r[k] for k in fields})
        templates.append(_Based(t, bool(r.get("is_base", False))))
    return plan(tables["facts"], templates, cfg)


class _Based:
    """A template with FKTC's ``is_base`` flag (the base question of its relation)."""

    def __init__(self, template, is_base: bool):
        self._t, self.is_base = template, is_base

    def __getattr__(self, name):
        return getattr(self._t, name)


def monitor_metrics(outputs: pd.DataFrame, planted: dict | None, cfg) -> dict:
    from .metrics.monitor import per_fact, summary
    out = summary(outputs)
    if planted:
        facts = per_fact(outputs)
        anchors = outputs[outputs["stage"] == "anchor"][["fact_id", "relation_id"]]
        known = anchors.assign(correct=anchors["fact_id"].isin(set(facts["fact_id"])).astype(float))
        out["validity_anchor_match"] = validity(known, planted)
    return out


METHODS.update({
    "prompt": Method("prompt", ("facts",), False, _prompt_plan, prompt_metrics),
    "belief": Method("belief", ("facts", "templates"), True, _belief_plan, belief_metrics),
    "belief-icl": Method("belief-icl", ("facts", "templates"), False, _belief_icl_plan,
                         belief_icl_metrics),
    "monitor": Method("monitor", ("facts", "templates"), False, _monitor_plan, monitor_metrics),
})
