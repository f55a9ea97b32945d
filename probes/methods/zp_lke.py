"""ZP-LKE: zero-prompt, many-shot latent knowledge estimation (Wu et al., WSDM 2025).

No relation words: the model sees n subject-object pairs of one relation, then the test
subject, and must continue with the object. With the defaults, for a test fact of relation
"year of birth"::

    context:      "Aage Bohr 1922, Max Born 1882, ..., Albert Einstein"
    continuation: " 1879"            (the subject-object separator belongs to the option)

Multiple choice scores every choice as a continuation; the response test lets the model write
``response_tokens`` tokens after the same context. The ``compat`` preset formats like the
authors' code: ``"x1 : y1 , x2 : y2 x : "`` with the option ``" : y"``.
"""
from __future__ import annotations

import argparse
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factprobe.core.argtypes import count
from factprobe.core.errors import UserError
from factprobe.probes.methods.flags import counts, nonempty
from factprobe.probes.methods.spec import Pipeline, Probe
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import numpy as np
    import pandas as pd

# the request meta columns holding integers (outputs.parquet keeps them integers)
INTEGER_COLUMNS = ("seed", "n_examples", "corrupted", "position")
ACCURACY_AT_K = ("formula", "text")   # App. D: its set D_K (>= K) | its prose ("> K")


@dataclass(frozen=True)
class ZPLKEConfig:
    n_examples: tuple[int, ...] = (50,)
    seeds: tuple[int, ...] = (0,)
    sep_so: str = " "                 # between a subject and its object
    sep_pair: str = ", "              # between pairs
    compat: bool = False              # the authors' code's format and sampling
    response_tokens: int = 10         # greedy tokens for the response test; 0 = off
    corrupt: str = ""                 # "" | unknown | incorrect: examples replaced
    corrupt_count: int = 0
    corrupt_layout: str = "spread"    # spread | block
    positions: int = 0                # > 0: one sequence of that many pairs per relation
    accuracy_at_k: str = "formula"    # formula (App. D's set, >= K) | text (its prose, > K)
    # a dataset without a train/test split (Nobel): how many facts per relation are set apart
    # as the example pool (None: twice the largest --examples); the rest is the test set
    example_pool: int | None = None


def _rng(seed: int, *parts: str) -> np.random.Generator:
    import numpy as np
    return np.random.default_rng([seed] + [zlib.crc32(p.encode("utf-8")) for p in parts])


_SYLLABLES = ["ka", "lo", "mer", "vin", "dra", "sel", "tor", "ba", "qui", "nes", "ro", "zel",
              "fa", "du", "ren", "mo", "li", "ska", "vor", "tan"]


def fictitious_name(rng: np.random.Generator) -> str:
    """A made-up two-part name, for examples the model cannot know.

    >>> import numpy as np
    >>> fictitious_name(np.random.default_rng(0))
    'Skafaro Seltor'
    """
    def word(k: int) -> str:
        return "".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), size=k)).title()
    return f"{word(3)} {word(2)}"


def _corrupt(examples: list[tuple[str, str]], cfg: ZPLKEConfig, pool: list[str],
             answers: dict[str, set], rng: np.random.Generator) -> tuple[list, list[bool]]:
    """Replace ``corrupt_count`` examples by unknown (made-up subject) or incorrect (wrong
    object) ones, spread at random positions or as one block."""
    n = len(examples)
    k = min(cfg.corrupt_count, n)
    flags = [False] * n
    if not cfg.corrupt or k == 0:
        return examples, flags
    if cfg.corrupt_layout == "block":
        start = int(rng.integers(0, n - k + 1))
        where = list(range(start, start + k))
    else:
        where = sorted(rng.choice(n, size=k, replace=False).tolist())
    out = list(examples)
    for i in where:
        x, y = out[i]
        if cfg.corrupt == "unknown":
            out[i] = (fictitious_name(rng), pool[int(rng.integers(len(pool)))])
        else:
            wrong = [o for o in pool if o not in answers.get(x, {y})]
            out[i] = (x, wrong[int(rng.integers(len(wrong)))])
        flags[i] = True
    return out, flags


def _context(examples: list[tuple[str, str]], subject: str, cfg: ZPLKEConfig) -> str:
    if cfg.compat:
        body = " , ".join(f"{x} : {y}" for x, y in examples)
        return f"{body} {subject} : " if body else f"{subject} : "
    pairs = [f"{x}{cfg.sep_so}{y}" for x, y in examples]
    return cfg.sep_pair.join(pairs + [subject])


def _option(text: str, cfg: ZPLKEConfig) -> str:
    return f" : {text}" if cfg.compat else f"{cfg.sep_so}{text}"


def _examples(train: pd.DataFrame, n: int, seed: int, relation: str, cfg: ZPLKEConfig,
              flag: str = "--examples") -> list[tuple[str, str]]:
    if n > len(train):
        raise UserError(f"relation {relation} has {len(train)} train facts, fewer than the "
                        f"{n} examples asked for; lower {flag}")
    if cfg.compat:
        # pandas' sample with random_state=10, as in the authors' code
        picked = train.sample(n=n, random_state=10)
    else:
        picked = train.iloc[_rng(seed, relation, "examples").permutation(len(train))[:n]]
    return list(zip(picked["subject"], picked["object"]))


def pool_flag(has_split: bool) -> str:
    return "--examples" if has_split else "--examples (or raise --example-pool)"


def example_pool(rel_facts: pd.DataFrame, relation: str, cfg: ZPLKEConfig
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(example pool, test set) of one relation of a dataset without a train/test split (the
    Nobel dataset). The pool is drawn once, independently of --seeds and of each --examples
    count, so that every seed and n asks about the same test facts (the paper's Fig. 3:
    accuracy against n over 5 seeds); each seed then draws its n examples from the pool.
    A test subject that is also in the pool is never its own example.

    >>> import pandas as pd
    >>> f = pd.DataFrame({"subject": [f"s{i}" for i in range(10)], "object": ["o"] * 10})
    >>> pool, test = example_pool(f, "r", ZPLKEConfig(n_examples=(1, 2)))
    >>> len(pool), len(test), sorted(set(pool["subject"]) & set(test["subject"]))
    (4, 6, [])
    """
    import numpy as np
    size = cfg.example_pool if cfg.example_pool is not None else 2 * max(cfg.n_examples)
    if size >= len(rel_facts):
        raise UserError(f"relation {relation} has {len(rel_facts)} facts and no train/test "
                        f"split: an example pool of {size} leaves no test fact; lower "
                        f"--example-pool or --examples")
    order = _rng(0, relation, "example-pool").permutation(len(rel_facts))
    return rel_facts.iloc[np.sort(order[:size])], rel_facts.iloc[np.sort(order[size:])]


def choices_of(row, pool: list[str]) -> list[str]:
    if "choices" in row.index and row["choices"] is not None and len(row["choices"]):
        return list(row["choices"])
    return pool


def plan(facts: pd.DataFrame, cfg: ZPLKEConfig) -> Plan:
    """Requests for every test fact, seed and example count."""
    import pandas as pd
    if cfg.compat and cfg.seeds != (0,):
        raise UserError("--compat samples examples with the authors' fixed random_state; "
                        "--seeds does not apply")
    mc, gen, pos = [], [], []
    skipped: dict[str, str] = {}
    pooled: set[str] = set()
    has_split = "split" in facts.columns and (facts["split"] != "").any()
    if has_split and cfg.example_pool is not None:
        raise UserError("--example-pool is for a dataset without a train/test split (Nobel); "
                        "this one has a split, whose train facts are the examples: drop it")
    for relation in sorted(facts["relation_id"].unique()):
        rel_facts = facts[facts["relation_id"] == relation]
        if has_split:
            train = rel_facts[rel_facts["split"] == "train"]
            test = rel_facts[rel_facts["split"] == "test"]
        else:
            train, test = example_pool(rel_facts, relation, cfg)
            pooled.update(train["fact_id"])
        pool = sorted(rel_facts["object"].unique())
        answers = {s: set(a) for s, a in zip(rel_facts["subject"], rel_facts["answers"])}
        for seed in cfg.seeds:
            for n in cfg.n_examples:
                base = _examples(train, n, seed, relation, cfg, pool_flag(has_split))
                examples, flags = _corrupt(base, cfg, pool, answers,
                                           _rng(seed, relation, "corrupt"))
                group = f"{relation}|{seed}|{n}"
                meta = {"seed": seed, "n_examples": n, "corrupted": int(sum(flags))}
                for row in test.itertuples(index=False):
                    row_s = pd.Series(row._asdict())
                    shots = [e for e in examples if e[0] != row.subject][:n]
                    context = _context(shots, row.subject, cfg)
                    options = choices_of(row_s, pool)
                    fmeta = {"fact_id": row.fact_id, "relation_id": relation,
                             "gold": row.object, **meta}
                    mc.append(ScoreRequest(
                        context, tuple(_option(o, cfg) for o in options), group=group,
                        meta=fmeta,
                        option_meta=tuple({"option": k, "option_text": _option(o, cfg),
                                           "is_gold": o == row.object}
                                          for k, o in enumerate(options))))
                    if cfg.response_tokens:
                        gen.append(GenerateRequest(context, cfg.response_tokens, group=group,
                                                   meta=fmeta))
        if cfg.positions:
            pos.extend(_position_requests(rel_facts, relation, cfg, pool, answers))
        if not any(r.meta["relation_id"] == relation for r in mc[-1:] + pos[-1:]):
            skipped[relation] = "no test facts"
    stages = [Stage("mc", "score", mc)]
    if gen:
        stages.append(Stage("response", "generate", gen))
    if pos:
        stages.append(Stage("position", "score", pos))
    return Plan("zp-lke", stages, {"requests_per_stage": {st.name: len(st.requests)
                                                          for st in stages}},
                shorten=lambda r: drop_first_example(r, " , " if cfg.compat else cfg.sep_pair),
                skipped=skipped, integer_columns=INTEGER_COLUMNS,
                examples_only=frozenset(pooled))


def drop_first_example(request, sep: str):
    """The request with its first in-context example removed, or None if it has none.

    >>> from factprobe.probes.requests import ScoreRequest
    >>> drop_first_example(ScoreRequest("a 1, b 2, c", (" 3",)), ", ").context
    'b 2, c'
    """
    import dataclasses
    text = request.context if hasattr(request, "context") else request.prompt
    head, found, rest = text.partition(sep)
    if not found or not rest:
        return None
    field = "context" if hasattr(request, "context") else "prompt"
    return dataclasses.replace(request, **{field: rest})


def _position_requests(rel_facts, relation, cfg, pool, answers) -> list[ScoreRequest]:
    """One long sequence of ``positions`` pairs; the object probability at every position."""
    seed = cfg.seeds[0]
    order = _rng(seed, relation, "positions").permutation(len(rel_facts))[:cfg.positions]
    picked = rel_facts.iloc[order]
    pairs = list(zip(picked["subject"], picked["object"]))
    pairs, flags = _corrupt(pairs, cfg, pool, answers, _rng(seed, relation, "corrupt-pos"))
    out = []
    for i, (x, y) in enumerate(pairs):
        context = _context(pairs[:i], x, cfg)
        out.append(ScoreRequest(context, (_option(y, cfg),), group=f"{relation}|positions",
                                meta={"fact_id": picked.iloc[i]["fact_id"],
                                      "relation_id": relation, "seed": seed, "position": i,
                                      "gold": y,
                                      "corrupted": int(flags[i])},
                                option_meta=({"option": 0, "option_text": _option(y, cfg),
                                              "is_gold": not flags[i]},)))
    return out


def plan_tables(tables: dict[str, pd.DataFrame], cfg: ZPLKEConfig) -> Plan:
    return plan(tables["facts"], cfg)


# ----------------------------------------------------------------------- command line

def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("ZP-LKE")
    g.add_argument("--examples", type=counts, default=(50,),
                   help="in-context examples per relation; a list sweeps n (e.g. 1,5,10,50)")
    g.add_argument("--seeds", type=counts, default=(0,),
                   help="example draws to average over (the paper: 0,1,2,3,4)")
    g.add_argument("--sep", default=" ", help="between a subject and its object (' ')")
    g.add_argument("--pair-sep", default=", ", type=nonempty, help="between pairs (', ')")
    g.add_argument("--compat", action="store_true",
                   help="the authors' code: ' : ' separators, random_state=10, ties vs gold")
    g.add_argument("--response-tokens", type=count, default=10,
                   help="greedy tokens for the response test (0: off)")
    g.add_argument("--corrupt", choices=("unknown", "incorrect"),
                   help="replace examples by made-up subjects or wrong objects")
    g.add_argument("--corrupt-count", type=count, default=0,
                   help="how many examples --corrupt replaces (at most the fewest --examples)")
    g.add_argument("--corrupt-layout", choices=("spread", "block"), default="spread")
    g.add_argument("--positions", type=count, default=0,
                   help="also score every object in one sequence of N pairs (the paper: 200)")
    g.add_argument("--example-pool", type=count, default=None,
                   help="a dataset without a train/test split (Nobel): facts per relation set "
                        "apart, once for every seed and n, as the pool the examples are drawn "
                        "from; the rest are the test facts (default: twice the largest "
                        "--examples)")
    add_accuracy_at_k(g)


def add_accuracy_at_k(group) -> None:
    """``--accuracy-at-k``, shared with the prompt baselines (both report Accuracy@K)."""
    group.add_argument("--accuracy-at-k", choices=ACCURACY_AT_K, default="formula",
                       help="Accuracy@K keeps questions with confidence >= K (formula, App. D's "
                       "set) or > K (text, its prose)")


def from_args(args: argparse.Namespace) -> ZPLKEConfig:
    if args.corrupt and args.corrupt_count <= 0:
        raise UserError("--corrupt needs --corrupt-count N (how many examples to replace)")
    if args.corrupt_count and not args.corrupt:
        raise UserError("--corrupt-count needs --corrupt unknown or --corrupt incorrect")
    if args.corrupt_count > min(args.examples):
        raise UserError(f"--corrupt-count {args.corrupt_count} is more than the smallest "
                        f"--examples ({min(args.examples)}): a prompt cannot have more "
                        f"examples replaced than it shows")
    return ZPLKEConfig(n_examples=args.examples, seeds=args.seeds, sep_so=args.sep,
                       sep_pair=args.pair_sep, compat=args.compat,
                       response_tokens=args.response_tokens, corrupt=args.corrupt or "",
                       corrupt_count=args.corrupt_count, corrupt_layout=args.corrupt_layout,
                       positions=args.positions, accuracy_at_k=args.accuracy_at_k,
                       example_pool=args.example_pool)


PROBE = Probe(
    name="zp-lke", summary="zero-prompt many-shot (ZP-LKE)",
    needs=frozenset({"score", "generate"}),
    examples="""\
  factprobe eval zp-lke --dataset data/datasets/sample-mc --model data/models/planted \\
      --out data/results/sample-mc/zp-lke/planted
  factprobe eval zp-lke --dataset data/datasets/trex-mc --model meta-llama/Llama-2-7b-hf \\
      --out results/ --seeds 0,1,2,3,4 --dtype bfloat16
  factprobe eval zp-lke --dataset data/datasets/sample-mc --model gpt2 --out r/ --dry-run
""",
    config=ZPLKEConfig, tables=("facts",), plan=plan_tables, add_flags=add_flags,
    from_args=from_args, citation="zp-lke",
    card=("ZP-LKE (Wu et al., WSDM 2025): zero-prompt many-shot probing, in-context (subject, "
          "object) pairs of one relation; multiple-choice accuracy over `choices` (or the "
          "relation's objects) and response accuracy against `answers` (`factprobe eval zp-lke`; "
          "the prompt baselines: `factprobe eval prompt`)."),
    serves=("facts", "mc", "nobel"),
    pipeline=Pipeline("mc", args="--examples 50 --seeds 0",
                      init_args="--examples {{examples}} --seeds 0"))
