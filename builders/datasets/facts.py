"""Turn what a source read (raw triples, aliases, relation metadata) into the facts table.

Every source (SPARQL, RDF file, T-REx, CSV) hands over the same :class:`SourceResult`, so
labels, answers, aliases, de-duplication and the counting of what was dropped happen once, here.
Columnar throughout (pandas + Arrow list arrays) because T-REx-sized inputs have millions of rows.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.tables import FACTS_SCHEMA, OPTIONAL_FACT_FIELDS, RELATIONS_SCHEMA

RAW_COLUMNS = ["relation_id", "subject_id", "object_id", "subject", "object"]
ID_COLUMNS = ["relation_id", "subject_id", "object_id"]


@dataclass
class SourceResult:
    """What a source read. Labels may be missing (None): assembly drops and counts those rows.

    ``triples`` has :data:`RAW_COLUMNS`, optionally ``object_type`` (``entity`` or a literal
    datatype) and the T-REx evidence columns. ``aliases`` has ``entity_id`` and ``alias``.
    ``relations`` has ``relation_id`` and optionally ``label``, ``description``, ``iri``.
    """

    triples: pd.DataFrame
    aliases: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["entity_id", "alias"]))
    relations: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["relation_id"]))
    provenance: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)
    source_tag: str = ""
    # An out-of-core assembly (the wikidata-dump source: builders/sources/wikidata_dump/
    # assemble.py): ``rows`` and ``assemble()``; assemble_facts hands over to it, and
    # ``triples``/``aliases`` stay empty.
    assembly: Any = None
    # Columns of ``triples`` a source keeps as fact columns beyond the schema's (a benchmark's
    # own ids, popularity, judgments: builders/sources/bench_files.py), name -> Arrow type, in
    # the order they are appended; a ``split`` column of ``triples`` fills the facts' split.
    extra_columns: dict = field(default_factory=dict)


def _list_array(offsets: np.ndarray, values: pa.Array) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values)


def _grouped_lists(keys: pd.DataFrame, values: pd.Series) -> tuple[pd.DataFrame, pa.ListArray]:
    """Unique sorted values per key, as (distinct keys, one list per key).

    ``keys`` and ``values`` must already be sorted by key then value and de-duplicated.
    """
    if len(keys) == 0:
        return keys.iloc[:0], pa.array([], type=pa.list_(pa.string()))
    starts = np.flatnonzero(_changes(keys))
    offsets = np.append(starts, len(keys))
    return keys.iloc[starts].reset_index(drop=True), _list_array(
        offsets, pa.array(values).cast(pa.string()))


def _changes(frame: pd.DataFrame) -> np.ndarray:
    """True where a row differs from the row before it in any column (and at row 0).

    Compared as Arrow arrays, so big tables need no Python string objects.

    >>> _changes(pd.DataFrame({"a": ["x", "x", "x", "y"], "b": ["1", "1", "2", "2"]})).tolist()
    [True, False, True, True]
    """
    change = np.zeros(len(frame), dtype=bool)
    if len(frame):
        change[0] = True
    for col in frame.columns:
        arr = pa.array(frame[col])
        if len(arr) > 1:
            change[1:] |= pc.not_equal(arr[1:], arr[:-1]).to_numpy(zero_copy_only=False)
    return change


def alias_lists(aliases: pd.DataFrame, labels: pd.Series) -> tuple[pd.Index, pa.ListArray]:
    """Sorted unique aliases per entity, without the entity's own preferred label."""
    a = aliases[["entity_id", "alias"]].dropna()
    a = a[a["alias"].str.strip() != ""]
    label_of = labels[~labels.index.duplicated()]
    a = a[a["alias"].to_numpy() != a["entity_id"].map(label_of).to_numpy()]
    a = a.drop_duplicates().sort_values(["entity_id", "alias"], kind="stable")
    keys, lists = _grouped_lists(a[["entity_id"]], a["alias"])
    return pd.Index(keys["entity_id"]), lists


def _take_lists(index: pd.Index, lists: pa.ListArray, ids: pd.Series) -> pa.Array:
    pos = index.get_indexer(ids)
    empty_at = len(lists)
    # One trailing empty list serves every entity without aliases.
    padded = pa.concat_arrays([lists, pa.array([[]], type=pa.list_(pa.string()))])
    pos = np.where(pos < 0, empty_at, pos)
    return padded.take(pa.array(pos))


def _fact_ids(df: pd.DataFrame, chunk: int = 1_000_000) -> pa.Array:
    """:func:`factprobe.core.tables.fact_id` of every row, a million rows at a time.

    >>> from factprobe.core.tables import fact_id
    >>> row = pd.DataFrame({"relation_id": ["P36"], "subject_id": ["Q142"], "object_id": ["Q90"]})
    >>> _fact_ids(row).to_pylist() == [fact_id("P36", "Q142", "Q90")]
    True
    """
    parts = [pa.array([], type=pa.string())]
    for start in range(0, len(df), chunk):
        part = df.iloc[start:start + chunk]
        parts.append(fact_ids(*(pa.array(part[c]) for c in ID_COLUMNS)))
    return pa.concat_arrays(parts)


def fact_ids(relation: pa.Array, subject: pa.Array, obj: pa.Array) -> pa.Array:
    """:func:`factprobe.core.tables.fact_id` of each row of three string arrays: the key
    (relation, subject, object joined by \\x1f, UTF-8) is built by Arrow, only the hash runs
    per row."""
    sha1 = hashlib.sha1
    cols = [c.cast(pa.large_string()) for c in (relation, subject, obj)]
    sep = pa.scalar("\x1f", type=pa.large_string())
    keys = pc.binary_join_element_wise(*cols, sep).cast(pa.large_binary())
    return pa.array([sha1(k).hexdigest()[:16] for k in keys.to_pylist()], type=pa.string())


def answer_lists(df: pd.DataFrame) -> tuple[int, pa.ListArray]:
    """(distinct pairs, each row's answers): every distinct object label of the row's
    (relation, subject) pair, sorted. ``df`` is sorted by relation then subject."""
    ans = df[["relation_id", "subject_id", "object"]].sort_values(
        ["relation_id", "subject_id", "object"], kind="stable")
    ans = ans[_changes(ans)]
    pair_keys, pair_lists = _grouped_lists(ans[["relation_id", "subject_id"]], ans["object"])
    # df is sorted by relation then subject like pair_keys: its k-th distinct pair is theirs
    answers = pair_lists.take(pa.array(np.cumsum(_changes(df[["relation_id", "subject_id"]])) - 1))
    return len(pair_keys), answers


def triple_count(result: SourceResult) -> int:
    """How many rows a source handed over, before labels are checked."""
    return result.assembly.rows if result.assembly is not None else len(result.triples)


def assemble_facts(result: SourceResult) -> tuple[pa.Table, pa.Table, dict]:
    """Build (facts, relations, counts) from a source result.

    Rows whose subject or object has no label in the requested language are dropped; the
    counts say how many rows and distinct entities were dropped for that.
    """
    if result.assembly is not None:
        return result.assembly.assemble()
    df = result.triples.copy()
    for col in RAW_COLUMNS:
        if col not in df.columns:
            df[col] = None
    extra = [name for name, _ in OPTIONAL_FACT_FIELDS if name in df.columns]
    kept = {name: typ for name, typ in result.extra_columns.items() if name in df.columns}
    dropped: dict = dict(result.dropped)

    for side in ("subject", "object"):
        lab = df[side]
        missing = lab.isna() | (lab.astype("string").str.strip() == "")
        if missing.any():
            dropped[f"rows_without_{side}_label"] = dropped.get(
                f"rows_without_{side}_label", 0) + int(missing.sum())
            dropped[f"{side}s_without_label"] = dropped.get(f"{side}s_without_label", 0) + int(
                df.loc[missing, f"{side}_id"].nunique())
            df = df[~missing]
    for col in RAW_COLUMNS:
        df[col] = df[col].astype(str).str.strip()

    # Sorted by the triple; among duplicate triples the evidence columns decide which row is
    # kept. Sorting by them too is costly (millions of distinct sentences), so it happens only
    # when there are duplicates: with unique triples both orders are the same.
    df = df.sort_values(ID_COLUMNS, kind="stable", na_position="last")
    if not _changes(df[ID_COLUMNS]).all():
        df = df.sort_values(ID_COLUMNS + extra, kind="stable", na_position="last")
        before = len(df)
        df = df.drop_duplicates(ID_COLUMNS, keep="first")
        dropped["duplicate_rows"] = dropped.get("duplicate_rows", 0) + before - len(df)
    df = df.reset_index(drop=True)

    pairs, answers = answer_lists(df)

    if len(result.aliases):
        labels = pd.concat([pd.Series(df["subject"].to_numpy(), index=df["subject_id"]),
                            pd.Series(df["object"].to_numpy(), index=df["object_id"])])
        present = pd.Index(labels.index.unique())
        aliases = result.aliases[result.aliases["entity_id"].isin(present)]
        alias_index, alias_arr = alias_lists(aliases, labels)
    else:  # no aliases at all (T-REx, most CSVs): skip the label table of every entity
        alias_index, alias_arr = pd.Index([], dtype=object), pa.array([], type=pa.list_(pa.string()))

    cols = {
        "fact_id": _fact_ids(df),
        "relation_id": pa.array(df["relation_id"], type=pa.string()),
        "subject_id": pa.array(df["subject_id"], type=pa.string()),
        "object_id": pa.array(df["object_id"], type=pa.string()),
        "subject": pa.array(df["subject"], type=pa.string()),
        "object": pa.array(df["object"], type=pa.string()),
        "subject_aliases": _take_lists(alias_index, alias_arr, df["subject_id"]),
        "object_aliases": _take_lists(alias_index, alias_arr, df["object_id"]),
        "answers": answers,
        "split": pa.array(df["split"].fillna("").astype(str) if "split" in df.columns
                          else [""] * len(df), type=pa.string()),
        "source": pa.array([result.source_tag] * len(df), type=pa.string()),
    }
    schema = FACTS_SCHEMA
    for name, typ in OPTIONAL_FACT_FIELDS:
        if name in extra:
            cols[name] = pa.array(df[name].where(df[name].notna(), None), type=typ)
            schema = schema.append(pa.field(name, typ))
    for name, typ in kept.items():
        cols[name] = _extra_array(df[name], typ)
        schema = schema.append(pa.field(name, typ))
    facts = pa.table(cols, schema=schema)

    relations = relations_table(result.relations, df)
    per_relation = df.groupby("relation_id").size()
    counts = {
        "facts": len(df),
        "relations": int(per_relation.shape[0]),
        "subject_relation_pairs": pairs,
        "facts_per_relation": {k: int(v) for k, v in per_relation.items()},
        "entities_with_aliases": len(alias_index),
        "dropped": dropped,
    }
    return facts, relations, counts


def _extra_array(values: pd.Series, typ: pa.DataType) -> pa.Array:
    """A kept source column as ``typ``; a missing value (None, NaN) is null.

    >>> _extra_array(pd.Series([3, None, 5]), pa.int64()).to_pylist()
    [3, None, 5]
    """
    return pa.array([None if not isinstance(v, (list, tuple)) and pd.isna(v) else v
                     for v in values], type=typ)


def relations_table(meta: pd.DataFrame, df: pd.DataFrame) -> pa.Table:
    """One row per relation present in the facts; missing labels fall back to the id."""
    present = sorted(df["relation_id"].unique())
    meta = meta.drop_duplicates("relation_id").set_index("relation_id") if len(meta) else None
    if "object_type" in df.columns:
        otype = df.groupby("relation_id")["object_type"].agg(lambda s: s.mode().iat[0])
    else:
        otype = pd.Series(dtype=object)

    def get(rid: str, col: str, default: str = "") -> str:
        if meta is not None and col in meta.columns and rid in meta.index:
            val = meta.at[rid, col]
            if isinstance(val, str) and val:
                return val
        return default

    rows = {
        "relation_id": present,
        "label": [get(r, "label", r) for r in present],
        "description": [get(r, "description") for r in present],
        "object_type": [str(otype.get(r, "entity")) for r in present],
        "iri": [get(r, "iri") for r in present],
    }
    return pa.table(rows, schema=RELATIONS_SCHEMA)
