"""``factprobe build mc --choices-from COLUMN``: each row's options are a list column of its fact
as published (BEAR's ``answer_space``: lm-pub-quiz scores a relation's whole answer space,
Wiland et al., 2024) instead of ``--choices - 1`` distractors drawn from the relation's
objects (ZP-LKE, App. A.2). The gold stays among them; the pair's other answers are taken out,
as the drawn distractors never hold one.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.core.tables import read_schema


def check_options_column(folder, column: str) -> None:
    """The facts have ``column`` and it holds lists of texts, or one line saying what is
    wrong."""
    schema = read_schema(folder, "facts")
    if column not in schema.names:
        lists = [f.name for f in schema if pa.types.is_list(f.type)
                 and pa.types.is_string(f.type.value_type) and f.name not in
                 ("subject_aliases", "object_aliases", "answers")]
        raise UserError(f"--choices-from {column}: {folder}/facts.parquet has no such column"
                        f"{'; its option lists: ' + ', '.join(lists) if lists else ''}")
    typ = schema.field(column).type
    if not (pa.types.is_list(typ) and pa.types.is_string(typ.value_type)):
        raise UserError(f"--choices-from {column}: the column is {typ}, not a list of texts")


def why_dropped_from(facts: int, objects: int, cfg) -> str | None:
    """Why a relation makes no set with --choices-from: only --min-facts and --min-objects
    apply (the options are given, nothing is drawn)."""
    if facts < cfg.min_facts:
        return f"{facts} facts < min_facts {cfg.min_facts}"
    if objects < cfg.min_objects:
        return f"{objects} distinct objects < min_objects {cfg.min_objects}"
    return None


def published_options(base: pa.Table, column: str, golds, answers: list
                      ) -> tuple[pa.Array, float]:
    """(each picked row's options, the mean chance 1/options) from ``column`` of the picked
    fact rows ``base``: the gold kept, the pair's other answers out, order as published.

    >>> t = pa.table({"space": [["a", "b", "c"], ["x", "y"]]})
    >>> arr, chance = published_options(t, "space", ["b", "x"], [["b", "c"], ["x"]])
    >>> arr.to_pylist(), round(chance, 3)
    ([['a', 'b'], ['x', 'y']], 0.5)
    """
    rows = base.column(column).to_pylist()
    out = []
    for i, (options, gold, mine) in enumerate(zip(rows, golds, answers)):
        options = options or []
        if gold not in options:
            fid = base.column("fact_id")[i].as_py() if "fact_id" in base.column_names else i
            raise UserError(f"--choices-from {column}: fact {fid} (gold {gold!r}) is not among "
                            f"its {column}; the options must hold the gold")
        others = set(mine) - {gold}
        out.append([o for o in dict.fromkeys(options) if o not in others])
    chance = float(np.mean([1.0 / len(o) for o in out])) if out else 0.0
    return pa.array(out, type=pa.list_(pa.string())), chance
