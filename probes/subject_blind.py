"""The subject-blind null of a planted-model run: the same probe asked again with the subject of
every planted and held-out test fact replaced by one made-up name.

A validity AUROC (docs/metrics/validity.md) says how well an estimator separates the facts a
planted model was taught from those it never saw. It can do that without the knowledge the
check is meant to find: if held-out answers are strings the model rarely saw, "is this answer
familiar" separates the halves with no subject at all. Asking the same questions about a
subject nobody was taught measures exactly that: the null AUROC should be 0.5, and how far it
is from 0.5 is how much of the real AUROC needs no subject. It is the content-free input of
Zhao et al. (2021, "Calibrate Before Use", ICML) and of the BELIEF paper's bias level
(Zhao, Yoshinaga and Oba, Section 5.4, footnote 12), kept to the facts validity scores.

The null pass is a second set of stages appended to the method's plan, so it runs in the same
run folder with the same checkpoints and resume: its requests carry ``subject_blind=True`` in
``meta`` (the first pass's ``False``), which becomes a column of outputs.parquet, and its
stages are timed and checkpointed as ``blind_<stage>``. A stage built from earlier outputs
(MONITOR's foreign-frame stage) sees only its own pass's rows. :func:`split_passes` gives the
metrics each pass's rows as if the other did not exist.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from factprobe.core.errors import UserError
from factprobe.probes.plan import Plan, Stage

# The made-up subject. Two invented words, so that no tokenizer has them as one known token
# and no dataset has them as an entity (checked: :func:`blind_facts` refuses a dataset that
# does).
NULL_SUBJECT = "Quorvath Zindelmare"
COLUMN = "subject_blind"             # outputs.parquet: True on the null pass's rows
PREFIX = "blind_"                    # run.json timings and checkpoint files of its stages


def blind_ids(facts: pd.DataFrame, planted: dict,
              examples: frozenset[str] = frozenset()) -> pd.Series:
    """Which facts get the made-up subject: the planted and held-out ones the probe asks about
    (test facts; on a dataset without a train/test split, every fact but the ``examples``
    the probe only shows, Plan.examples_only). Train facts and examples keep their subjects:
    they are the in-context examples, part of the probe the null must leave as it is.

    >>> facts = pd.DataFrame({"fact_id": ["a", "b", "c", "d"],
    ...                       "split": ["train", "test", "test", "test"]})
    >>> blind_ids(facts, {"planted": ["a", "b"], "held_out": ["c"]}).tolist()
    [False, True, True, False]
    >>> nobel = facts.assign(split="")
    >>> blind_ids(nobel, {"planted": ["a", "b"], "held_out": ["c"]}, frozenset({"b"})).tolist()
    [True, False, True, False]
    """
    ids = set(planted.get("planted", [])) | set(planted.get("held_out", []))
    hit = facts["fact_id"].isin(ids) & ~facts["fact_id"].isin(examples)
    if "split" in facts.columns and (facts["split"] != "").any():
        hit &= facts["split"] == "test"
    return hit


def blind_facts(facts: pd.DataFrame, planted: dict,
                examples: frozenset[str] = frozenset()) -> tuple[pd.DataFrame, int]:
    """``facts`` with :data:`NULL_SUBJECT` as the subject of every fact of :func:`blind_ids`
    and no aliases (the subject's every name is the made-up one); and how many facts that is.
    Subject ids stay: they key facts, the model never sees them.

    >>> facts = pd.DataFrame({"fact_id": ["a", "b"], "split": ["train", "test"],
    ...                       "subject": ["Oslo", "Lima"], "subject_aliases": [["OSL"], ["L"]]})
    >>> out, n = blind_facts(facts, {"planted": ["a"], "held_out": ["b"]})
    >>> out["subject"].tolist(), [list(a) for a in out["subject_aliases"]], n
    (['Oslo', 'Quorvath Zindelmare'], [['OSL'], []], 1)
    """
    names = set(facts["subject"]) | set(facts.get("object", pd.Series(dtype=str)))
    for col in ("subject_aliases", "object_aliases"):
        if col in facts.columns:
            names |= {a for aliases in facts[col] for a in aliases}
    if NULL_SUBJECT in names:
        raise UserError(f"the dataset has an entity named {NULL_SUBJECT!r}, the made-up name "
                        f"of the subject-blind null; evaluate with --no-subject-blind")
    hit = blind_ids(facts, planted, examples).to_numpy()
    out = facts.copy()
    out["subject"] = np.where(hit, NULL_SUBJECT, out["subject"].to_numpy(dtype=object))
    if "subject_aliases" in out.columns:
        out["subject_aliases"] = [[] if h else a for h, a in zip(hit, out["subject_aliases"])]
    return out, int(hit.sum())


def only_pass(outputs: pd.DataFrame, blind: bool) -> pd.DataFrame:
    """The rows of one pass, without the pass column: what that pass's stages would see had
    the other pass not run.

    >>> o = pd.DataFrame({"x": [1, 2, 3], COLUMN: [False, True, False]})
    >>> only_pass(o, False)["x"].tolist(), list(only_pass(o, True).columns)
    ([1, 3], ['x'])
    """
    if COLUMN not in outputs.columns:
        return outputs if not blind else outputs.iloc[:0]
    keep = outputs[COLUMN].fillna(False).astype(bool) == blind
    return outputs[keep].drop(columns=COLUMN).reset_index(drop=True)


def split_passes(outputs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(the probe's own rows, the null pass's rows or None when the run has no null pass).

    >>> a, b = split_passes(pd.DataFrame({"x": [1]}))
    >>> a["x"].tolist(), b
    ([1], None)
    """
    if COLUMN not in outputs.columns:
        return outputs, None
    return only_pass(outputs, False), only_pass(outputs, True)


def _tag(requests: list, blind: bool) -> list:
    return [replace(r, meta={**r.meta, COLUMN: blind}) for r in requests]


def _stage(stage: Stage, blind: bool) -> Stage:
    build = None
    if stage.build is not None:
        def build(outputs: pd.DataFrame, _build=stage.build) -> list:
            return _tag(_build(only_pass(outputs, blind)), blind)
    return replace(stage, requests=_tag(stage.requests, blind), build=build,
                   label=PREFIX + stage.key if blind else stage.label)


def with_null_pass(plan: Plan, tables: dict[str, pd.DataFrame], planted: dict,
                   make_plan: Callable[[dict[str, pd.DataFrame]], Plan]) -> Plan:
    """``plan`` followed by the same probe (``make_plan``) on ``tables`` with the made-up
    subject; ``plan`` as it is when no fact of the tables is planted or held out. The facts
    ``plan`` only shows as examples (``examples_only``) keep their names: without that, a
    Nobel-style dataset's null showed the made-up name as every example's subject, and the
    probe, which never shows a fact as its own example, dropped them all (a zero-shot null of
    a many-shot probe)."""
    facts, n = blind_facts(tables["facts"], planted, plan.examples_only)
    if n == 0:
        return plan
    null = make_plan({**tables, "facts": facts})
    stages = [_stage(s, False) for s in plan.stages] + [_stage(s, True) for s in null.stages]
    info = {"name": NULL_SUBJECT, "facts": n,
            "requests_per_stage": {s.name: len(s.requests) for s in null.stages}}
    return replace(plan, stages=stages, info=plan.info | {"subject_blind": info})
