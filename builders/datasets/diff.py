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

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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


def _alias_json(column: pa.ChunkedArray) -> pd.Series:
    """Each row's alias list as sorted JSON (``["Berne"]``), the form old_value/new_value hold it
    in. A dataset repeats a few lists many times (most are empty): each distinct list is written
    once, not once per row.

    >>> _alias_json(pa.chunked_array([[["b", "a"], [], None, ["a", "b"]]])).tolist()
    ['["a", "b"]', '[]', '[]', '["a", "b"]']
    """
    column = column.cast(pa.list_(pa.string()))   # an all-empty column may be list<null>
    lengths = pc.fill_null(pc.list_value_length(column), 0).cast(pa.string())
    joined = pc.fill_null(pc.binary_join(column, "\x1f"), "")
    keys = pd.Series(pc.binary_join_element_wise(lengths, joined, "\x1e")
                     .to_numpy(zero_copy_only=False))

    def as_json(key: str) -> str:
        count, _, text = key.partition("\x1e")
        return json.dumps(sorted(text.split("\x1f")) if count != "0" else [],
                          ensure_ascii=False)
    return keys.map({key: as_json(key) for key in keys.unique()})


def _frame(facts: pa.Table) -> pd.DataFrame:
    df = facts.select(list(DIFF_COLUMNS[:5])).to_pandas()
    for col in DIFF_COLUMNS[:5]:
        df[col] = df[col].fillna("").astype(str)   # a null label (none factprobe writes): ""
    for side in ("subject", "object"):
        df[f"{side}_aliases"] = _alias_json(facts[f"{side}_aliases"]).to_numpy()
    # one row per fact: a dataset that repeats a triple (none factprobe builds) counts it once
    df = df.drop_duplicates(["relation_id", "subject_id", "object_id"])
    if df.empty:   # pandas cannot merge empty Arrow-backed string columns: plain objects
        df = df.astype(object)
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
    pair, triple = ["relation_id", "subject_id"], ["relation_id", "subject_id", "object_id"]
    parts = []

    def part(frame: pd.DataFrame, change, group: int, sub: int = 0, **cols) -> None:
        out = pd.DataFrame({"change": change, "relation_id": frame["relation_id"],
                            "subject_id": frame["subject_id"], "subject": frame["subject"]})
        for name in DIFF_SCHEMA.names[4:]:
            out[name] = cols.get(name, "")
        out["_group"], out["_sub"] = group, sub
        out["_object"] = out["object_id"].where(out["object_id"] != "", out["old_object_id"])
        parts.append(out)

    # facts by triple: in OLD only, in NEW only, in both
    both = a.merge(b, on=triple, how="outer", suffixes=("_a", "_b"), indicator=True)
    pairs_a, pairs_b = a[pair].drop_duplicates(), b[pair].drop_duplicates()
    in_both = pairs_a.merge(pairs_b, on=pair).assign(_both=True)
    both = both.merge(in_both, on=pair, how="left")
    both["_both"] = both["_both"].eq(True)
    gone = both[(both["_merge"] == "left_only") & ~both["_both"]]
    part(gone.rename(columns={"subject_a": "subject"}), "subject_gone", 2,
         object_id=gone["object_id"], object=gone["object_a"])
    new_pairs = both[(both["_merge"] == "right_only") & ~both["_both"]]
    part(new_pairs.rename(columns={"subject_b": "subject"}), "subject_added", 3,
         object_id=new_pairs["object_id"], object=new_pairs["object_b"])

    removed = both[(both["_merge"] == "left_only") & both["_both"]]
    added = both[(both["_merge"] == "right_only") & both["_both"]]
    # a pair that lost exactly one object and gained exactly one: that object changed
    one = (removed.groupby(pair).size().rename("_r").to_frame()
           .join(added.groupby(pair).size().rename("_n"), how="inner"))
    one = one[(one["_r"] == 1) & (one["_n"] == 1)].reset_index()[pair]
    swap = removed.merge(one, on=pair)[pair + ["object_id", "object_a"]].merge(
        added.merge(one, on=pair)[pair + ["object_id", "object_b"]], on=pair,
        suffixes=("_was", "_now"))
    swap = swap.merge(b.drop_duplicates(pair)[pair + ["subject"]], on=pair)
    same = swap["object_a"] == swap["object_b"]
    part(swap, same.map({True: "object_id_changed", False: "object_changed"}), 2,
         object_id=swap["object_id_now"], object=swap["object_b"],
         old_object_id=swap["object_id_was"], old_object=swap["object_a"])
    keyed = one.assign(_one=True)
    for frame, change, group, label in ((removed, "object_removed", 2, "object_a"),
                                        (added, "object_added", 3, "object_b")):
        rest = frame.merge(keyed, on=pair, how="left")
        rest = rest[rest["_one"] != True]   # noqa: E712 (NaN for pairs not in one)
        rest = rest.merge(b.drop_duplicates(pair)[pair + ["subject"]], on=pair)
        part(rest, change, group, object_id=rest["object_id"], object=rest[label])

    kept = both[both["_merge"] == "both"].merge(
        b.drop_duplicates(pair)[pair + ["subject"]], on=pair)
    for field, change, sub in (("object", "object_label_changed", 0),
                               ("object_aliases", "object_aliases_changed", 1)):
        diff = kept[kept[f"{field}_a"] != kept[f"{field}_b"]]
        part(diff, change, 4, sub, object_id=diff["object_id"], object=diff["object_b"],
             old_value=diff[f"{field}_a"], new_value=diff[f"{field}_b"])

    firsts = a.drop_duplicates(pair).merge(b.drop_duplicates(pair), on=pair,
                                           suffixes=("_a", "_b"))
    for field, change, group in (("subject", "subject_label_changed", 0),
                                 ("subject_aliases", "subject_aliases_changed", 1)):
        diff = firsts[firsts[f"{field}_a"] != firsts[f"{field}_b"]]
        part(diff.assign(subject=diff["subject_b"]), change, group,
             old_value=diff[f"{field}_a"], new_value=diff[f"{field}_b"])

    frame = pd.concat(parts, ignore_index=True).sort_values(
        ["relation_id", "subject_id", "_group", "_object", "_sub"], kind="stable")
    return pa.Table.from_pandas(frame[DIFF_SCHEMA.names].astype(str), schema=DIFF_SCHEMA,
                                preserve_index=False)


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
