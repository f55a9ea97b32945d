"""What the explorer shows about a fact beside the model's answers: its subject, gold and
aliases (from the dataset the run was evaluated on, named in its ``run.json``), its relation's
label, whether a planted model was taught it, and per setting whether the method counts it
correct and how sure the model was (the per-fact rows the report's comparisons use).

A dataset folder that is gone or rebuilt since the run (another ``facts_sha256``) is not read:
the page then shows what ``outputs.parquet`` holds (the gold, BELIEF's subject names) and says
why the rest is missing."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from factprobe.core import jsonsafe
from factprobe.core.tables import file_sha256
from factprobe.evaluators.metrics.details import _num
from factprobe.evaluators.report.runs import Run
from factprobe.probes.subject_blind import split_passes


@dataclass
class DatasetInfo:
    name: str
    facts: dict[str, dict] = field(default_factory=dict)      # fact_id -> subject, gold, ...
    relations: dict[str, dict] = field(default_factory=dict)  # relation_id -> label, ...
    note: str = ""                                            # why facts are missing


def _listed(v) -> list[str]:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return []
    return [str(x) for x in list(v)]


def dataset_info(name: str, runs: list[Run]) -> DatasetInfo:
    """The facts and relations table of dataset ``name``, read from the first of its runs'
    ``run.json`` dataset paths that exists and matches the runs' facts hash."""
    info = DatasetInfo(name)
    tried = []
    for r in runs:
        try:
            run = jsonsafe.loads((r.path / "run.json").read_text(encoding="utf-8"))
            ds = run.get("dataset") or {}
        except (OSError, ValueError):
            continue
        folder = Path(str(ds.get("path") or ""))
        facts = folder / "facts.parquet"
        if not ds.get("path") or str(folder) in tried:
            continue
        tried.append(str(folder))
        if not facts.is_file():
            continue
        if r.facts_sha256 and file_sha256(facts) != r.facts_sha256:
            info.note = (f"{facts} was rebuilt since the runs (its sha256 differs from "
                         f"run.json's): subjects and aliases are not shown")
            continue
        table = pd.read_parquet(facts)
        for x in table.to_dict("records"):
            info.facts[str(x["fact_id"])] = {
                "subject": str(x.get("subject") or ""),
                "subject_aliases": _listed(x.get("subject_aliases")),
                "gold": str(x.get("object") or ""),
                "aliases": _listed(x.get("object_aliases")),
                "answers": _listed(x.get("answers")),
            }
        rel = folder / "relations.parquet"
        if rel.is_file():
            for x in pd.read_parquet(rel).to_dict("records"):
                info.relations[str(x["relation_id"])] = {
                    "label": str(x.get("label") or ""),
                    "description": str(x.get("description") or "")}
        info.note = ""
        return info
    if not info.note:
        where = ", ".join(tried) or "no path in run.json"
        info.note = (f"dataset {name} not found ({where}): subjects and aliases are not shown; "
                     f"run the report where the dataset folder is")
    return info


def fallback_fact(rows: pd.DataFrame) -> dict:
    """Subject and gold from the outputs of one fact, where the dataset is not at hand."""
    first = rows.iloc[0]
    subject = first.get("subject_name") if "subject_name" in rows.columns else ""
    names = _listed(first.get("gold_names")) if "gold_names" in rows.columns else []
    gold = str(first.get("gold") or (names[0] if names else ""))
    return {"subject": str(subject or ""), "subject_aliases": [], "gold": gold,
            "aliases": [n for n in names if n != gold], "answers": [gold] if gold else []}


def planted_status(run: Run) -> dict[str, str]:
    """fact_id -> "planted" / "held-out" for a planted model's run (empty otherwise)."""
    if not run.planted:
        return {}
    out = {str(f): "held-out" for f in run.planted.get("held_out") or []}
    out.update({str(f): "planted" for f in run.planted.get("planted") or []})
    return out


def own_rows(run: Run) -> pd.DataFrame:
    """The probe's own rows (not the subject-blind null pass's) that name a fact."""
    own = split_passes(run.outputs)[0]
    return own[own["fact_id"].notna()] if "fact_id" in own.columns else own


def fact_results(run: Run) -> dict[str, dict[str, dict]]:
    """Per setting, fact_id -> {correct, confidence}: the per-fact rows of the report's
    comparisons (``MethodMetrics.settings``); ``confidence`` is the gold's probability where the
    method has one (multiple choice: normalised over the options; BELIEF: at the mask)."""
    out: dict[str, dict[str, dict]] = {}
    for setting, facts in run.spec.settings(run.outputs, run.config).items():
        conf = facts["gold_prob"] if "gold_prob" in facts.columns else [None] * len(facts)
        out[setting] = {str(f): {"correct": _num(c), "confidence": _num(p)}
                        for f, c, p in zip(facts["fact_id"], facts["correct"], conf)}
    return out


