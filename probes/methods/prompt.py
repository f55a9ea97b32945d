"""Prompt baselines of the ZP-LKE paper (Wu et al., WSDM 2025): HGP (hand-written templates),
MMP (mined ones) and FS-LKE (the ZP-LKE examples with the template in place of the
subject-object separator).

Sec. 4.1: "We randomly sample three human-generated prompts (HGP) and machine-mined prompts
(MMP)" per relation, so every relation gets ``template_count`` (3) templates drawn at random
(seeded) from its pool, each a question of its own; the metrics give each template and the
mean. With the template "[X] was born in [Y]." and the test subject Peter Grunberg::

    HGP context:     "Peter Grunberg was born in"                          option: " 1939"
    FS-LKE context:  "Albert Einstein was born in 1879, Brian Kobilka was born in 1955,
                      Peter Grunberg was born in"                          option: " 1939"

FS-LKE is the paper's Table 1 and Fig. 6 ("replacing the separator token ' ' between subjects
and objects" by the prompt): each example is the template filled up to its object, the
examples joined by ZP-LKE's pair separator ", ". The same multiple-choice and response tests
as ZP-LKE follow.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factprobe.core.argtypes import count, positive
from factprobe.core.errors import UserError
from factprobe.builders.templates.files import Template, fill, y_is_last
from factprobe.probes.methods.flags import nonempty
from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.methods.templates_in import load_templates
from factprobe.probes.methods.zp_lke import (
    ZPLKEConfig,
    _examples,
    _rng,
    add_accuracy_at_k,
    choices_of,
)
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pandas as pd


@dataclass(frozen=True)
class PromptConfig:
    templates: str = "data/templates"
    template_id: str = ""            # e.g. m1: that one template instead of a random sample
    template_count: int = 3          # templates drawn at random per relation (Sec. 4.1: three)
    fs_examples: int = 0             # > 0: FS-LKE with that many examples
    fs_pair_sep: str = ", "          # between FS-LKE examples (Table 1)
    seed: int = 0                    # draws the templates and the FS-LKE examples
    response_tokens: int = 10
    accuracy_at_k: str = "formula"   # formula (App. D's set, >= K) | text (its prose, > K)


def pick_templates(templates: list[Template], wanted: str, count: int = 3, seed: int = 0,
                   relation: str = "") -> list[Template]:
    """The relation's templates to use: the one whose id ends in ``/wanted``; else ``count``
    drawn at random (seeded by ``seed`` and the relation) from its statements with ``[Y]``
    last (a left-to-right model can only score an object at the end), all of them when it has
    no more than ``count``. Drawn templates keep the pool's order.

    >>> pool = [Template(f"r/m{i}", "r", f"[X] t{i} [Y].", "statement") for i in range(5)]
    >>> [t.template_id for t in pick_templates(pool, "", 3, seed=0, relation="r")]
    ['r/m0', 'r/m1', 'r/m3']
    >>> [t.template_id for t in pick_templates(pool, "m2")]
    ['r/m2']
    """
    usable = [t for t in templates if t.style != "check" and y_is_last(t.template)]
    if wanted:
        usable = [t for t in usable if t.template_id.split("/")[-1] == wanted
                  or t.template_id == wanted]
        return usable[:1]
    pool = [t for t in usable if t.style == "statement"] or usable
    if len(pool) <= count:
        return pool
    picked = _rng(seed, relation, "templates").choice(len(pool), size=count, replace=False)
    return [pool[i] for i in sorted(picked.tolist())]


def fs_example(template: str, subject: str, obj: str) -> str:
    """One FS-LKE example: the template filled up to its object (what follows ``[Y]`` dropped,
    as the prompt stands in for ZP-LKE's subject-object separator).

    >>> fs_example("[X] was born in [Y].", "Albert Einstein", "1879")
    'Albert Einstein was born in 1879'
    """
    return fill(template.rpartition("[Y]")[0] + "[Y]", subject, obj)


def split_cloze(template: str, subject: str) -> tuple[str, str]:
    """(context, what precedes the object) for a template with ``[Y]`` last.

    >>> split_cloze("The capital of [X] is [Y].", "France")
    ('The capital of France is', ' ')
    """
    head = fill(template, subject).rpartition("[Y]")[0]
    context = head.rstrip()
    return context, head[len(context):]


def plan(facts: pd.DataFrame, templates: list[Template], cfg: PromptConfig) -> Plan:
    import pandas as pd
    by_rel: dict[str, list[Template]] = {}
    for t in templates:
        by_rel.setdefault(t.relation_id, []).append(t)
    has_split = "split" in facts.columns and (facts["split"] != "").any()
    mc, gen, skipped = [], [], {}
    used: dict[str, list[str]] = {}
    shown: set[str] = set()
    for relation in sorted(facts["relation_id"].unique()):
        tpls = pick_templates(by_rel.get(relation, []), cfg.template_id, cfg.template_count,
                              cfg.seed, relation)
        if not tpls:
            wanted = f" {cfg.template_id!r}" if cfg.template_id else ""
            skipped[relation] = f"no template{wanted} with [Y] last" if relation in by_rel \
                else "no template for this relation"
            continue
        rel_facts = facts[facts["relation_id"] == relation]
        test = rel_facts[rel_facts["split"] == "test"] if has_split else rel_facts
        shots: list[tuple[str, str]] = []
        if cfg.fs_examples:
            train = rel_facts[rel_facts["split"] == "train"] if has_split else rel_facts
            shots = _examples(train, cfg.fs_examples, cfg.seed, relation, ZPLKEConfig(),
                              "--fs-examples")
            test = test[~test["subject"].isin({x for x, _ in shots})]
            if not has_split:   # examples drawn from the facts asked about: only shown
                shown.update(rel_facts.loc[rel_facts["subject"].isin({x for x, _ in shots}),
                                           "fact_id"])
        if test.empty:
            skipped[relation] = "no test facts"
            continue
        used[relation] = [t.template_id for t in tpls]
        pool = sorted(rel_facts["object"].unique())
        for tpl in tpls:
            prefix = "".join(fs_example(tpl.template, x, y) + cfg.fs_pair_sep for x, y in shots)
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
                    gen.append(GenerateRequest(context, cfg.response_tokens, group=group,
                                               meta=meta))
    stages = [Stage("mc", "score", mc)]
    if gen:
        stages.append(Stage("response", "generate", gen))
    return Plan("prompt", stages, {"skipped_relations": skipped, "templates": used},
                skipped=skipped, integer_columns=("n_examples",),
                examples_only=frozenset(shown))


def plan_tables(tables: dict[str, pd.DataFrame], cfg: PromptConfig) -> Plan:
    return plan(tables["facts"], load_templates(cfg.templates), cfg)


# ----------------------------------------------------------------------- command line

def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("prompt")
    g.add_argument("--templates", default="data/templates",
                   help="YAML template folder, a templates dataset, or LPAQA .jsonl files")
    g.add_argument("--template-id", default="", help="one template (e.g. m2) instead of "
                   "--template-count drawn at random")
    g.add_argument("--template-count", type=positive, default=3,
                   help="templates drawn at random (--seed) per relation from its statements "
                   "with [Y] last (the paper: 3); each is scored, the metrics give each and "
                   "the mean")
    g.add_argument("--fs-examples", type=count, default=0,
                   help="FS-LKE: that many examples, the template in place of the "
                   "subject-object separator")
    g.add_argument("--fs-pair-sep", default=", ", type=nonempty,
                   help="between FS-LKE examples (', ', the paper's Table 1)")
    g.add_argument("--seed", type=count, default=0,
                   help="draws the templates and the FS-LKE examples")
    g.add_argument("--response-tokens", type=count, default=10,
                   help="greedy tokens for the response test (0: off)")
    add_accuracy_at_k(g)


def from_args(args: argparse.Namespace) -> PromptConfig:
    if args.template_id and args.template_count != PromptConfig.template_count:
        raise UserError("--template-id picks one template; drop --template-count")
    return PromptConfig(templates=args.templates, template_id=args.template_id,
                        template_count=args.template_count, fs_examples=args.fs_examples,
                        fs_pair_sep=args.fs_pair_sep, seed=args.seed,
                        response_tokens=args.response_tokens, accuracy_at_k=args.accuracy_at_k)


PROBE = Probe(
    name="prompt", summary="HGP / MMP template baselines and FS-LKE",
    needs=frozenset({"score", "generate"}),
    examples="""\
  factprobe eval prompt --dataset data/datasets/sample-mc --model data/models/planted \\
      --out data/results/sample-mc/prompt/planted
  factprobe eval prompt --dataset mc/ --model gpt2 --templates lpaqa/ --out r/   # mined (MMP)
  factprobe eval prompt --dataset mc/ --model gpt2 --fs-examples 50 --out r/     # FS-LKE
  factprobe eval prompt --dataset mc/ --model gpt2 --template-id m1 --out r/     # one template
""",
    config=PromptConfig, tables=("facts",), plan=plan_tables, add_flags=add_flags,
    from_args=from_args, citation="zp-lke",   # the baselines of the ZP-LKE paper
    pipeline=Pipeline("mc", args="--templates data/templates",
                      flags="--templates='${templates.dir}'", deps=("${templates.dir}",),
                      params=("templates.dir",)))
