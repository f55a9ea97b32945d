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
confidence (:func:`sample_units`: distinct prompts of distinct subject-relation pairs, the
same ones in every context).

The greedy answer (and each sample) stops at the end of its line ("\n": the Q/A format puts
one answer on a line, and the next line would be the model writing the next "Q:") or after
``max_new_tokens`` tokens (10). The paper sets no cap (Sec. 3: "LLMs generate responses
without a token limit"). The cap bounds the cost of a model that never ends the line, and the
reward of one that rambles: accuracy matches one way (the gold inside the answer), so an
answer that lists many objects could only gain from more tokens. Answers the instruction asks
for are one word, a few tokens (footnote 15: 98.78% of Llama3-8B's 4-template answers are
within five), so 10 cuts almost none of them; ``--max-new-tokens`` raises it.
"""
from __future__ import annotations

import argparse
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factprobe.core.argtypes import count, positive
from factprobe.core.errors import UserError
from factprobe.builders.templates.files import Template, fill, question_text
from factprobe.probes.methods.belief import add_metric_flags
from factprobe.probes.methods.multiprompt_in import Pair, pairs_of, templates_of, usable_templates
from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import numpy as np
    import pandas as pd

INSTRUCTION = {"mask": "Predict the [MASK] in each sentence in one word.",
               "qa": "Answer each question in one word."}


@dataclass(frozen=True)
class BeliefICLConfig:
    contexts: tuple[str, ...] = ("4-template",)
    style: str = "mask"                # mask | qa
    samples: int = 100
    sample_prompts: int = 10_000       # per context: distinct prompts of distinct pairs
    max_new_tokens: int = 10
    max_names: int | None = None
    seed: int = 0
    coverage_subject: str = "best"     # Maximum coverage: best subject name (paper) | mean
    # lemma lists "included in the other" (Sec. 3.2): as a contiguous run (contiguous) or
    # every lemma present in any order (any-order)
    lemma_match: str = "contiguous"


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
    import numpy as np
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
    units = set(sample_units(pairs, by_rel, cfg.sample_prompts, cfg.seed)) \
        if cfg.samples else set()
    sampled = [GenerateRequest(g.prompt, cfg.max_new_tokens, samples=cfg.samples,
                               stop=("\n",), seed=cfg.seed, meta=g.meta) for g in greedy
               if (g.meta["fact_id"], g.meta["template_id"], g.meta["subject_name"]) in units]
    stages = [Stage("greedy", "generate", greedy)]
    if sampled:
        stages.append(Stage("samples", "generate", sampled))
    return Plan("belief-icl", stages, {"pairs": len(pairs), "prompts": len(greedy),
                                       "sampled_prompts": len(sampled),
                                       "sampled_per_context": len(units)}, skipped=skipped)


def sample_units(pairs: list[Pair], by_rel: dict[str, list[Template]], n: int, seed: int
                 ) -> list[tuple[str, str, str]]:
    """The (fact_id, template_id, subject_name) prompts that get samples, in every context:
    ``n`` distinct prompts, each of a different subject-relation pair while pairs last (the
    paper's "10K prompts from 10K unique subject-relation pairs", Sec. 3), then a second
    distinct prompt per pair, and so on. Pairs and their prompts are in a seeded order.

    >>> ps = [Pair("r", s, s, (s,), "g", ("g",)) for s in ("a", "b", "c")]
    >>> t = {"r": [Template("r/1", "r", "[X] [Y]", "statement", "", ""),
    ...            Template("r/2", "r", "[Y] [X]", "statement", "", "")]}
    >>> got = sample_units(ps, t, 4, 0)
    >>> len(set(got)), sorted({f for f, _, _ in got[:3]})
    (4, ['a', 'b', 'c'])
    """
    import numpy as np
    rng = np.random.default_rng([seed, 0x5A4D])
    queues = []
    for i in rng.permutation(len(pairs)):
        p = pairs[int(i)]
        units = [(p.fact_id, t.template_id, name) for t in by_rel[p.relation_id]
                 for name in p.subject_names]
        queues.append([units[int(j)] for j in rng.permutation(len(units))])
    out: list[tuple[str, str, str]] = []
    depth = 0
    while len(out) < n and any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out[:n]


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


def plan_tables(tables: dict[str, pd.DataFrame], cfg: BeliefICLConfig) -> Plan:
    return plan(tables["facts"], templates_of(tables["templates"]), cfg)


# ----------------------------------------------------------------------- command line

def contexts(value: str) -> tuple[str, ...]:
    """BELIEF-ICL context kinds: zero, X-random, X-relation, X-template.

    >>> contexts("zero, 4-template")
    ('zero', '4-template')
    """
    items = tuple(c.strip() for c in value.split(",") if c.strip())
    if not items:
        raise argparse.ArgumentTypeError("empty: e.g. zero,4-template")
    for c in items:
        try:
            parse_context(c)
        except UserError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if items.count(c) > 1:
            raise argparse.ArgumentTypeError(f"{value!r} lists {c} twice")
    return items


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("BELIEF-ICL")
    g.add_argument("--contexts", type=contexts, default=("4-template",),
                   help="comma-separated: zero, X-random, X-relation, X-template")
    g.add_argument("--style", choices=("mask", "qa"), default="mask")
    g.add_argument("--samples", type=count, default=100,
                   help="samples per prompt for confidence (0: none)")
    g.add_argument("--sample-prompts", type=count, default=10_000,
                   help="prompts per context that get samples: distinct prompts of distinct "
                        "subject-relation pairs (a seeded subset, the same in every context)")
    g.add_argument("--max-new-tokens", type=positive, default=10,
                   help="cap on the greedy answer and each sample (they also stop at the end "
                        "of the line); the paper sets no cap")
    g.add_argument("--max-names", type=positive, help="subject names per pair (label first)")
    g.add_argument("--seed", type=count, default=0)
    add_metric_flags(g)
    g.add_argument("--lemma-match", choices=("contiguous", "any-order"), default="contiguous",
                   help="when one lemma list is 'included in the other' (Sec. 3.2): as a "
                        "contiguous run, in order (contiguous, default), or every lemma "
                        "present in any order (any-order)")


def from_args(args: argparse.Namespace) -> BeliefICLConfig:
    return BeliefICLConfig(contexts=args.contexts, style=args.style, samples=args.samples,
                           sample_prompts=args.sample_prompts,
                           max_new_tokens=args.max_new_tokens, max_names=args.max_names,
                           seed=args.seed, coverage_subject=args.coverage_subject,
                           lemma_match=args.lemma_match)


PROBE = Probe(
    name="belief-icl", summary="BELIEF-ICL on a decoder LM",
    needs=frozenset({"generate"}),
    examples="""\
  factprobe eval belief-icl --dataset data/datasets/sample-multiprompt \\
      --model data/models/planted --out r/ --contexts zero,4-random,4-relation,4-template
  factprobe eval belief-icl --dataset multiprompt/ --model meta-llama/Meta-Llama-3-8B \\
      --style qa --samples 100 --sample-prompts 10000 --out r/
""",
    config=BeliefICLConfig, tables=("facts", "templates"), plan=plan_tables,
    add_flags=add_flags, from_args=from_args, citation="belief",
    pipeline=Pipeline(
        "multiprompt",
        args="--limit 20 --max-names 1 --contexts zero,4-template --samples 10 "
             "--sample-prompts 100",
        init_args="--max-names 1 --contexts zero,4-template --samples 10 --sample-prompts 100",
        note="--sample-prompts counts per context (the paper's 10K per setting)."))
