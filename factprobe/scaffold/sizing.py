"""Size ``factprobe init``'s params.yaml to the user's graph.

The shipped values (10 choices, relations of at least 20 facts, 10 train and 20 test rows per
relation) suit a graph of a few hundred facts; a graph of a hundred facts would stop at the MC
stage, or later, unless the user edited params.yaml. For a file source, init reads the graph
with the very reader ``build facts`` uses and counts, per relation, what ``build mc`` counts
(:func:`factprobe.builders.datasets.mc.relation_shapes`), then writes the largest values, up to the
shipped ones, that keep every relation able to make a multiple-choice set. Endpoint sources
(sparql, wikidata) and Wikidata dumps are not read at init (a query or a whole dump would take
far longer than writing two files): they keep the shipped values, and say so.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from factprobe.core.errors import UserError
from factprobe.builders.sources.table import SOURCES

if TYPE_CHECKING:  # the builders import pandas and pyarrow; `factprobe init --help` need not
    from factprobe.builders.datasets.mc import RelationShape

# Sources init reads to size params.yaml (the others keep the shipped values, and say why:
# their entry's `unsized`).
SIZED_SOURCES = tuple(n for n, s in SOURCES.items() if s.unsized is None)
# The smallest MC set worth running: 4 choices (chance 25%), 2 train rows (ZP-LKE's examples)
# and 4 test rows (the planted models are taught half of them, the other half held out).
MIN_CHOICES, MIN_TRAIN, MIN_TEST = 4, 2, 4
CHARS_PER_TOKEN = 5     # a cautious guess for plant's tokenizer, trained on the facts themselves


@dataclass(frozen=True)
class Sizes:
    """The sized values of params.yaml (defaults: the shipped ones) and the comment saying
    where they come from."""
    choices: int = 10
    min_facts: int = 20
    min_objects: int = 10
    train: int = 10
    test: int = 20
    negatives: int = 5          # misprimes and FKTC: wrong objects per fact
    examples: int = 10          # ZP-LKE's in-context examples (at most the train rows)
    block: int = 256            # plant: tokens per training sequence (params.yaml's)
    masked_batch: int = 8       # plant_masked: batch size (16 sentences each)
    max_epochs: int = 80        # plant: the stopping rule's cap (the repository's sample: 40)
    schedule_epochs: int = 80   # plant: the rate schedule's length (constant, then decay)
    comment: tuple[str, ...] = field(default=(
        "Values are sized for a graph of a few hundred facts.",))

    def note(self) -> str:
        """The params.yaml comment lines (``# ...``), wrapped."""
        # relation ids and file names come from the graph: a line break of any kind in one
        # (U+2028, NEL...) would end the comment and write YAML of the graph's choosing
        return "\n".join("# " + "".join(c if c.isprintable() else "?" for c in line)
                         for part in self.comment
                         for line in textwrap.wrap(part, 96, break_on_hyphens=False))


SHIPPED = Sizes()


@dataclass(frozen=True)
class GraphCounts:
    """What init read: the graph's facts (as ``build facts`` assembles them) per relation."""
    where: str
    facts: int
    shapes: dict[str, RelationShape]
    label_chars: dict[str, float]     # mean characters of subject + object label, per relation


def read_graph(source: str, path: str, relations: tuple[str, ...] | None, lang: str,
               date_format: str) -> GraphCounts:
    """Read a file source with ``build facts``' own reader; nothing is written."""
    from factprobe.builders.datasets.mc import relation_shapes
    from factprobe.builders.datasets.build_facts import FactsConfig, read_source
    from factprobe.builders.datasets.facts import assemble_facts, triple_count
    cfg = FactsConfig(source=source, relations=relations, out="", path=path, lang=lang,
                      date_format=date_format, progress=False)
    where = Path(path).name or path
    with read_source(cfg) as result:
        if triple_count(result) == 0:
            raise UserError(f"{path} holds no facts for the relations asked "
                            f"({', '.join(relations or ['all'])}); check the file and --relations")
        facts, _, _ = assemble_facts(result)
    if facts.num_rows == 0:
        raise UserError(f"{path}: no fact has labels in {lang!r}; check --lang")
    frame = facts.select(["relation_id", "subject", "object"]).to_pandas()
    chars = (frame["subject"].str.len() + frame["object"].str.len()).groupby(
        frame["relation_id"]).mean()
    return GraphCounts(where, facts.num_rows,
                       relation_shapes(facts.select(["relation_id", "subject_id", "object"])),
                       {str(k): float(v) for k, v in chars.items()})


def _too_small(shape: RelationShape) -> str | None:
    """Why a relation cannot make even the smallest MC set; None when it can."""
    from factprobe.builders.datasets.mc import MCConfig
    floor = MCConfig(facts="", out="", choices=MIN_CHOICES, min_facts=0, min_objects=0,
                     train=MIN_TRAIN, test=MIN_TEST)
    if shape.objects < MIN_CHOICES:
        return f"{shape.objects} distinct objects, {MIN_CHOICES} needed"
    if shape.why_dropped(floor):
        return (f"{shape.eligible(MIN_CHOICES)} subjects with {MIN_CHOICES - 1} wrong objects "
                f"to choose from, {MIN_TRAIN + MIN_TEST} needed")
    return None


def plant_sizes(counts: GraphCounts, kept: list[str], train: int, test: int,
                lists_per_relation: int = 8, list_size: int = 50, batch: int = 4,
                forms: int = 7) -> tuple[int, int]:
    """(``plant.block``, ``plant_masked.batch_size``) for a graph: the shipped 256 and 8, or
    less when an epoch of training text would fill only a batch or two. A small graph then
    gets more optimiser steps from the same text: on the 48-fact test graph, block 64 instead of
    256 took the causal model from 60 to 240 steps (loss 1.42 to 0.80) and BELIEF-ICL's and
    MONITOR's validity AUROC from about 0.55 to 0.98 or more.

    Causal text per epoch: ZP-LKE lists plus a statement and a question per taught fact; masked:
    every taught fact in every form (``forms``: 3 statements and 4 questions, as docs/own-graph.md
    suggests), ``16 * batch_size`` sentences a step.

    >>> c = GraphCounts("g", 12, {}, {"r": 14.0})
    >>> plant_sizes(c, ["r"], 2, 4), plant_sizes(c, ["r"] * 5, 100, 400)
    ((64, 1), (256, 8))
    """
    taught = train + test // 2
    chars = sum(lists_per_relation * min(taught, list_size + 1) * (counts.label_chars[r] + 2)
                + taught * 2 * (40 + counts.label_chars[r]) for r in kept)
    tokens = chars / CHARS_PER_TOKEN
    # plant's own rules (it fits the same sizes to the text it writes, when not given them)
    from factprobe.probes.planting.sizes import fit_block, fit_masked_batch
    return fit_block(tokens, batch), fit_masked_batch(taught * len(kept) * forms)


# The causal model's rate schedule for a user's graph: constant over the first 60% of it,
# then decaying. The bundled sample is learned by epoch 33 of a 40-epoch schedule, but its
# statement and question frames take off at epoch 17; on smaller graphs of unseen names they
# take off later, and a rate that decays from epoch 24 leaves them unlearned (a 234-fact
# graph: 0.71 at the cap of 40; with 80 it was learned at epoch 40). The stopping rule ends
# the run as soon as the facts are learned, so a longer schedule costs only what it needs.
INIT_SCHEDULE = 80


def plant_schedule(counts: GraphCounts, kept: list[str], train: int, test: int
                   ) -> tuple[int, int]:
    """(``plant.max_epochs``, ``plant.schedule_epochs``) for a user's graph: the schedule of
    :data:`INIT_SCHEDULE` epochs, capped at its end (past it the rate stays at 5%).

    >>> plant_schedule(GraphCounts("g", 120, {}, {}), ["r"] * 4, 10, 20)
    (80, 80)
    """
    return INIT_SCHEDULE, INIT_SCHEDULE


def size(counts: GraphCounts) -> tuple[Sizes, str, list[str]]:
    """The sized values for ``counts``, the lines init prints about them, and the relations
    kept (those that can make an MC set)."""
    from factprobe.builders.sources.common import natural_key
    shapes = {r: counts.shapes[r] for r in sorted(counts.shapes, key=natural_key)}
    small = {r: why for r, s in shapes.items() if (why := _too_small(s))}
    kept = [r for r in shapes if r not in small]
    seen = (f"{counts.facts} facts, {len(shapes)} relation{'s' * (len(shapes) != 1)}")
    left = "; ".join(f"{r} ({why})" for r, why in small.items())
    if not kept:
        raise UserError(f"no relation of {counts.where} ({seen}) can make a multiple-choice set: "
                        f"one needs at least {MIN_CHOICES} distinct objects and "
                        f"{MIN_TRAIN + MIN_TEST} subjects each with {MIN_CHOICES - 1} wrong "
                        f"objects to choose from; {left}. Add facts, or pick other --relations")
    # The most choices (up to the shipped 10) every kept relation can offer, then the most rows
    # each can fill with that many choices (up to 10 train + 20 test, kept in that ratio).
    choices = max(c for c in range(MIN_CHOICES, SHIPPED.choices + 1)
                  if all(shapes[r].objects >= c
                         and shapes[r].eligible(c) >= MIN_TRAIN + MIN_TEST for r in kept))
    rows = {r: shapes[r].eligible(choices) for r in kept}
    limit = min(kept, key=lambda r: (rows[r], shapes[r].objects))
    n = min(SHIPPED.train + SHIPPED.test, rows[limit])
    train = max(MIN_TRAIN, n * SHIPPED.train // (SHIPPED.train + SHIPPED.test))
    test = n - train
    sizes = {"choices": choices, "train": train, "test": test,
             "min_facts": min(SHIPPED.min_facts, min(shapes[r].facts for r in kept)),
             "min_objects": min(SHIPPED.min_objects, min(shapes[r].objects for r in kept)),
             "negatives": min(SHIPPED.negatives, choices - 1),
             "examples": min(SHIPPED.examples, train)}
    sizes["block"], sizes["masked_batch"] = plant_sizes(counts, kept, train, test)
    sizes["max_epochs"], sizes["schedule_epochs"] = plant_schedule(counts, kept, train, test)
    fits = all(sizes[k] == getattr(SHIPPED, k) for k in sizes)
    mc = f"mc: {choices} choices, {train} train + {test} test rows per relation"
    if fits:
        what = f"{mc}: the shipped values fit every relation"
    else:
        what = (f"{mc}, set by {limit} ({shapes[limit].objects} distinct objects, "
                f"{rows[limit]} subjects with {choices - 1} wrong objects to choose from); "
                f"misprimes and fktc: {sizes['negatives']} negatives; zp_lke: "
                f"{sizes['examples']} examples; plant: block {sizes['block']}, plant_masked: "
                f"batch_size {sizes['masked_batch']}")
    comment = [(f"Sized from {counts.where} at init: {seen}; {what}. The shipped values "
                "(for a few hundred facts) and the papers' are in the comments.")]
    lines = [f"params.yaml sized from {counts.where}: {seen}; {what}"]
    if small:
        why = f"too small for a multiple-choice set, left out of mc: {left}"
        comment.append(f"{len(small)} relation{'s' * (len(small) != 1)} {why}.")
        lines.append(f"{len(small)} relation{'s' * (len(small) != 1)} {why}")
    return Sizes(**sizes, comment=tuple(comment)), "\n".join(lines), kept


def unsized(source: str) -> tuple[Sizes, str, None]:
    """The shipped values, for a source init does not read."""
    why = SOURCES[source].unsized
    text = (f"Not sized: {why}. Values suit a graph of a few hundred facts; if `build mc` "
            "leaves relations out, its dataset.json says why (lower mc's sizes here).")
    return Sizes(comment=(text,)), f"params.yaml keeps the shipped sizes: {why}", None
