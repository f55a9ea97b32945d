"""probes/methods/gold_prob.py of docs/extending.md's worked example: the log-probability of
each fact's object right after its subject (tests/test_extending.py adds it to a copy of the
repository exactly as the page says)."""
import argparse
from dataclasses import dataclass

import pandas as pd

from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import ScoreRequest


@dataclass(frozen=True)
class GoldProbConfig:
    sep: str = " "                    # between the subject and the object


def plan(facts: pd.DataFrame, cfg: GoldProbConfig) -> Plan:
    """One request per fact: the subject as context, the object as the one continuation."""
    requests = [ScoreRequest(row.subject, (cfg.sep + row.object,),
                             meta={"fact_id": row.fact_id, "relation_id": row.relation_id},
                             option_meta=({"option": 0, "is_gold": True},))
                for row in facts.itertuples(index=False)]
    return Plan("gold-prob", [Stage("gold", "score", requests)], {"facts": len(requests)})


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("gold-prob")
    g.add_argument("--sep", default=" ", help="between the subject and the object (' ')")


PROBE = Probe(
    name="gold-prob", summary="log-probability of each object after its subject",
    examples="  factprobe eval gold-prob --dataset facts/ --model gpt2 --out run/\n",
    config=GoldProbConfig, tables=("facts",),
    plan=lambda tables, cfg: plan(tables["facts"], cfg),
    add_flags=add_flags, from_args=lambda args: GoldProbConfig(sep=args.sep),
    # the line dataset cards of the kinds it reads show (factprobe publish); no paper to cite
    card="gold-prob: the log-probability of each fact's object after its subject "
         "(`factprobe eval gold-prob`).", serves=("facts", "mc"),
    pipeline=Pipeline("mc"))          # its DVC stage reads the mc dataset, no extra flags
