"""The explorer's data: the overview (the report's own leaderboard, validity and per-relation
tables, with the same formatting as report.md) and one drill-down bundle per (dataset,
relation), which the page loads only when that relation is opened."""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from factprobe.core.markdown import slug
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.validity import FAMILIARITY_MARGIN
from factprobe.evaluators.report.html.facts import (
    _num,
    dataset_info,
    fact_results,
    fallback_fact,
    own_rows,
    planted_status,
)
from factprobe.evaluators.report.markdown import (
    fmt,
    guess_flag,
    is_guessable,
    null_flag,
    planted_warnings,
    shuffle_flag,
    subject_flag,
)
from factprobe.evaluators.report.runs import Run
from factprobe.evaluators.report.tables import setting_name_s


@dataclass(frozen=True)
class RelationFile:
    key: str          # what the page asks for: "<dataset>|<relation_id>"
    path: str         # beside index.html
    data: dict


def _records(frame: pd.DataFrame, numeric: tuple[str, ...]) -> list[dict]:
    out = []
    for x in frame.to_dict("records"):
        out.append({k: (_num(v) if k in numeric else (None if _missing(v) else v))
                    for k, v in x.items()})
    return out


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def overview(runs: list[Run], board: pd.DataFrame, rel_table: pd.DataFrame,
             val_table: pd.DataFrame, notes: list[str], options: MetricsOptions) -> dict:
    """The overview's numbers: the report's tables as records, each cell also as report.md
    writes it (``text``)."""
    lb = _records(board, ("value", "ci_low", "ci_high", "n"))
    for x, (_, b) in zip(lb, board.iterrows()):
        x["text"] = fmt(b["value"], b["ci_low"], b["ci_high"])
    val_num = tuple(c for c in val_table.columns if c.endswith(("_value", "_ci_low", "_ci_high")))
    val = _records(val_table, val_num + ("n_planted", "n_held_out"))
    for x, (_, v) in zip(val, val_table.iterrows()):
        x["text"] = {k: fmt(v[f"{k}_value"], v[f"{k}_ci_low"], v[f"{k}_ci_high"])
                     for k in ("planted", "held_out", "difference", "auroc", "null_auroc",
                               "shuffle_auroc", "period_auroc", "own_auroc")}
        x["familiarity"] = None if _missing(v["familiarity"]) else bool(v["familiarity"])
        # the flag's words are report.md's, so the page and the report say the same thing
        x["null_flag"] = null_flag(v) if x["familiarity"] else None
        x["shuffle_flag"] = (shuffle_flag(v) if not _missing(v["shuffle_flag"])
                             and bool(v["shuffle_flag"]) else None)
        x["subject_flag"] = (subject_flag(v) if not _missing(v["subject_only_leans"])
                             else None)
        x["guess_flag"] = guess_flag(v) if is_guessable(v) else None
    rel = _records(rel_table, ("value", "ci_low", "ci_high", "n"))
    for x, (_, r) in zip(rel, rel_table.iterrows()):
        x["text"] = fmt(r["value"], r["ci_low"], r["ci_high"])
    methods = {}
    for r in runs:
        spec = r.spec
        methods[r.method] = {"main": spec.main, "family": spec.family,
                             "contexts": spec.contexts,
                             "lower_is_better": sorted(spec.lower_is_better),
                             "labels": {k: v[1] for k, v in spec.headlines.items()}}
    return {
        "runs": [{"id": i, "dataset": r.dataset, "method": r.method, "model": r.label,
                  "path": str(r.path), "rows": len(r.outputs),
                  "planted": r.planted_path} for i, r in enumerate(runs)],
        "methods": methods,
        "leaderboard": lb, "validity": val, "per_relation": rel, "notes": list(notes),
        "options": {"resamples": options.resamples, "seed": options.seed},
        "familiarity_margin": FAMILIARITY_MARGIN,
        "planted_warnings": planted_warnings(runs),
    }


def relation_files(runs: list[Run], options: MetricsOptions) -> tuple[list[dict],
                                                                      list[RelationFile]]:
    """The explorer's index (datasets, their relations and settings) and one bundle per
    (dataset, relation) with every fact's subject, gold, aliases, planted status, per-setting
    result and each run's details."""
    index, files = [], []
    by_ds: dict[str, list[tuple[int, Run]]] = {}
    for i, r in enumerate(runs):
        by_ds.setdefault(r.dataset, []).append((i, r))
    for d_i, (ds, members) in enumerate(sorted(by_ds.items())):
        info = dataset_info(ds, [r for _, r in members])
        settings, per_run = [], {}
        for i, r in members:
            results = fact_results(r)
            rows = own_rows(r)
            extract = r.spec.details
            details, conf = extract(rows, r.config, options) if extract else ({}, {})
            for setting, by_fact in results.items():
                for fid, v in by_fact.items():
                    if v["confidence"] is None and fid in conf.get(setting, {}):
                        v["confidence"] = conf[setting][fid]
                settings.append({"id": f"{i}:{setting}", "run": i, "setting": setting,
                                 "method": r.method, "model": r.label,
                                 "name": f"{r.method}: {setting_name_s(r.label, setting)}"})
            prompts = _prompts(r)
            per_run[i] = (rows, results, details, prompts, planted_status(r))
        relations = sorted({str(x) for _, r in members
                            for x in own_rows(r)["relation_id"].dropna().unique()})
        rel_index = []
        for k, rel in enumerate(relations):
            data = _relation(ds, rel, info, members, per_run, settings)
            path = f"explorer/data/d{d_i}-{slug(ds)}/r{k:03d}-{slug(rel)}.js"
            files.append(RelationFile(f"{ds}|{rel}", path, data))
            meta = info.relations.get(rel, {})
            rel_index.append({"id": rel, "label": meta.get("label", ""),
                              "facts": len(data["facts"]), "file": path, **_counts(data)})
        index.append({"name": ds, "note": info.note, "relations": rel_index,
                      "settings": settings})
    return index, files


def _counts(data: dict) -> dict[str, int]:
    """What the explorer opens on: a relation whose facts have results, are among a planted
    model's taught or held-out facts (FKTC and multi-prompt sets hold facts planted.json does
    not list), and some of which a method got right."""
    facts = data["facts"]
    return {"with_results": sum(bool(f["results"]) for f in facts),
            "listed": sum(any(v != "not listed" for v in f["planted"].values()) for f in facts),
            "correct": sum(any((v.get("correct") or 0) >= 0.5 for v in f["results"].values())
                           for f in facts)}


def _prompts(run: Run) -> dict[str, str]:
    path = run.path / "prompts.parquet"
    if not path.is_file():
        return {}
    t = pd.read_parquet(path)
    return dict(zip(t["prompt_id"].astype(str), t["text"].astype(str)))


def _relation(ds: str, rel: str, info, members, per_run, settings) -> dict:
    facts: dict[str, dict] = {}
    details: dict[str, dict] = {}
    prompts: dict[str, dict[str, str]] = {}
    for i, _ in members:
        rows, results, det, texts, planted = per_run[i]
        mine = rows[rows["relation_id"] == rel]
        for fid, g in mine.groupby("fact_id", sort=True):
            fid = str(fid)
            if fid not in facts:
                facts[fid] = {"id": fid, **(info.facts.get(fid) or fallback_fact(g)),
                              "planted": {}, "results": {}}
            if planted:
                facts[fid]["planted"][str(i)] = planted.get(fid, "not listed")
            for setting, by_fact in results.items():
                if fid in by_fact:
                    facts[fid]["results"][f"{i}:{setting}"] = by_fact[fid]
            if fid in det:
                details.setdefault(fid, {})[str(i)] = det[fid]
        used = set(mine["prompt_id"].dropna().astype(str)) if "prompt_id" in mine else set()
        prompts[str(i)] = {p: texts[p] for p in sorted(used) if p in texts}
    ordered = sorted(facts.values(), key=lambda f: (f["subject"].casefold(), f["id"]))
    meta = info.relations.get(rel, {})
    return {"dataset": ds, "relation": {"id": rel, **meta},
            "settings": [s["id"] for s in settings], "facts": ordered, "details": details,
            "prompts": prompts}
