"""Diffing a dataset whose subjects are labels (a ParaRel or EntityQuestions import) against its
refresh, whose subjects are ids: the refresh's ``resolved.parquet`` says which id each
(relation, label) became, so the old facts are read under those ids first.

- a subject label that resolved: its facts take the id (and are compared as any pair);
- one that did not (unresolved, ambiguous, malformed): its facts are left out of the comparison
  and counted, never reported as gone: a label nobody bears is no evidence the fact is gone;
- an object named by label: it takes the id of the new object of the same pair with that label,
  so an unchanged answer is no change; one no new object is named is compared as it is (the
  pair lost it, or it has another name now: ``object_changed``);
- aliases are not compared: the import's aliases (none, or the benchmark's other answers) are
  not a snapshot's, so the new aliases stand for the old.
"""
from __future__ import annotations

import pyarrow as pa

from factprobe.builders.datasets.diff import DIFF_COLUMNS

RESOLVED = "resolved"   # the table a refresh of a label-named dataset writes beside its facts


def align_to_ids(old: pa.Table, resolved: pa.Table, new: pa.Table) -> tuple[pa.Table, dict]:
    """``old`` (facts, :data:`DIFF_COLUMNS`) under the ids its labels resolved to, and what was
    left out: ``{"pairs_left_out": n, "facts_left_out": n}``.

    >>> old = pa.table({"relation_id": ["P36", "P36"], "subject_id": ["Italy", "Atlantis"],
    ...                 "object_id": ["Rome", "Poseidonis"], "subject": ["Italy", "Atlantis"],
    ...                 "object": ["Rome", "Poseidonis"], "subject_aliases": [[], []],
    ...                 "object_aliases": [[], []]})
    >>> res = pa.table({"relation_id": ["P36", "P36"], "subject": ["Italy", "Atlantis"],
    ...                 "status": ["resolved", "unresolved"], "subject_id": ["Q38", ""]})
    >>> new = pa.table({"relation_id": ["P36"], "subject_id": ["Q38"], "object_id": ["Q220"],
    ...                 "subject": ["Italy"], "object": ["Rome"], "subject_aliases": [["Italia"]],
    ...                 "object_aliases": [["Roma"]]})
    >>> aligned, left = align_to_ids(old, res, new)
    >>> aligned.select(["subject_id", "object_id", "object_aliases"]).to_pylist(), left
    ([{'subject_id': 'Q38', 'object_id': 'Q220', 'object_aliases': ['Roma']}], {'pairs_left_out': 1, 'facts_left_out': 1})
    """
    cols = list(DIFF_COLUMNS)
    o = old.select(cols).to_pandas()
    r = resolved.select(["relation_id", "subject", "status", "subject_id"]).to_pandas()
    ok = r[r["status"] == "resolved"].rename(columns={"subject": "_label", "subject_id": "_id"})
    o = o.merge(ok[["relation_id", "_label", "_id"]], how="left",
                left_on=["relation_id", "subject_id"], right_on=["relation_id", "_label"])
    gone = o["_id"].isna()
    left = {"pairs_left_out": int(o.loc[gone, ["relation_id", "subject_id"]]
                                  .drop_duplicates().shape[0]),
            "facts_left_out": int(gone.sum())}
    o = o.loc[~gone].copy()
    o["subject_id"] = o["_id"]
    n = new.select(cols).to_pandas()
    # an object named by label takes the id of the pair's new object of that name (when one
    # only has it: two new objects sharing a name are no answer to which one it was)
    by_name = n.drop_duplicates(["relation_id", "subject_id", "object"], keep=False)
    by_name = by_name[["relation_id", "subject_id", "object", "object_id"]].rename(
        columns={"object_id": "_oid"})
    o = o.merge(by_name, how="left", on=["relation_id", "subject_id", "object"])
    named = o["_oid"].notna() & (o["object_id"] == o["object"])
    o.loc[named, "object_id"] = o.loc[named, "_oid"]
    subj = n.drop_duplicates(["relation_id", "subject_id"])[
        ["relation_id", "subject_id", "subject_aliases"]].rename(
        columns={"subject_aliases": "_sa"})
    obj = n.drop_duplicates(["relation_id", "subject_id", "object_id"])[
        ["relation_id", "subject_id", "object_id", "object_aliases"]].rename(
        columns={"object_aliases": "_oa"})
    o = o.merge(subj, how="left", on=["relation_id", "subject_id"]).merge(
        obj, how="left", on=["relation_id", "subject_id", "object_id"])
    for side, new_col in (("subject", "_sa"), ("object", "_oa")):
        has = o[new_col].notna()
        o[f"{side}_aliases"] = [list(a) if h else list(b) for a, b, h in
                                zip(o[new_col], o[f"{side}_aliases"], has)]
    schema = pa.schema([(c, pa.list_(pa.string()) if c.endswith("_aliases") else pa.string())
                        for c in cols])
    out = pa.Table.from_pandas(o[cols].astype({c: object for c in cols}), schema=schema,
                               preserve_index=False)
    return out, left


def read_resolved(folder) -> pa.Table | None:
    """A refresh's resolution table, or None for a dataset refreshed by id."""
    from pathlib import Path
    from factprobe.core.tables import read_table
    if not (Path(folder) / f"{RESOLVED}.parquet").is_file():
        return None
    return read_table(folder, RESOLVED)
