"""MONITOR (Wang et al.): how stable a model's answer is across paraphrases and misleading
context, measured on the probabilities of one anchor answer.

For a fact with base question "What is the capital of France?", gold Paris, negative Rome::

    positive:   "Paris. What is the capital of France?\\nAnswer:"   -> greedy anchor " Paris"
    paraphrase: "Which city is France's seat of power?\\nAnswer:"    -> P(anchor tokens)
    negative:   "Rome. What is the capital of France?\\nAnswer:"     -> P(anchor tokens)

A fact counts only if the anchor equals the gold (after trimming punctuation). Foreign anchor
probabilities are teacher-forced by default; ``compat`` reads them from free-running greedy
generation under each prompt, as the authors' code does. The paraphrase set is every question
of the relation, the base included, as in the authors' evaluation.
"""
from __future__ import annotations

import argparse
import string
from dataclasses import dataclass

import pandas as pd

from builders.core.argtypes import positive
from builders.core.errors import UserError
from builders.templates.files import Template, fill, question_text
from probes.methods.multiprompt_in import templates_of
from probes.methods.spec import Probe
from probes.plan import Plan, Stage
from probes.requests import GenerateRequest, ScoreRequest


@dataclass(frozen=True)
class MonitorConfig:
    compat: bool = False
    max_new_tokens: int = 10
    frames: bool = True               # greedy answers under every prompt (frame accuracies)


def prompt(question: str, prefix: str = "") -> str:
    """
    >>> prompt("What is the capital of France?", "Rome. ")
    'Rome. What is the capital of France?\\nAnswer:'
    """
    return f"{prefix}{question}\nAnswer:"


def trimmed(text: str) -> str:
    """
    >>> trimmed(" Paris.")
    'Paris'
    """
    return text.strip().strip(string.punctuation + " ").strip()


def plan(facts: pd.DataFrame, templates: list[Template], cfg: MonitorConfig) -> Plan:
    if "negatives" not in facts.columns:
        raise UserError("MONITOR needs a facts table with negatives: build it with "
                        "'factprobe build fktc'")
    questions: dict[str, list[Template]] = {}
    base: dict[str, Template] = {}
    for t in templates:
        # a question without its subject asks the same thing of every fact
        if t.style != "question" or question_text(t.template).count("[X]") != 1:
            continue
        questions.setdefault(t.relation_id, []).append(t)
        if getattr(t, "is_base", False):
            base[t.relation_id] = t
    for rel, qs in questions.items():
        base.setdefault(rel, qs[0])
    per_fact = {}
    anchors, frames = [], []
    skipped = sorted(set(facts["relation_id"]) - set(questions))
    for row in facts.itertuples(index=False):
        if row.relation_id not in questions:
            continue
        q0 = fill(question_text(base[row.relation_id].template), row.subject)
        meta = {"fact_id": row.fact_id, "relation_id": row.relation_id, "gold": row.object}
        paraphrases = [(t.template_id, prompt(fill(question_text(t.template), row.subject)))
                       for t in questions[row.relation_id]]
        negatives = [prompt(q0, f"{neg}. ") for neg in row.negatives]
        per_fact[row.fact_id] = (meta, paraphrases, negatives)
        anchors.append(GenerateRequest(prompt(q0, f"{row.object}. "), cfg.max_new_tokens,
                                       stop=("\n",), meta={**meta, "frame": "positive",
                                                           "index": 0}))
        if cfg.frames:
            for j, (tid, text) in enumerate(paraphrases):
                frames.append(GenerateRequest(text, cfg.max_new_tokens, stop=("\n",), meta={
                    **meta, "frame": "paraphrase", "index": j, "template_id": tid}))
            for m, text in enumerate(negatives):
                frames.append(GenerateRequest(text, cfg.max_new_tokens, stop=("\n",), meta={
                    **meta, "frame": "negative", "index": m}))

    def foreign(outputs: pd.DataFrame) -> list:
        got = outputs[outputs["stage"] == "anchor"]
        reqs = []
        for a in got.itertuples(index=False):
            if trimmed(a.text) != a.gold or len(a.token_ids) == 0:
                continue
            ids = tuple(int(i) for i in a.token_ids)
            meta, paraphrases, negatives = per_fact[a.fact_id]
            frames_ = [("paraphrase", j, t) for j, (_, t) in enumerate(paraphrases)] + \
                      [("negative", m, t) for m, t in enumerate(negatives)]
            for frame, idx, text in frames_:
                fm = {**meta, "frame": frame, "index": idx}
                if cfg.compat:
                    reqs.append(GenerateRequest(text, len(ids), watch=ids, meta=fm))
                else:
                    reqs.append(ScoreRequest(text, (), continuation_ids=(ids,), meta=fm,
                                             option_meta=({"option": 0, "is_gold": True},)))
        return reqs

    stages = [Stage("anchor", "generate", anchors)]
    if frames:
        stages.append(Stage("frames", "generate", frames))
    stages.append(Stage("foreign", "generate" if cfg.compat else "score", build=foreign))
    return Plan("monitor", stages, {"facts": len(per_fact), "relations_without_questions":
                                    skipped},
                skipped={r: "no question template with one [X]" for r in skipped})


class Based:
    """A template with FKTC's ``is_base`` flag (the base question of its relation)."""

    def __init__(self, template, is_base: bool):
        self._t, self.is_base = template, is_base

    def __getattr__(self, name):
        return getattr(self._t, name)


def plan_tables(tables: dict[str, pd.DataFrame], cfg: MonitorConfig) -> Plan:
    table = tables["templates"]
    flags = [bool(r.get("is_base", False)) for r in table.to_dict("records")]
    return plan(tables["facts"], [Based(t, b) for t, b in zip(templates_of(table), flags)],
                cfg)


# ----------------------------------------------------------------------- command line

def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("MONITOR")
    g.add_argument("--compat", action="store_true",
                   help="free-running foreign anchors, as the authors' code")
    g.add_argument("--max-new-tokens", type=positive, default=10)
    g.add_argument("--no-frames", action="store_true",
                   help="skip greedy answers under every prompt (frame accuracies)")


def from_args(args: argparse.Namespace) -> MonitorConfig:
    return MonitorConfig(compat=args.compat, max_new_tokens=args.max_new_tokens,
                         frames=not args.no_frames)


PROBE = Probe(
    name="monitor", summary="MONITOR on FKTC-style prompts",
    examples="""\
  factprobe eval monitor --dataset data/datasets/sample-fktc --model data/models/planted \\
      --out data/results/sample-fktc/monitor/planted
  factprobe eval monitor --dataset fktc/ --model bigscience/bloomz-560m --compat --out r/
""",
    config=MonitorConfig, tables=("facts", "templates"), plan=plan_tables,
    add_flags=add_flags, from_args=from_args, citation="monitor")
