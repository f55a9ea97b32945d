"""Prompt baselines of the ZP-LKE paper: HGP (a hand-written template), MMP (a mined one) and
FS-LKE (the ZP-LKE examples joined by the template).

With the template "The capital of [X] is [Y]." and the test subject France::

    HGP context:     "The capital of France is"      option: " Paris"
    FS-LKE context:  "The capital of Peru is Lima. The capital of Japan is Tokyo. The capital
                      of France is"                   option: " Paris"

The same multiple-choice and response tests as ZP-LKE follow.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import pandas as pd

from builders.core.argtypes import count
from builders.templates.files import Template, fill, y_is_last
from probes.methods.spec import Probe
from probes.methods.templates_in import load_templates
from probes.methods.zp_lke import ZPLKEConfig, _examples, choices_of
from probes.plan import Plan, Stage
from probes.requests import GenerateRequest, ScoreRequest


@dataclass(frozen=True)
class PromptConfig:
    templates: str = "data/templates"
    template_id: str = ""            # e.g. m1; default: each relation's first usable statement
    fs_examples: int = 0             # > 0: FS-LKE with that many examples
    seed: int = 0
    response_tokens: int = 10


def pick_template(templates: list[Template], wanted: str) -> Template | None:
    """The template to use: the one whose id ends in ``/wanted``, else the first statement
    with ``[Y]`` last (a left-to-right model can only score an object at the end)."""
    usable = [t for t in templates if t.style != "check" and y_is_last(t.template)]
    if wanted:
        usable = [t for t in usable if t.template_id.split("/")[-1] == wanted
                  or t.template_id == wanted]
    statements = [t for t in usable if t.style == "statement"]
    return (statements or usable or [None])[0]


def split_cloze(template: str, subject: str) -> tuple[str, str]:
    """(context, what precedes the object) for a template with ``[Y]`` last.

    >>> split_cloze("The capital of [X] is [Y].", "France")
    ('The capital of France is', ' ')
    """
    head = fill(template, subject).rpartition("[Y]")[0]
    context = head.rstrip()
    return context, head[len(context):]


def plan(facts: pd.DataFrame, templates: list[Template], cfg: PromptConfig) -> Plan:
    by_rel: dict[str, list[Template]] = {}
    for t in templates:
        by_rel.setdefault(t.relation_id, []).append(t)
    has_split = "split" in facts.columns and (facts["split"] != "").any()
    mc, gen, skipped = [], [], {}
    for relation in sorted(facts["relation_id"].unique()):
        tpl = pick_template(by_rel.get(relation, []), cfg.template_id)
        if tpl is None:
            wanted = f" {cfg.template_id!r}" if cfg.template_id else ""
            skipped[relation] = f"no template{wanted} with [Y] last" if relation in by_rel \
                else "no template for this relation"
            continue
        rel_facts = facts[facts["relation_id"] == relation]
        test = rel_facts[rel_facts["split"] == "test"] if has_split else rel_facts
        if test.empty:
            skipped[relation] = "no test facts"
            continue
        prefix = ""
        if cfg.fs_examples:
            train = rel_facts[rel_facts["split"] == "train"] if has_split else rel_facts
            shots = _examples(train, cfg.fs_examples, cfg.seed, relation, ZPLKEConfig(),
                              "--fs-examples")
            prefix = " ".join(fill(tpl.template, x, y) for x, y in shots) + " "
            test = test[~test["subject"].isin({x for x, _ in shots})]
        pool = sorted(rel_facts["object"].unique())
        group = f"{relation}|{tpl.template_id}|{cfg.fs_examples}"
        for row in test.itertuples(index=False):
            context, gap = split_cloze(tpl.template, row.subject)
            context = prefix + context
            options = choices_of(pd.Series(row._asdict()), pool)
            meta = {"fact_id": row.fact_id, "relation_id": relation, "gold": row.object,
                    "template_id": tpl.template_id, "n_examples": cfg.fs_examples}
            mc.append(ScoreRequest(context, tuple(gap + o for o in options), group=group,
                                   meta=meta,
                                   option_meta=tuple({"option": k, "option_text": gap + o,
                                                      "is_gold": o == row.object}
                                                     for k, o in enumerate(options))))
            if cfg.response_tokens:
                gen.append(GenerateRequest(context, cfg.response_tokens, group=group, meta=meta))
    stages = [Stage("mc", "score", mc)]
    if gen:
        stages.append(Stage("response", "generate", gen))
    return Plan("prompt", stages, {"skipped_relations": skipped}, skipped=skipped)


def plan_tables(tables: dict[str, pd.DataFrame], cfg: PromptConfig) -> Plan:
    return plan(tables["facts"], load_templates(cfg.templates), cfg)


# ----------------------------------------------------------------------- command line

def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("prompt")
    g.add_argument("--templates", default="data/templates",
                   help="YAML template folder, a templates dataset, or LPAQA .jsonl files")
    g.add_argument("--template-id", default="", help="template to use (e.g. m2); default: the "
                   "first statement of each relation with [Y] last")
    g.add_argument("--fs-examples", type=count, default=0,
                   help="FS-LKE: that many examples joined by the template")
    g.add_argument("--seed", type=count, default=0)
    g.add_argument("--response-tokens", type=count, default=10,
                   help="greedy tokens for the response test (0: off)")


def from_args(args: argparse.Namespace) -> PromptConfig:
    return PromptConfig(templates=args.templates, template_id=args.template_id,
                        fs_examples=args.fs_examples, seed=args.seed,
                        response_tokens=args.response_tokens)


PROBE = Probe(
    name="prompt", summary="HGP / MMP template baselines and FS-LKE",
    examples="""\
  factprobe eval prompt --dataset data/datasets/sample-mc --model data/models/planted \\
      --out data/results/sample-mc/prompt/planted
  factprobe eval prompt --dataset mc/ --model gpt2 --templates lpaqa/ --out r/   # mined (MMP)
  factprobe eval prompt --dataset mc/ --model gpt2 --fs-examples 50 --out r/     # FS-LKE
""",
    config=PromptConfig, tables=("facts",), plan=plan_tables, add_flags=add_flags,
    from_args=from_args, citation="zp-lke")   # the baselines of the ZP-LKE paper
