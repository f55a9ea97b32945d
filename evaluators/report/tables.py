"""The report's tables as DataFrames: the leaderboard, the main number per relation, estimator
validity, the paired comparisons with their matrices, and the headline summary
(``metrics.json``). Markdown rendering is in :mod:`.markdown`."""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from factprobe.core.errors import UserError
from factprobe.core.markdown import slug
from factprobe.evaluators.metrics.stats import paired_test, rnd
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.validity import null_leans
from factprobe.evaluators.report.runs import Run


def setting_name(run: Run, setting: str) -> str:
    return f"{run.label} ({setting})" if setting else run.label


def setting_name_s(model: str, setting: str) -> str:
    return f"{model} ({setting})" if setting else model


def leaderboard(runs: list[Run], selected: dict[str, list[str]]) -> pd.DataFrame:
    rows = []
    for r in runs:
        spec = r.spec
        for setting, block in spec.setting_blocks(r.metrics).items():
            for name in selected[r.method]:
                h = spec.headline(block, name)
                rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                             "setting": setting, "metric": name,
                             "label": spec.headlines[name][1],
                             "value": None if h is None else h["value"],
                             "ci_low": None if h is None else h["ci_low"],
                             "ci_high": None if h is None else h["ci_high"],
                             "n": None if h is None else h["n"]})
    cols = ["dataset", "method", "model", "setting", "metric", "label", "value", "ci_low",
            "ci_high", "n"]
    return pd.DataFrame(rows, columns=cols)


def per_relation_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        spec = r.spec
        main = spec.main
        for setting, block in spec.setting_blocks(r.metrics).items():
            for rel, v in sorted(spec.per_relation(block, main).items()):
                rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                             "setting": setting, "metric": main, "relation_id": rel,
                             "value": v.get("value"), "ci_low": v.get("ci_low"),
                             "ci_high": v.get("ci_high"), "n": v.get("n")})
    return pd.DataFrame(rows, columns=["dataset", "method", "model", "setting", "metric",
                                       "relation_id", "value", "ci_low", "ci_high", "n"])


def validity_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        for setting, block in r.spec.setting_blocks(r.metrics).items():
            for name in r.spec.validity_blocks:
                v = block.get(name) or {}
                if not v:
                    continue
                rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                             "setting": setting, "estimator": name,
                             "accuracy_means": v.get("accuracy_means", ""),
                             "score_means": v.get("score_means", ""),
                             **{f"{k}_{f}": (v.get(k) or {}).get(f)
                                for k in ("planted", "held_out", "difference", "auroc")
                                for f in ("value", "ci_low", "ci_high")},
                             "n_planted": (v.get("planted") or {}).get("n"),
                             "n_held_out": (v.get("held_out") or {}).get("n"),
                             **_guess_columns(v),
                             **_null_columns(v.get("subject_blind")),
                             **_shuffle_columns(v.get("link_shuffle")),
                             **_subject_only_columns(v.get("subject_only"))})
    cols = ["dataset", "method", "model", "setting", "estimator", "accuracy_means",
            "score_means"] + [f"{k}_{f}" for k in ("planted", "held_out", "difference", "auroc")
                              for f in ("value", "ci_low", "ci_high")] + \
        ["n_planted", "n_held_out"] + GUESS_COLUMNS + NULL_COLUMNS + SHUFFLE_COLUMNS + \
        SUBJECT_COLUMNS
    return pd.DataFrame(rows, columns=cols)


# The AUROC below which a validity block whose held-out facts are answered above chance is
# flagged: the level the project's acceptance checks ask of every method (docs/planting.md)
GUESSABLE_BELOW = 0.9
GUESS_COLUMNS = ["held_out_chance", "guessable"]


def _guess_columns(v: dict) -> dict:
    """Whether the held-out facts are answered above chance (their accuracy's interval wholly
    above ``held_out_chance``) while the AUROC is under GUESSABLE_BELOW: facts never taught
    that the graph gives away (names holding the answer, inverse relations) cap the AUROC.

    >>> _guess_columns({"held_out": {"value": 0.5, "ci_low": 0.39, "ci_high": 0.61},
    ...                 "auroc": {"value": 0.837}, "held_out_chance": 0.167})["guessable"]
    True
    >>> _guess_columns({"held_out": {"value": 0.155, "ci_low": 0.107, "ci_high": 0.205},
    ...                 "auroc": {"value": 0.997}, "held_out_chance": 0.05})["guessable"]
    False
    """
    chance, low = v.get("held_out_chance"), (v.get("held_out") or {}).get("ci_low")
    auroc = (v.get("auroc") or {}).get("value")
    return {"held_out_chance": chance,
            "guessable": None if None in (chance, low, auroc)
            else bool(low > chance and auroc < GUESSABLE_BELOW)}


NULL_COLUMNS = ["null_auroc_value", "null_auroc_ci_low", "null_auroc_ci_high", "null_reason",
                "familiarity", "null_leans"]


def _null_columns(null: dict | None) -> dict:
    """The subject-blind null of a validity block (evaluators/metrics/validity.py): its AUROC,
    why it is missing, whether it is off (its interval, not only its point, away from 0.5) and
    which half it favours. All empty for a run without the null pass."""
    if not null:
        return dict.fromkeys(NULL_COLUMNS)
    auroc = null.get("auroc") or {}
    return {"null_auroc_value": auroc.get("value"), "null_auroc_ci_low": auroc.get("ci_low"),
            "null_auroc_ci_high": auroc.get("ci_high"), "null_reason": null.get("reason"),
            "familiarity": null_leans(auroc) is not None, "null_leans": null_leans(auroc)}


SHUFFLE_COLUMNS = ["shuffle_auroc_value", "shuffle_auroc_ci_low", "shuffle_auroc_ci_high",
                   "shuffle_n", "shuffle_reason", "shuffle_flag"]


def _shuffle_columns(null: dict | None) -> dict:
    """The link-shuffle null of a validity block (evaluators/metrics/link_shuffle.py): its
    AUROC, on how many facts, why it is missing, and whether it is flagged: only when it
    favours planted facts (a probe that reads the link drops to 0.5 or below)."""
    if not null:
        return dict.fromkeys(SHUFFLE_COLUMNS)
    auroc = null.get("auroc") or {}
    n = [(null.get(k) or {}).get("n") for k in ("planted", "held_out")]
    return {"shuffle_auroc_value": auroc.get("value"),
            "shuffle_auroc_ci_low": auroc.get("ci_low"),
            "shuffle_auroc_ci_high": auroc.get("ci_high"),
            "shuffle_n": None if None in n else f"{n[0]} / {n[1]}",
            "shuffle_reason": null.get("reason"),
            "shuffle_flag": null_leans(auroc) == "planted"}


SUBJECT_SCORES = {"period_after_subject": "period", "subject_likelihood": "own"}
SUBJECT_COLUMNS = [f"{short}_auroc_{f}" for short in SUBJECT_SCORES.values()
                   for f in ("value", "ci_low", "ci_high")] + ["subject_only_leans"]


def _subject_only_columns(check: dict | None) -> dict:
    """The subject-only check of a validity block (probes/subject_only.py): the AUROC of
    log P("." | subject) (``period_*``) and of the subject's own likelihood (``own_*``), and
    which of them is off and which way (``subject_only_leans``: "period:planted", ...)."""
    out = dict.fromkeys(SUBJECT_COLUMNS)
    leans = []
    for name, short in SUBJECT_SCORES.items():
        auroc = ((check or {}).get(name) or {}).get("auroc") or {}
        for f in ("value", "ci_low", "ci_high"):
            out[f"{short}_auroc_{f}"] = auroc.get(f)
        if null_leans(auroc):
            leans.append(f"{short}:{null_leans(auroc)}")
    out["subject_only_leans"] = ",".join(leans) or None
    return out


# -------------------------------------------------------------------------- comparisons

def comparison_groups(runs: list[Run], *, progress: bool = False) -> dict:
    """Settings to compare, per (dataset, method family), with the facts all of them share.
    Settings may cover different facts (BELIEF keeps single-token objects, BELIEF-ICL every
    pair; a run with --limit): each comparison then uses the facts it can
    (:func:`coverage_notes` says which). Only when no two settings of any group share a fact
    is there nothing to compare: a user error."""
    from tqdm import tqdm
    groups: dict[tuple, list[tuple[str, Run, pd.DataFrame]]] = {}
    for r in tqdm(runs, desc="report: facts", unit="run", disable=not progress, leave=False):
        for setting, facts in r.spec.settings(r.outputs, r.config).items():
            name = f"{r.method}:{setting_name(r, setting)}"
            groups.setdefault((r.dataset, r.spec.family), []).append((name, r, facts))
    out = {}
    for (ds, family), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        ids = [set(f["fact_id"]) for _, _, f in members]
        out[(ds, family)] = (members, set.intersection(*ids))
    if out and not any(set(fa["fact_id"]) & set(fb["fact_id"])
                       for members, _ in out.values()
                       for (_, _, fa), (_, _, fb) in combinations(members, 2)):
        (ds, _), (members, _) = next(iter(out.items()))
        (_, ra, fa), (_, rb, fb) = members[:2]
        raise UserError(f"nothing to compare: no two runs share a fact (e.g. {ra.path} and "
                        f"{rb.path} on {ds}: {len(fa)} and {len(fb)} facts, none shared); "
                        f"evaluate them on the same relations, or report them apart")
    return out


def coverage_notes(groups: dict) -> list[str]:
    """One line per group whose settings cover different facts: which runs, how many facts
    each, and which facts the comparisons then use."""
    lines = []
    for (ds, family), (members, common) in sorted(groups.items()):
        sizes = [len(set(f["fact_id"])) for _, _, f in members]
        if len(set(sizes)) == 1 and all(len(set(f["fact_id"])) == len(common)
                                        for _, _, f in members):
            continue
        each = ", ".join(f"{n} {k}" for (n, _, _), k in zip(members, sizes))
        kind = matrices().get(family, (None,))[0]
        mat = (f"; the {kind} matrix uses the {len(common)} facts all of them share"
               if kind and common else
               f"; no fact is shared by all of them, so no {kind} matrix" if kind else "")
        lines.append(f"{family} on {ds}: the settings cover different facts ({each}). Each "
                     f"paired test uses the facts its two settings share (column 'facts')"
                     f"{mat}.")
    return lines


def matrices() -> dict[str, tuple[str, object]]:
    """family -> (matrix name, function): the matrix each method family's settings are compared
    by, as the methods' metrics declare it (``MethodMetrics.matrix``: multiple choice has known
    facts, BELIEF correctly answered prompts; MONITOR has none). Read at call time, so the
    table of methods is the one list."""
    from factprobe.evaluators.methods import METHODS
    out: dict[str, tuple[str, object]] = {}
    for m in METHODS.values():
        if m.metrics.matrix is not None:
            out.setdefault(m.metrics.family, m.metrics.matrix)
    return out


def comparisons(groups: dict, *, options: MetricsOptions, progress: bool = False,
                readings: dict | None = None
                ) -> tuple[pd.DataFrame, list[tuple[str, pd.DataFrame]], list[str]]:
    """Paired tests between every two settings of one dataset and method family, and the
    subsumption (multiple choice) or knowledge-sharing (BELIEF) matrices, in the papers'
    readings unless ``readings`` names another (``subsumption``: per-relation | pooled;
    ``sharing_unit``: fact-template | prompt)."""
    from tqdm import tqdm
    tests, mats, notes = [], [], []
    pairs = [(ds, family, x, y) for (ds, family), (members, _) in sorted(groups.items())
             for x, y in combinations(members, 2)]
    for ds, family, (na, ra, fa), (nb, rb, fb) in tqdm(
            pairs, desc="report: paired tests", unit="pair", disable=not progress, leave=False):
        shared = set(fa["fact_id"]) & set(fb["fact_id"])
        if not shared:
            notes.append(f"{na} and {nb} on {ds} share no fact: not compared.")
            continue
        a = fa[fa["fact_id"].isin(shared)].sort_values("fact_id")
        b = fb[fb["fact_id"].isin(shared)].sort_values("fact_id")
        t = paired_test(a["correct"].to_numpy(), b["correct"].to_numpy(),
                        a["relation_id"].to_numpy(), resamples=options.resamples,
                        seed=options.seed)
        tests.append({"dataset": ds, "family": family, "a": na, "b": nb,
                      "a_value": rnd(a["correct"].mean()), "b_value": rnd(b["correct"].mean()),
                      **t})
    by_family = matrices()
    for (ds, family), (members, common) in sorted(groups.items()):
        if family in by_family and common:
            kind, matrix = by_family[family]
            mats.append((f"{kind}-{slug(ds)}", matrix(members, common, readings or {})))
    cols = ["dataset", "family", "a", "b", "n", "a_value", "b_value", "difference", "ci_low",
            "ci_high", "p_value", "a_only", "b_only"]
    return pd.DataFrame(tests, columns=cols), mats, notes


# ---------------------------------------------------------------------------- summaries

def summary_metrics(board: pd.DataFrame) -> dict:
    """{dataset: {method: {model[ (context)]: {metric: {value, ci_low, ci_high}}}}}."""
    out: dict = {}
    for _, x in board.iterrows():
        if x["value"] is None or (isinstance(x["value"], float) and np.isnan(x["value"])):
            continue
        name = setting_name_s(x["model"], x["setting"])
        entry = {"value": x["value"]}
        if x["ci_low"] is not None and not pd.isna(x["ci_low"]):
            entry.update(ci_low=x["ci_low"], ci_high=x["ci_high"])
        out.setdefault(x["dataset"], {}).setdefault(x["method"], {}).setdefault(
            name, {})[x["metric"]] = entry
    return out
