"""Subject-relation pairs of a multi-prompt dataset, with every name of subject and answers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from factprobe.builders.templates.files import Template

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pandas as pd


@dataclass(frozen=True)
class Pair:
    relation_id: str
    subject_id: str
    fact_id: str                      # the pair's first fact: a stable key for outputs
    subject_names: tuple[str, ...]    # label first, then aliases
    gold: str                         # the first answer's label
    gold_names: tuple[str, ...]       # labels and aliases of every correct object


def pairs_of(facts: pd.DataFrame, max_names: int | None = None) -> list[Pair]:
    out = []
    facts = facts.sort_values(["relation_id", "subject_id", "fact_id"], kind="stable")
    for (rel, sid), g in facts.groupby(["relation_id", "subject_id"], sort=True):
        first = g.iloc[0]
        names = [first["subject"]] + [a for a in first["subject_aliases"] if a != first["subject"]]
        gold = []
        for obj, aliases in zip(g["object"], g["object_aliases"]):
            for name in [obj, *aliases]:
                if name not in gold:
                    gold.append(name)
        out.append(Pair(rel, sid, first["fact_id"], tuple(names[:max_names] if max_names
                                                           else names),
                        first["object"], tuple(gold)))
    return out


def usable_templates(templates: list[Template], styles: tuple[str, ...]) -> dict[str, list]:
    by_rel: dict[str, list[Template]] = {}
    for t in templates:
        if t.style in styles and t.template.count("[X]") == 1 and t.template.count("[Y]") == 1:
            by_rel.setdefault(t.relation_id, []).append(t)
    return by_rel


def templates_of(table: pd.DataFrame) -> list[Template]:
    """The rows of a multi-prompt dataset's ``templates`` table as templates."""
    fields = list(Template.__dataclass_fields__)
    return [Template(**{k: r[k] for k in fields}) for r in table.to_dict("records")]
