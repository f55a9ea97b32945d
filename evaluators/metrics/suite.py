"""Each method's full metric set: ``outputs.parquet`` (+ ``planted.json``, the method config)
-> the dict written to ``metrics.json``, by ``factprobe eval`` and again by ``factprobe
report``. Also the per-fact tables the report compares runs with, and the headline numbers
of the leaderboard.

Everything is deterministic: bootstrap and sampling are seeded (:class:`MetricsOptions`),
floats are rounded to 4 digits, NaN is written as ``null``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from builders.core.errors import UserError
from evaluators.metrics import belief as B
from evaluators.metrics import belief_icl as BI
from evaluators.metrics import monitor as MO
from evaluators.metrics import zp_lke as Z
from evaluators.metrics.stats import rnd
from evaluators.metrics.validity import validity

METHOD_NAMES = ("zp-lke", "prompt", "belief", "belief-icl", "monitor")


@dataclass(frozen=True)
class MetricsOptions:
    resamples: int = 1000                   # bootstrap resamples for every interval
    seed: int = 0                           # bootstrap and Acc@1-sampling seed
    samplings: int = 50_000                 # BELIEF: draws of one prompt per pair (N)
    bins: int = 10                          # BELIEF: Overconf bins (M)
    alphas: tuple = (1 / 3, 1 / 3, 1 / 3)   # MONITOR: a1, a2, a3
    thresholds: tuple = field(default=Z.DEFAULT_K)   # ZP-LKE: Accuracy@K thresholds

    def as_dict(self) -> dict:
        d = asdict(self)
        d["alphas"] = {f"a{i + 1}": rnd(a, 6) for i, a in enumerate(self.alphas)}
        d["thresholds"] = {f"k{i}": rnd(k, 6) for i, k in enumerate(self.thresholds)}
        return d


OPTIONS = MetricsOptions()


def _get(cfg, name: str, default=None):
    if cfg is None:
        return default
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


REQUIRED = {
    "zp-lke": ("mc", ("relation_id", "fact_id", "option", "is_gold", "logprob")),
    "prompt": ("mc", ("relation_id", "fact_id", "option", "is_gold", "logprob")),
    "belief": ("prompts", ("relation_id", "fact_id", "template_id", "subject_name",
                           "gold_names", "top_tokens", "top_probs", "candidate_probs")),
    "belief-icl": ("greedy", ("relation_id", "fact_id", "template_id", "subject_name",
                              "context", "prompt_id", "gold_names", "text")),
    "monitor": ("anchor", ("relation_id", "fact_id", "gold", "text", "token_logprobs")),
}


def check_outputs(method: str, outputs: pd.DataFrame) -> None:
    """The stage and columns a method's metrics read must be there (a user error if not)."""
    if method not in REQUIRED:
        raise UserError(f"unknown method {method!r} in run.json; factprobe knows "
                        f"{', '.join(METHOD_NAMES)}")
    stage, cols = REQUIRED[method]
    _need_stage(outputs, stage, method)
    missing = [c for c in cols if c not in outputs.columns]
    if missing:
        raise UserError(f"outputs.parquet lacks column(s) {', '.join(missing)}, which {method} "
                        f"metrics need: it was not written by 'factprobe eval {method}'")


def _need_stage(outputs: pd.DataFrame, stage: str, method: str) -> pd.DataFrame:
    if "stage" not in outputs.columns:
        raise UserError(f"outputs.parquet has no 'stage' column: it is not the output of "
                        f"'factprobe eval {method}'")
    rows = outputs[outputs["stage"] == stage]
    if rows.empty:
        raise UserError(f"outputs.parquet has no '{stage}' rows, which {method} metrics need: "
                        f"the run is incomplete or was made by another method")
    return rows


# --------------------------------------------------------------------------- ZP-LKE, prompt

def mc_predictions(outputs: pd.DataFrame, cfg, method: str = "zp-lke") -> pd.DataFrame:
    mc = _need_stage(outputs, "mc", method)
    preds = Z.mc_predictions(mc, ties_against_gold=bool(_get(cfg, "compat", False)))
    _check_complete(preds, method)
    return preds


def _check_complete(preds: pd.DataFrame, method: str) -> None:
    """Every fact of a relation must have the same questions (seeds x example counts x
    templates)."""
    extra = [k for k in ("seed", "n_examples", "template_id") if k in preds.columns]
    if not extra:
        return
    per_fact = preds.groupby(["relation_id", "fact_id"]).size().rename("got").reset_index()
    want = preds[["relation_id"] + extra].drop_duplicates().groupby("relation_id").size()
    per_fact["want"] = want.reindex(per_fact["relation_id"]).to_numpy()
    bad = per_fact[per_fact["got"] != per_fact["want"]]
    if len(bad):
        r = bad.iloc[0]
        raise UserError(f"fact {r['fact_id']} has {int(r['got'])} of its relation's "
                        f"{int(r['want'])} multiple-choice questions: outputs.parquet is "
                        f"missing rows; rerun 'factprobe eval {method}'")


def zp_lke_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS, method: str = "zp-lke") -> dict:
    """Multiple-choice accuracy, probability mass, accuracy by example count, Accuracy@K,
    response accuracy, per-position probabilities and validity."""
    kw = dict(resamples=options.resamples, seed=options.seed)
    preds = mc_predictions(outputs, cfg, method)
    facts = Z.per_fact(Z.main_n(preds))
    out: dict = {"method": method, "facts": int(facts["fact_id"].nunique()),
                 "questions": int(len(preds)), "options": options.as_dict(),
                 "mc_accuracy": Z.mc_accuracy(preds, **kw),
                 "probability_mass": Z.probability_mass(preds, **kw),
                 "mc_accuracy_by_n": Z.accuracy_by_n(preds, **kw),
                 "accuracy_at_k": Z.accuracy_at_k(preds, thresholds=options.thresholds, **kw)}
    if "n_examples" in preds.columns:
        out["n_examples"] = int(preds["n_examples"].max())
    out["validity"] = validity(facts, planted, column="correct", score="gold_prob",
                               accuracy_means="multiple-choice correct (mean over seeds)",
                               score_means="gold probability normalised over the choices",
                               **kw)
    resp = outputs[outputs["stage"] == "response"] if "stage" in outputs.columns else None
    if resp is not None and len(resp):
        keys = [k for k in ("fact_id", "seed", "n_examples", "template_id")
                if k in resp.columns and k in preds.columns]
        have = set(map(tuple, resp[keys].drop_duplicates().to_numpy().tolist()))
        want = set(map(tuple, preds[keys].drop_duplicates().to_numpy().tolist()))
        if want - have:
            raise UserError(f"{len(want - have)} multiple-choice question(s) have no response "
                            f"row: outputs.parquet is missing rows; rerun 'factprobe eval "
                            f"{method}'")
        out["response_accuracy"] = Z.response_accuracy(resp, **kw)
        rfacts = Z.per_fact(Z.main_n(resp.assign(correct=Z.response_correct(resp).astype(
            float))), ["correct"])
        out["validity_response"] = validity(rfacts, planted, column="correct",
                                            accuracy_means="gold in the greedy continuation",
                                            score_means="response correctness", **kw)
    pos = outputs[outputs["stage"] == "position"] if "stage" in outputs.columns else None
    if pos is not None and len(pos):
        out["position_probability"] = Z.position_probability(pos)
    return out


def prompt_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS) -> dict:
    """The ZP-LKE metric set on the template baselines (HGP / MMP / FS-LKE)."""
    out = zp_lke_metrics(outputs, planted, cfg, options=options, method="prompt")
    if "template_id" in outputs.columns:
        tids = outputs.loc[outputs["stage"] == "mc", "template_id"].dropna().unique()
        out["templates"] = int(len(tids))
    return out


# ---------------------------------------------------------------------------------- BELIEF

def _check_templates(rows: pd.DataFrame, method: str) -> None:
    """Every pair of a relation must have prompts for each of the relation's templates."""
    per_rel = rows.groupby("relation_id")["template_id"].nunique()
    per_pair = rows.groupby(["relation_id", "fact_id"])["template_id"].nunique().reset_index()
    short = per_pair[per_pair["template_id"].to_numpy()
                     != per_rel.reindex(per_pair["relation_id"]).to_numpy()]
    if len(short):
        r = short.iloc[0]
        raise UserError(f"pair {r['fact_id']} ({r['relation_id']}) has prompts for "
                        f"{int(r['template_id'])} of its relation's "
                        f"{int(per_rel[r['relation_id']])} templates: outputs.parquet is "
                        f"missing rows; rerun 'factprobe eval {method}'")


def belief_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                   options: MetricsOptions = OPTIONS) -> dict:
    """Acc@1 and fluctuation, Consist, Overconf and calibration, bias level, coverage and
    validity of a masked LM."""
    prompts = _need_stage(outputs, "prompts", "belief")
    _check_templates(prompts, "belief")
    rows = B.belief_rows(outputs)
    kw = dict(resamples=options.resamples, seed=options.seed)
    out: dict = {"method": "belief", "options": options.as_dict(),
                 "prompts_total": int(len(prompts)),
                 "pairs_total": int(prompts["fact_id"].nunique()),
                 "pairs_skipped_multi_token": int(prompts["fact_id"].nunique()
                                                  - rows["fact_id"].nunique())}
    if rows.empty:
        out["note"] = "no pair has a single-token gold name in this model's vocabulary"
        return out
    out.update(B.belief_summary(rows, samplings=options.samplings, bins=options.bins, **kw))
    cf = outputs[outputs["stage"] == "content_free"]
    if len(cf):
        missing = set(map(tuple, rows[["relation_id", "template_id"]].drop_duplicates()
                          .to_numpy().tolist())) - set(map(tuple, cf[["relation_id",
                                                                      "template_id"]]
                                                             .to_numpy().tolist()))
        if missing:
            rel, tid = sorted(missing)[0]
            raise UserError(f"template {tid} ({rel}) has no content-free rows: "
                            f"outputs.parquet is missing rows; rerun 'factprobe eval belief'")
        out["bias"] = B.bias_level(cf)
    facts = rows.groupby(["relation_id", "fact_id"], sort=True).agg(
        correct=("correct", "mean"), gold_prob=("gold_prob", "mean")).reset_index()
    out["validity"] = validity(facts, planted, column="correct", score="gold_prob",
                               accuracy_means="top-1 correct (mean over the pair's prompts)",
                               score_means="gold names' probability at the mask "
                                           "(mean over prompts)", **kw)
    return out


def belief_icl_rows(outputs: pd.DataFrame) -> pd.DataFrame:
    greedy = _need_stage(outputs, "greedy", "belief-icl")
    keys = ["fact_id", "template_id", "subject_name"]
    sets = {c: set(map(tuple, g[keys].to_numpy().tolist()))
            for c, g in greedy.groupby("context", sort=True)}
    full = set().union(*sets.values())
    for c, s in sets.items():
        if s != full:
            raise UserError(f"context {c} has {len(s)} of the run's {len(full)} prompts: "
                            f"outputs.parquet is missing rows; rerun 'factprobe eval belief-icl'")
    dup = greedy.duplicated(["context"] + keys)
    if dup.any():
        raise UserError("outputs.parquet has duplicate greedy rows for one prompt: it mixes "
                        "runs; rerun 'factprobe eval belief-icl' into an empty folder")
    _check_templates(greedy, "belief-icl")
    return BI.icl_rows(outputs)


def belief_icl_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                       options: MetricsOptions = OPTIONS) -> dict:
    """The BELIEF metric set per in-context setting, with lemma matching, confidence from
    samples and the one-word generation rate."""
    rows = belief_icl_rows(outputs)
    kw = dict(resamples=options.resamples, seed=options.seed)
    samples = outputs[outputs["stage"] == "samples"]
    if len(samples):
        n = samples.groupby(["context", "prompt_id"]).size()
        if n.nunique() > 1:
            raise UserError(f"sampled prompts have between {n.min()} and {n.max()} samples: "
                            f"outputs.parquet is missing rows; rerun 'factprobe eval "
                            f"belief-icl'")
    conf = BI.sample_confidence(outputs, rows)
    out: dict = {"method": "belief-icl", "options": options.as_dict(),
                 "prompts": int(len(rows)), "contexts": {}}
    from evaluators.metrics import lemmas
    for ctx, g in rows.groupby("context", sort=True):
        c = conf[conf["context"] == ctx]
        block = B.belief_summary(g, samplings=options.samplings, bins=options.bins,
                                 same=lemmas.same_answer, confidence=c, **kw)
        if c.empty:
            block.pop("overconfidence", None)
        block["sampled_prompts"] = int(len(c))
        block["one_word_rate"] = BI.one_word_rate(g, **kw)
        facts = g.groupby(["relation_id", "fact_id"], sort=True)["correct"].mean().reset_index()
        block["validity"] = validity(facts, planted, column="correct",
                                     accuracy_means="greedy answer matches the gold (mean "
                                                    "over the pair's prompts)",
                                     score_means="same (share of the pair's prompts answered "
                                                 "correctly)", **kw)
        if len(c):
            sf = c.groupby(["relation_id", "fact_id"], sort=True)["gold_share"].mean()
            sf = sf.reset_index()
            block["validity_samples"] = validity(
                sf, planted, column="gold_share", accuracy_means="share of samples naming "
                "the gold", score_means="same", **kw)
        out["contexts"][ctx] = block
    return out


# --------------------------------------------------------------------------------- MONITOR

def monitor_metrics(outputs: pd.DataFrame, planted: dict | None, cfg, *,
                    options: MetricsOptions = OPTIONS) -> dict:
    """PFD, IRD, MONITOR (overall and per relation), anchor probability, frame accuracies and
    validity."""
    _need_stage(outputs, "anchor", "monitor")
    kw = dict(resamples=options.resamples, seed=options.seed)
    out = {"method": "monitor", "options": options.as_dict(),
           **MO.summary(outputs, alphas=tuple(options.alphas), **kw)}
    anc = MO.anchors(outputs)
    anc = anc.assign(score=anc["matched"] * anc["anchor_prob"])
    out["validity"] = validity(anc, planted, column="matched", score="score",
                               accuracy_means="primary anchor equals the gold",
                               score_means="primary-anchor probability (0 when the anchor "
                                           "is not the gold)", **kw)
    ft = MO.frame_table(outputs)
    if len(ft):
        per = ft.groupby(["relation_id", "fact_id"], sort=True)["correct"].mean().reset_index()
        out["validity_frames"] = validity(per, planted, column="correct",
                                          accuracy_means="frame accuracy (mean over the "
                                                         "fact's prompt frames)",
                                          score_means="same", **kw)
    return out


METRICS = {"zp-lke": zp_lke_metrics, "prompt": prompt_metrics, "belief": belief_metrics,
           "belief-icl": belief_icl_metrics, "monitor": monitor_metrics}


def compute(method: str, outputs: pd.DataFrame, planted: dict | None, cfg, *,
            options: MetricsOptions = OPTIONS) -> dict:
    check_outputs(method, outputs)
    return METRICS[method](outputs, planted, cfg, options=options)


# ------------------------------------------------------- per-fact tables for comparisons

def settings(method: str, outputs: pd.DataFrame, cfg) -> dict[str, pd.DataFrame]:
    """Per setting (``""``, or each BELIEF-ICL context): one row per fact with
    ``relation_id``, ``fact_id`` and ``correct`` (the headline accuracy's per-fact value),
    plus a ``units`` attribute for the sharing rate (BELIEF) or known facts (ZP-LKE)."""
    check_outputs(method, outputs)
    if method in ("zp-lke", "prompt"):
        preds = mc_predictions(outputs, cfg, method)
        facts = Z.per_fact(Z.main_n(preds))
        return {"": facts.assign(known=(facts["correct"] > 0.5).astype(float))}
    if method == "belief":
        rows = B.belief_rows(outputs)
        facts = B.pair_accuracy(rows)
        facts.attrs["units"] = B.covered_units(rows)
        return {"": facts}
    if method == "belief-icl":
        rows = belief_icl_rows(outputs)
        out = {}
        for ctx, g in rows.groupby("context", sort=True):
            facts = B.pair_accuracy(g)
            facts.attrs["units"] = B.covered_units(g)
            out[ctx] = facts
        return out
    if method == "monitor":
        ft = MO.frame_table(outputs)
        if ft.empty:
            anc = MO.anchors(outputs)
            return {"": anc.rename(columns={"matched": "correct"})}
        return {"": ft.groupby(["relation_id", "fact_id"], sort=True)["correct"].mean()
                .reset_index()}
    raise UserError(f"unknown method {method!r}")


# ----------------------------------------------------------------------------- headlines
# name -> (path inside a setting's metrics block, label, accuracy-like: has an interval)
HEADLINES: dict[str, dict[str, tuple[tuple[str, ...], str, bool]]] = {
    "zp-lke": {
        "mc_accuracy": (("mc_accuracy",), "MC accuracy", True),
        "probability_mass": (("probability_mass",), "gold probability mass", True),
        "response_accuracy": (("response_accuracy",), "response accuracy", True),
        "planted_accuracy": (("validity", "planted"), "planted acc.", True),
        "held_out_accuracy": (("validity", "held_out"), "held-out acc.", True),
        "validity_auroc": (("validity", "auroc"), "validity AUROC", True),
    },
    "belief": {
        "acc1": (("accuracy",), "Acc@1", True),
        "acc1_range": (("acc1_fluctuation", "range"), "Acc@1 range", False),
        "acc1_std": (("acc1_fluctuation", "std"), "Acc@1 stdev", False),
        "consistency": (("consistency",), "Consist", True),
        "overconfidence": (("overconfidence", "value"), "Overconf", False),
        "bias_single": (("bias", "single_prompt"), "bias (single)", False),
        "bias_multi": (("bias", "multi_prompt"), "bias (multi)", False),
        "coverage_average": (("coverage", "average"), "coverage avg", True),
        "coverage_maximum": (("coverage", "maximum"), "coverage max", True),
        "coverage_oracle": (("coverage", "oracle"), "coverage oracle", True),
        "planted_accuracy": (("validity", "planted"), "planted acc.", True),
        "held_out_accuracy": (("validity", "held_out"), "held-out acc.", True),
        "validity_auroc": (("validity", "auroc"), "validity AUROC", True),
    },
    "monitor": {
        "monitor": (("monitor",), "MONITOR", True),
        "pfd": (("pfd",), "PFD", True),
        "ird": (("ird",), "IRD", True),
        "anchor_probability": (("anchor_probability",), "anchor prob.", True),
        "frame_accuracy_avg": (("frame_accuracy", "avg"), "frame acc. avg", True),
        "frame_accuracy_max": (("frame_accuracy", "max"), "frame acc. max", False),
        "frame_accuracy_min": (("frame_accuracy", "min"), "frame acc. min", False),
        "anchor_match": (("anchor_match",), "anchor = gold", True),
        "planted_accuracy": (("validity", "planted"), "planted acc.", True),
        "held_out_accuracy": (("validity", "held_out"), "held-out acc.", True),
        "validity_auroc": (("validity", "auroc"), "validity AUROC", True),
    },
}
HEADLINES["prompt"] = HEADLINES["zp-lke"]
HEADLINES["belief-icl"] = {**{k: v for k, v in HEADLINES["belief"].items()
                              if not k.startswith("bias")},
                           "one_word_rate": (("one_word_rate",), "one-word rate", True)}

# The per-relation table and heatmap show this number for each method.
MAIN = {"zp-lke": "mc_accuracy", "prompt": "mc_accuracy", "belief": "acc1",
        "belief-icl": "acc1", "monitor": "monitor"}


def setting_blocks(method: str, metrics: dict) -> dict[str, dict]:
    """The metrics block of each setting of a run (BELIEF-ICL: one per context)."""
    if method == "belief-icl":
        return dict(metrics.get("contexts", {}))
    return {"": metrics}


def lookup(block: dict, path: tuple[str, ...]):
    cur = block
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def headline(block: dict, method: str, name: str) -> dict | None:
    """{value, ci_low, ci_high, n} of one headline number, or None where the run lacks it."""
    path, _, _ = HEADLINES[method][name]
    got = lookup(block, path)
    if got is None:
        return None
    if isinstance(got, dict):
        if got.get("value") is None:
            return None
        return {k: got.get(k) for k in ("value", "ci_low", "ci_high", "n")}
    return {"value": got, "ci_low": None, "ci_high": None, "n": None}


def per_relation(block: dict, method: str, name: str) -> dict:
    path, _, _ = HEADLINES[method][name]
    got = lookup(block, path)
    if isinstance(got, dict) and isinstance(got.get("per_relation"), dict):
        return got["per_relation"]
    return {}


def finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and np.isnan(x))
