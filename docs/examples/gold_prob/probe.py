"""probes/methods/gold_prob.py of docs/extending.md's worked example: the probability of each
fact's object among its relation's objects, after its subject in the relation's first
statement template (tests/test_extending.py adds it to a copy of the repository exactly as the
page says)."""
import argparse
from dataclasses import dataclass

import pandas as pd

from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.methods.templates_in import load_templates
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import ScoreRequest


@dataclass(frozen=True)
class GoldProbConfig:
    templates: str = "data/templates"  # where the relations' templates are (as eval prompt's)


def plan(facts: pd.DataFrame, cfg: GoldProbConfig) -> Plan:
    """One request per fact: its relation's first statement template up to ``[Y]``, the
    subject in ``[X]``, as context, and its options as continuations (an mc dataset's
    ``choices``, else every object of the relation); the metrics read the gold's share. A
    split dataset is asked about its test facts, as the shipped methods do."""
    frames = {}
    for t in load_templates(cfg.templates, sorted(set(facts["relation_id"]))):
        head, _, _ = t.template.partition("[Y]")
        if t.style == "statement" and "[X]" in head and t.relation_id not in frames:
            frames[t.relation_id] = head.rstrip()
    objects = facts.groupby("relation_id")["object"].apply(lambda s: sorted(set(s))).to_dict()
    if "split" in facts.columns and (facts["split"] == "test").any():
        facts = facts[facts["split"] == "test"]      # a split dataset: its test facts

    def options(row):   # an mc dataset's choices (the gold among them), else the relation's
        return list(row.choices) if "choices" in facts.columns else objects[row.relation_id]
    requests = [ScoreRequest(frames[row.relation_id].replace("[X]", row.subject),
                             tuple(" " + o for o in options(row)),
                             meta={"fact_id": row.fact_id, "relation_id": row.relation_id},
                             option_meta=tuple({"option": k, "is_gold": o == row.object}
                                               for k, o in enumerate(options(row))))
                for row in facts.itertuples(index=False) if row.relation_id in frames]
    skipped = {r: "no statement template with [X] before [Y]"
               for r in sorted(set(facts["relation_id"]) - set(frames))}
    return Plan("gold-prob", [Stage("gold", "score", requests)], {"facts": len(requests)},
                skipped=skipped)


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("gold-prob")
    g.add_argument("--templates", default="data/templates",
                   help="YAML template folder or a templates dataset (data/templates)")


PROBE = Probe(
    name="gold-prob", summary="probability of each object among its relation's, after its subject",
    examples="  factprobe eval gold-prob --dataset facts/ --model gpt2 --out run/\n",
    config=GoldProbConfig, tables=("facts",),
    plan=lambda tables, cfg: plan(tables["facts"], cfg),
    add_flags=add_flags, from_args=lambda args: GoldProbConfig(templates=args.templates),
    # the line dataset cards of the kinds it reads show (factprobe publish); no paper to cite
    card="gold-prob: the probability of each fact's object among its relation's, after its subject "
         "(`factprobe eval gold-prob`).", serves=("facts", "mc"),
    pipeline=Pipeline("mc"))          # its DVC stage reads the mc dataset, no extra flags
