"""BELIEF-ICL for decoder LMs (Zhao et al., Sec. 3): masked prompts answered in one word after
an instruction and X in-context examples.

Mask style, 4-template context, target (France, capital)::

    Predict the [MASK] in each sentence in one word.
    Q: The capital of Peru is [MASK].
    A: Lima.
    ... (4 examples)
    Q: The capital of France is [MASK].
    A:

QA style uses question templates and "Answer each question in one word.". Contexts:
``zero`` (no examples), ``X-random`` (any relation, random templates), ``X-relation`` (same
relation, random templates), ``X-template`` (same relation and template). The greedy answer is
generated for every prompt; ``samples`` multinomial samples for a seeded subset give the
confidence.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from builders.core.errors import UserError
from builders.templates.files import Template, fill, question_text
from probes.methods.multiprompt_in import Pair, pairs_of, usable_templates
from probes.plan import Plan, Stage
from probes.requests import GenerateRequest

INSTRUCTION = {"mask": "Predict the [MASK] in each sentence in one word.",
               "qa": "Answer each question in one word."}


@dataclass(frozen=True)
class BeliefICLConfig:
    contexts: tuple[str, ...] = ("4-template",)
    style: str = "mask"                # mask | qa
    samples: int = 100
    sample_prompts: int = 10_000       # prompts that get samples (a seeded subset)
    max_new_tokens: int = 10
    max_names: int | None = None
    seed: int = 0


def parse_context(name: str) -> tuple[int, str]:
    """
    >>> parse_context("4-relation"), parse_context("zero")
    ((4, 'relation'), (0, 'zero'))
    """
    if name == "zero":
        return 0, "zero"
    n, _, kind = name.partition("-")
    if not n.isdigit() or kind not in ("random", "relation", "template"):
        raise UserError(f"context {name!r}: use zero, X-random, X-relation or X-template "
                        f"(X a number, e.g. 4-template)")
    return int(n), kind


def _query(t: Template, subject: str, style: str) -> str:
    if style == "qa":
        return fill(question_text(t.template), subject)
    return fill(t.template, subject).replace("[Y]", "[MASK]")


def render(instruction: str, shots: list[tuple[str, str]], query: str) -> str:
    lines = [instruction] + [f"Q: {q}\nA: {a}." for q, a in shots] + [f"Q: {query}\nA:"]
    return "\n".join(lines)


def plan(facts: pd.DataFrame, templates: list[Template], cfg: BeliefICLConfig) -> Plan:
    if cfg.style not in INSTRUCTION:
        raise UserError(f"--style {cfg.style!r}: choose mask or qa")
    styles = ("question",) if cfg.style == "qa" else ("statement", "question")
    by_rel = usable_templates(templates, styles)
    skipped = {r: f"no {' or '.join(styles)} template with one [X] and one [Y]"
               for r in sorted(set(facts["relation_id"]) - set(by_rel))}
    pairs = [p for p in pairs_of(facts, cfg.max_names) if p.relation_id in by_rel]
    by_rel_pairs: dict[str, list[Pair]] = {}
    for p in pairs:
        by_rel_pairs.setdefault(p.relation_id, []).append(p)
    contexts = [parse_context(c) for c in cfg.contexts]
    greedy = []
    for ctx_name, (x, kind) in zip(cfg.contexts, contexts):
        for p in pairs:
            for t in by_rel[p.relation_id]:
                for name in p.subject_names:
                    key = f"{ctx_name}\x1f{p.fact_id}\x1f{t.template_id}\x1f{name}"
                    rng = np.random.default_rng([cfg.seed, zlib.crc32(key.encode())])
                    shots = _shots(rng, x, kind, p, t, by_rel, by_rel_pairs, pairs, cfg.style)
                    prompt = render(INSTRUCTION[cfg.style], shots, _query(t, name, cfg.style))
                    greedy.append(GenerateRequest(prompt, cfg.max_new_tokens, stop=("\n",),
                                                  seed=cfg.seed, meta={
                        "fact_id": p.fact_id, "relation_id": p.relation_id,
                        "subject_id": p.subject_id, "template_id": t.template_id,
                        "subject_name": name, "context": ctx_name, "gold": p.gold,
                        "gold_names": list(p.gold_names)}))
    rng = np.random.default_rng(cfg.seed)
    chosen = sorted(rng.permutation(len(greedy))[:cfg.sample_prompts].tolist()) \
        if cfg.samples else []
    sampled = [GenerateRequest(greedy[i].prompt, cfg.max_new_tokens, samples=cfg.samples,
                               stop=("\n",), seed=cfg.seed, meta=greedy[i].meta) for i in chosen]
    stages = [Stage("greedy", "generate", greedy)]
    if sampled:
        stages.append(Stage("samples", "generate", sampled))
    return Plan("belief-icl", stages, {"pairs": len(pairs), "prompts": len(greedy),
                                       "sampled_prompts": len(sampled)}, skipped=skipped)


def _shots(rng, x, kind, p, t, by_rel, by_rel_pairs, pairs, style) -> list[tuple[str, str]]:
    if x == 0:
        return []
    if kind == "random":
        pool = [q for q in pairs if q.fact_id != p.fact_id]
    else:
        pool = [q for q in by_rel_pairs[p.relation_id] if q.fact_id != p.fact_id]
    if not pool:
        return []
    picks = rng.choice(len(pool), size=min(x, len(pool)), replace=False)
    shots = []
    for i in picks:
        q = pool[int(i)]
        if kind == "template":
            tq = t
        else:
            rel_tpls = by_rel[q.relation_id]
            tq = rel_tpls[int(rng.integers(len(rel_tpls)))]
        shots.append((_query(tq, q.subject_names[0], style), q.gold))
    return shots
