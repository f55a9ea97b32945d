"""What every method's metric set shares: the options, the input checks, and
:class:`MethodMetrics`, the description each ``evaluators/metrics/suites/<method>.py`` gives of
its metrics (the function that writes ``metrics.json``, the stage and columns it reads, its
headline numbers, report family, validity blocks, per-fact tables and figures).

Everything is deterministic: bootstrap and sampling are seeded (:class:`MetricsOptions`),
floats are rounded to 4 digits, NaN is written as ``null``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics.stats import rnd
from factprobe.evaluators.metrics.link_shuffle import shuffled
from factprobe.evaluators.metrics.validity import subject_only_block
from factprobe.probes.subject_only import subject_scores
from factprobe.evaluators.metrics.validity import null_of, planted_model
from factprobe.evaluators.metrics.zp_lke import DEFAULT_K
from factprobe.probes.subject_blind import split_passes


@dataclass(frozen=True)
class MetricsOptions:
    resamples: int = 1000                   # bootstrap resamples for every interval
    seed: int = 0                           # bootstrap and Acc@1-sampling seed
    samplings: int = 50_000                 # BELIEF: draws of one prompt per pair (N)
    bins: int = 10                          # BELIEF: Overconf bins (M)
    alphas: tuple = (1 / 3, 1 / 3, 1 / 3)   # MONITOR: a1, a2, a3
    thresholds: tuple = field(default=DEFAULT_K)   # ZP-LKE: Accuracy@K thresholds

    def as_dict(self) -> dict:
        d = asdict(self)
        d["alphas"] = {f"a{i + 1}": rnd(a, 6) for i, a in enumerate(self.alphas)}
        d["thresholds"] = {f"k{i}": rnd(k, 6) for i, k in enumerate(self.thresholds)}
        return d


OPTIONS = MetricsOptions()


def cfg_value(cfg, name: str, default=None):
    """A field of a method config, given as its dataclass or as run.json's dict.

    >>> cfg_value({"compat": True}, "compat"), cfg_value(None, "compat", False)
    (True, False)
    """
    if cfg is None:
        return default
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


def need_stage(outputs: pd.DataFrame, stage: str, method: str) -> pd.DataFrame:
    """The rows of one stage; a user error when the table has none."""
    if "stage" not in outputs.columns:
        raise UserError(f"outputs.parquet has no 'stage' column: it is not the output of "
                        f"'factprobe eval {method}'")
    rows = outputs[outputs["stage"] == stage]
    if rows.empty:
        raise UserError(f"outputs.parquet has no '{stage}' rows, which {method} metrics need: "
                        f"the run is incomplete or was made by another method")
    return rows


# A headline number: (path inside a setting's metrics block, label, accuracy-like: has an
# interval).
Headline = tuple[tuple[str, ...], str, bool]

VALIDITY_HEADLINES: dict[str, Headline] = {
    "planted_accuracy": (("validity", "planted"), "planted acc.", True),
    "held_out_accuracy": (("validity", "held_out"), "held-out acc.", True),
    "validity_auroc": (("validity", "auroc"), "validity AUROC", True),
    "subject_blind_auroc": (("validity", "subject_blind", "auroc"), "subject-blind AUROC",
                            True),
}


@dataclass(frozen=True)
class MethodMetrics:
    """Everything the eval runner and ``factprobe report`` know about one method's metrics."""
    name: str
    # (outputs, planted | None, method config, *, options) -> the metrics.json dict
    compute: Callable[..., dict]
    stage: str                                  # the stage the metrics need rows of
    columns: tuple[str, ...]                    # and the columns they read
    # (outputs, method config) -> per setting ("" or a context): one row per fact with
    # relation_id, fact_id and correct (the headline accuracy's per-fact value), for the
    # paired comparisons of the report
    facts: Callable[[pd.DataFrame, object], dict[str, pd.DataFrame]]
    headlines: Mapping[str, Headline]           # name -> where the leaderboard finds it
    main: str                                   # per-relation table and heatmap show this one
    family: str                                 # the report compares runs within a family
    validity_blocks: tuple[str, ...]            # keys of validity() blocks in a setting block
    lower_is_better: frozenset[str] = frozenset()
    # settings are the blocks of metrics["contexts"] (one per in-context setup), not the
    # whole metrics dict
    contexts: bool = False
    # tables/<folder>/<dataset>-<model>.csv of the report: (folder, (outputs, options) -> frame)
    fact_tables: tuple[tuple[str, Callable], ...] = ()
    # figures of factprobe.evaluators.report.plots the method's runs take part in
    plots: frozenset[str] = frozenset()
    # why the link-shuffle null (evaluators/metrics/link_shuffle.py) cannot be computed from
    # this method's rows; empty when it can
    no_link_shuffle: str = ""
    # validity blocks the link-shuffle null is undefined for, with why; and the stages whose
    # gold it replaces (empty: every stage)
    link_shuffle_skip: Mapping[str, str] = field(default_factory=dict)
    link_shuffle_stages: tuple[str, ...] = ()
    # the explorer's extractor (evaluators/metrics/details.py): (own rows, config, options) ->
    # ({fact_id: detail}, {setting: {fact_id: confidence}}); None: per-fact results only
    details: Callable | None = None
    # the matrix the report compares a family's settings by: (its name, (members, shared
    # fact ids, readings) -> frame); None: no matrix (MONITOR)
    matrix: tuple[str, Callable] | None = None

    def check(self, outputs: pd.DataFrame) -> None:
        """The stage and columns the metrics read must be there (a user error if not)."""
        need_stage(outputs, self.stage, self.name)
        missing = [c for c in self.columns if c not in outputs.columns]
        if missing:
            raise UserError(f"outputs.parquet lacks column(s) {', '.join(missing)}, which "
                            f"{self.name} metrics need: it was not written by 'factprobe eval "
                            f"{self.name}'")

    def checked_compute(self, outputs: pd.DataFrame, planted: dict | None, cfg, *,
                        options: MetricsOptions = OPTIONS) -> dict:
        """metrics.json of a run, as ``factprobe eval`` writes it and ``factprobe report``
        recomputes it. A run with a subject-blind null pass (probes/subject_blind.py)
        gets its metrics from its own rows alone (the same numbers as a run without the
        null), and every validity block the null of that block (:func:`.validity.null_of`)."""
        own, blind = split_passes(outputs)
        self.check(own)
        metrics = self.compute(own, planted, cfg, options=options)
        status = planted_model(planted)
        if status is not None:          # a half-taught model makes every validity look weak
            metrics["planted_model"] = status
        if blind is not None:
            self._add_null(metrics, blind, planted, cfg, options)
        if planted:
            self._add_shuffle(metrics, own, planted, cfg, options)
            self._add_subject_only(metrics, own, planted, options)
        return metrics

    def _add_subject_only(self, metrics: dict, own: pd.DataFrame, planted: dict,
                          options: MetricsOptions) -> None:
        """Every validity block's subject-only check (probes/subject_only.py): the AUROC of
        each subject-only score between the halves, when the run asked for them."""
        scores = subject_scores(own)
        if scores.empty:
            return
        check = subject_only_block(scores, planted, options.resamples, options.seed)
        for block in self.setting_blocks(metrics).values():
            for name in self.validity_blocks:
                if block.get(name):
                    block[name]["subject_only"] = check

    def _add_shuffle(self, metrics: dict, own: pd.DataFrame, planted: dict, cfg,
                     options: MetricsOptions) -> None:
        """Every validity block's link-shuffle null: the same block with each fact scored
        against another same-half fact's gold (:mod:`.link_shuffle`)."""
        null, why = {}, self.no_link_shuffle
        if not why:
            rows = shuffled(own, planted, options.seed, stages=self.link_shuffle_stages)
            try:
                self.check(rows)
                null = self.compute(rows, planted, cfg, options=options)
            except UserError as exc:
                why = str(exc)
        null_blocks = self.setting_blocks(null)
        for setting, block in self.setting_blocks(metrics).items():
            for name in self.validity_blocks:
                if block.get(name) and name in self.link_shuffle_skip:
                    block[name]["link_shuffle"] = null_of(None, self.link_shuffle_skip[name])
                elif block.get(name):
                    block[name]["link_shuffle"] = null_of(
                        (null_blocks.get(setting) or {}).get(name),
                        why or "no fact has another fact of its relation and half to "
                               "take a gold from", what="the link-shuffle")

    def _add_null(self, metrics: dict, blind: pd.DataFrame, planted: dict | None, cfg,
                  options: MetricsOptions) -> None:
        try:
            self.check(blind)
            null, why = self.compute(blind, planted, cfg, options=options), ""
        except UserError as exc:        # e.g. no MONITOR anchor at all without the subject
            null, why = {}, str(exc)
        null_blocks = self.setting_blocks(null)
        for setting, block in self.setting_blocks(metrics).items():
            for name in self.validity_blocks:
                if block.get(name):
                    block[name]["subject_blind"] = null_of(
                        (null_blocks.get(setting) or {}).get(name), why)

    def settings(self, outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
        outputs = split_passes(outputs)[0]
        self.check(outputs)
        return self.facts(outputs, cfg)

    def setting_blocks(self, metrics: dict) -> dict[str, dict]:
        """The metrics block of each setting of a run (BELIEF-ICL: one per context)."""
        if self.contexts:
            return dict(metrics.get("contexts", {}))
        return {"": metrics}

    def headline(self, block: dict, name: str) -> dict | None:
        """{value, ci_low, ci_high, n} of one headline number, or None where the run lacks
        it."""
        got = lookup(block, self.headlines[name][0])
        if got is None:
            return None
        if isinstance(got, dict):
            if got.get("value") is None:
                return None
            return {k: got.get(k) for k in ("value", "ci_low", "ci_high", "n")}
        return {"value": got, "ci_low": None, "ci_high": None, "n": None}

    def per_relation(self, block: dict, name: str) -> dict:
        got = lookup(block, self.headlines[name][0])
        if isinstance(got, dict) and isinstance(got.get("per_relation"), dict):
            return got["per_relation"]
        return {}


def lookup(block: dict, path: tuple[str, ...]):
    """
    >>> lookup({"a": {"b": 1}}, ("a", "b")), lookup({"a": 1}, ("a", "b"))
    (1, None)
    """
    cur = block
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur
