"""``factprobe diff OLD NEW``: what changed between two facts datasets, row by row.

Facts are matched by their (relation, subject) pair and, within it, by object id, so the
changes are the ones a later snapshot of the graph brings:

- ``subject_gone`` / ``subject_added``: the pair is in one dataset only (the subject lost or
  gained the relation, or the entity was deleted);
- ``object_removed`` / ``object_added``: the pair is in both, an object is in one only;
- ``object_changed``: the pair lost exactly one object and gained exactly one (a capital moved);
  ``object_id_changed`` when both have the same label: an entity merged into another or
  redirected, seen from the facts that point at it;
- ``subject_label_changed`` / ``object_label_changed`` and ``subject_aliases_changed`` /
  ``object_aliases_changed``: the same entity under another preferred label or other aliases.

One row per change; a label or alias change of a subject is one row per pair, of an object one
row per fact. Everything is sorted, so the same two datasets give the same bytes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

CHANGES = ("subject_gone", "subject_added", "object_removed", "object_added", "object_changed",
           "object_id_changed", "subject_label_changed", "object_label_changed",
           "subject_aliases_changed", "object_aliases_changed")

DIFF_SCHEMA = pa.schema([
    ("change", pa.string()), ("relation_id", pa.string()), ("subject_id", pa.string()),
    ("subject", pa.string()), ("object_id", pa.string()), ("object", pa.string()),
    ("old_object_id", pa.string()), ("old_object", pa.string()),
    ("old_value", pa.string()), ("new_value", pa.string()),
])
# what diff reads of each dataset's facts table
DIFF_COLUMNS = ("relation_id", "subject_id", "object_id", "subject", "object",
                "subject_aliases", "object_aliases")


@dataclass
class _Rows:
    rows: list

    def add(self, change: str, rel: str, sid: str, subject: str, oid: str = "",
            obj: str = "", old_oid: str = "", old_obj: str = "", old: str = "",
            new: str = "") -> None:
        self.rows.append((change, rel, sid, subject, oid, obj, old_oid, old_obj, old, new))


def _aliases(value) -> str:
    """An alias list as sorted JSON, the form old_value/new_value hold it in."""
    return json.dumps(sorted(value) if value is not None else [], ensure_ascii=False)


def _frame(facts: pa.Table) -> pd.DataFrame:
    df = facts.select(list(DIFF_COLUMNS)).to_pandas()
    for side in ("subject", "object"):
        df[f"{side}_aliases"] = df[f"{side}_aliases"].map(_aliases)
    # one row per fact: a dataset that repeats a triple (none factprobe builds) counts it once
    df = df.drop_duplicates(["relation_id", "subject_id", "object_id"])
    return df.sort_values(["relation_id", "subject_id", "object_id"], kind="stable")


def diff_facts(old: pa.Table, new: pa.Table) -> pa.Table:
    """The changes from ``old`` to ``new`` (facts tables), as a :data:`DIFF_SCHEMA` table.

    >>> def facts(*rows):
    ...     cols = list(zip(*rows))
    ...     return pa.table({"relation_id": cols[0], "subject_id": cols[1], "object_id": cols[2],
    ...                      "subject": cols[3], "object": cols[4],
    ...                      "subject_aliases": [[]] * len(rows),
    ...                      "object_aliases": [[]] * len(rows)})
    >>> old = facts(("P36", "Q142", "Q90", "France", "Paris"), ("P36", "Q29", "Q2807", "Spain", "Madrid"))
    >>> new = facts(("P36", "Q142", "Q6602", "France", "Versailles"), ("P36", "Q29", "Q2807", "Spain", "Madrid (city)"))
    >>> [(r["change"], r["subject_id"], r["old_value"] or r["old_object"], r["new_value"] or r["object"])
    ...  for r in diff_facts(old, new).to_pylist()]
    [('object_changed', 'Q142', 'Paris', 'Versailles'), ('object_label_changed', 'Q29', 'Madrid', 'Madrid (city)')]
    """
    a, b = _frame(old), _frame(new)
    out = _Rows([])
    groups_a = dict(iter(a.groupby(["relation_id", "subject_id"], sort=True)))
    groups_b = dict(iter(b.groupby(["relation_id", "subject_id"], sort=True)))
    for key in sorted(set(groups_a) | set(groups_b)):
        rel, sid = key
        ga, gb = groups_a.get(key), groups_b.get(key)
        if gb is None:
            for r in ga.itertuples():
                out.add("subject_gone", rel, sid, r.subject, r.object_id, r.object)
            continue
        if ga is None:
            for r in gb.itertuples():
                out.add("subject_added", rel, sid, r.subject, r.object_id, r.object)
            continue
        _pair_changes(out, rel, sid, ga, gb)
    frame = pd.DataFrame(out.rows, columns=DIFF_SCHEMA.names)
    return pa.Table.from_pandas(frame, schema=DIFF_SCHEMA, preserve_index=False)


def _pair_changes(out: _Rows, rel: str, sid: str, ga: pd.DataFrame, gb: pd.DataFrame) -> None:
    """The changes of one (relation, subject) pair present in both datasets."""
    first_a, first_b = ga.iloc[0], gb.iloc[0]
    subject = first_b["subject"]
    if first_a["subject"] != first_b["subject"]:
        out.add("subject_label_changed", rel, sid, subject, old=first_a["subject"],
                new=first_b["subject"])
    if first_a["subject_aliases"] != first_b["subject_aliases"]:
        out.add("subject_aliases_changed", rel, sid, subject, old=first_a["subject_aliases"],
                new=first_b["subject_aliases"])
    objs_a = ga.set_index("object_id")
    objs_b = gb.set_index("object_id")
    removed = [o for o in objs_a.index if o not in objs_b.index]
    added = [o for o in objs_b.index if o not in objs_a.index]
    if len(removed) == 1 and len(added) == 1:
        was, now = objs_a.loc[removed[0]], objs_b.loc[added[0]]
        kind = "object_id_changed" if was["object"] == now["object"] else "object_changed"
        out.add(kind, rel, sid, subject, added[0], now["object"], removed[0], was["object"])
    else:
        for o in removed:
            out.add("object_removed", rel, sid, subject, o, objs_a.loc[o, "object"])
        for o in added:
            out.add("object_added", rel, sid, subject, o, objs_b.loc[o, "object"])
    for o in objs_a.index:
        if o not in objs_b.index:
            continue
        was, now = objs_a.loc[o], objs_b.loc[o]
        if was["object"] != now["object"]:
            out.add("object_label_changed", rel, sid, subject, o, now["object"],
                    old=was["object"], new=now["object"])
        if was["object_aliases"] != now["object_aliases"]:
            out.add("object_aliases_changed", rel, sid, subject, o, now["object"],
                    old=was["object_aliases"], new=now["object_aliases"])


def change_counts(diff: pa.Table) -> tuple[dict, dict]:
    """(rows per change, rows per relation and change), every change named, zeros included.

    >>> t = pa.table({"change": ["object_added", "object_added"], "relation_id": ["P36", "P37"]})
    >>> totals, per = change_counts(t)
    >>> totals["object_added"], per["P37"]["object_added"], per["P37"]["subject_gone"]
    (2, 1, 0)
    """
    changes = diff["change"].to_pylist()
    relations = diff["relation_id"].to_pylist()
    totals = {c: changes.count(c) for c in CHANGES}
    per: dict[str, dict[str, int]] = {}
    for rel, change in zip(relations, changes):
        per.setdefault(rel, dict.fromkeys(CHANGES, 0))[change] += 1
    return totals, dict(sorted(per.items()))
