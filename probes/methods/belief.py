"""BELIEF for masked LMs (Zhao et al.): every prompt of every subject-relation pair, the
object replaced by the mask, plus content-free prompts for the bias level.

For the pair (France, capital) and the template "The capital of [X] is [Y]."::

    "The capital of France is [MASK]."          (and the same with each alias of France)
    content-free: "The capital of N/A is [MASK]."  candidates: the relation's objects

The backend returns the top-k tokens at the mask and, for each candidate that is one token of
the model's vocabulary where it stands at the mask ("Paris" for BERT, "ĠParis" for RoBERTa),
that token and its probability; pairs with no such gold are counted per relation and skipped
by the metrics, as the paper evaluates single-token objects only (footnote 6).

Metric choices recorded in the config (``run.json``'s ``method_config``, so ``factprobe
report`` recomputes the same way): ``match`` (exact token, the paper; or normalised) and
``coverage_subject`` (Maximum coverage with each fact's best subject name, footnote 16; or
the names' mean).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factprobe.core.argtypes import positive
from factprobe.builders.templates.files import Template, fill
from factprobe.probes.methods.multiprompt_in import pairs_of, templates_of, usable_templates
from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import MASK, MaskRequest

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pandas as pd


@dataclass(frozen=True)
class BeliefConfig:
    top_k: int = 10
    styles: tuple[str, ...] = ("statement", "question")
    content_free: tuple[str, ...] = ("N/A", "", "?")
    max_names: int | None = None      # subject names per pair (label first)
    match: str = "exact"              # top-1 vs gold: exact token (paper) | normalised
    coverage_subject: str = "best"    # Maximum coverage: best subject name (paper) | mean
    # bias level (Sec. 5.4, footnote 12): each content-free input's candidate distribution
    # renormalised before the three are averaged (each), or averaged raw, then renormalised
    bias_renormalise: str = "each"


def masked(template: str, subject: str) -> str:
    """
    >>> masked("The capital of [X] is [Y].", "France")
    'The capital of France is [MASK].'
    """
    return fill(template, subject).replace("[Y]", MASK)


def plan(facts: pd.DataFrame, templates: list[Template], cfg: BeliefConfig) -> Plan:
    by_rel = usable_templates(templates, cfg.styles)
    main, free = [], []
    pairs = pairs_of(facts, cfg.max_names)
    skipped = sorted({p.relation_id for p in pairs} - set(by_rel))
    for p in pairs:
        for t in by_rel.get(p.relation_id, []):
            for name in p.subject_names:
                main.append(MaskRequest(masked(t.template, name), cfg.top_k, p.gold_names, meta={
                    "fact_id": p.fact_id, "relation_id": p.relation_id,
                    "subject_id": p.subject_id, "template_id": t.template_id,
                    "subject_name": name, "gold": p.gold, "gold_names": list(p.gold_names)}))
    objects = facts.groupby("relation_id")["object"].apply(lambda s: sorted(set(s))).to_dict()
    for rel, tpls in sorted(by_rel.items()):
        if rel not in objects:
            continue
        for t in tpls:
            for cf in cfg.content_free:
                free.append(MaskRequest(masked(t.template, cf), cfg.top_k,
                                        tuple(objects[rel]), meta={
                                            "relation_id": rel, "template_id": t.template_id,
                                            "content_free": cf, "candidates": objects[rel]}))
    return Plan("belief", [Stage("prompts", "fill_mask", main),
                           Stage("content_free", "fill_mask", free)],
                {"pairs": len(pairs), "relations_without_templates": skipped},
                skipped={r: "no statement or question template with one [X] and one [Y]"
                         for r in skipped})


def plan_tables(tables: dict[str, pd.DataFrame], cfg: BeliefConfig) -> Plan:
    return plan(tables["facts"], templates_of(tables["templates"]), cfg)


# ----------------------------------------------------------------------- command line

def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("BELIEF")
    g.add_argument("--top-k", type=positive, default=10,
                   help="tokens kept at each mask (at most the vocabulary)")
    g.add_argument("--match", choices=("exact", "normalised"), default="exact",
                   help="top-1 token vs gold: the same token (the paper; default) or equal "
                        "after lower-casing and dropping punctuation and the word-start mark")
    g.add_argument("--max-names", type=positive, help="subject names per pair (label first)")
    g.add_argument("--bias-renormalise", choices=("each", "after"), default="each",
                   help="bias level (Sec. 5.4, footnote 12): renormalise each content-free "
                        "input's distribution over the candidates, then average the three "
                        "(each, default), or average the raw probabilities, then "
                        "renormalise (after)")
    add_metric_flags(g)


def add_metric_flags(g) -> None:
    """The metric choices BELIEF and BELIEF-ICL share (each default is the paper's)."""
    g.add_argument("--coverage-subject", choices=("best", "mean"), default="best",
                   help="Maximum coverage per fact and template: the best subject name's "
                        "prompt (the paper's footnote 16; default) or the mean over names")


def from_args(args: argparse.Namespace) -> BeliefConfig:
    return BeliefConfig(top_k=args.top_k, max_names=args.max_names, match=args.match,
                        coverage_subject=args.coverage_subject,
                        bias_renormalise=args.bias_renormalise)


PROBE = Probe(
    name="belief", summary="BELIEF on a masked LM (multi-prompt dataset)",
    needs=frozenset({"fill_mask", "mask_each"}),
    examples="""\
  factprobe eval belief --dataset data/datasets/sample-multiprompt \\
      --model data/models/planted-mlm --out data/results/sample-multiprompt/belief/planted-mlm
  factprobe eval belief --dataset multiprompt/ --model bert-base-cased --out r/
""",
    config=BeliefConfig, tables=("facts", "templates"), plan=plan_tables, add_flags=add_flags,
    from_args=from_args, citation="belief",
    card=("BELIEF / BELIEF-ICL (Zhao, Yoshinaga and Oba, 2024): multi-prompt probing, subject "
          "aliases x templates; accuracy, consistency and over-confidence (`factprobe eval "
          "belief`, `factprobe eval belief-icl`)."),
    serves=("multiprompt", "templates"), backend="hf-masked",
    pipeline=Pipeline("multiprompt", args="--max-names 1", init_args="--max-names 1"))
