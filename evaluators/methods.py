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
