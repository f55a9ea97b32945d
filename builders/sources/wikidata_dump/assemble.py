"""The facts table of a dump, assembled out of core (issue 30): DuckDB does what
:func:`factprobe.builders.datasets.facts.assemble_facts` does in pandas -- drop and count rows
without labels, strip, de-duplicate, pick each entity's aliases -- on the join's tables, with
its memory held to :data:`ASSEMBLY_MEMORY` (it spills to the work folder beyond), and hands the
rows back in order, a batch at a time. Python hashes the fact ids, gathers the answers of
whole (relation, subject) pairs and looks the aliases up, a batch at a time, and
``facts.parquet`` is written a row group (1Mi rows) at a time. ``build facts`` (the streamed
write) holds that row group on disk, not in memory (:mod:`.spill`), and DuckDB's last step,
the sort, gets :data:`SORT_MEMORY`.

The result is the very file the in-memory assembly writes (tests/builders/sources/
test_dump_assembly.py compares the bytes). What still grows with the facts is the alias
lists, one per entity of the facts that has aliases, looked up in memory.

Equal rules, equal bytes:

- pandas strips what Python's ``str.isspace`` calls space (Arrow's ``utf8_trim_whitespace``
  under pandas 3 strips the same 29 characters); DuckDB's ``trim(x, chars)`` is given them.
- DuckDB orders VARCHAR by their UTF-8 bytes, which is the order of code points, as Python.
- Where the pandas code keeps "the first" row (duplicates after stripping, an entity's label
  for its aliases), "first" is in the order the join handed the rows over, as there.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.tables import FACTS_SCHEMA, ROW_GROUP_ROWS, write_parquet_groups
from factprobe.builders.datasets.facts import fact_ids, relations_table
from factprobe.builders.sources.graph import literal_label
from factprobe.builders.sources.iris import XSD, compact
from factprobe.builders.sources.wikidata_dump.spill import (PageDroppingFile, SpilledGroups,
                                                           row_groups_from_disk)

# What Python's str.strip() strips (and so pandas' and Arrow's): 29 characters.
WHITESPACE = "".join(c for c in map(chr, range(0x110000)) if c.isspace())
BATCH_ROWS = 1 << 16
# DuckDB's memory while it assembles, unless --memory-limit says otherwise: its sorts, windows
# and tables spill to the work folder beyond it, so that its share does not grow
# with the facts (at 100k dense entities the assembly alone peaks at 324 MB in these steps;
# docs/benchmarks.md, "Flat memory").
ASSEMBLY_MEMORY = "256MB"
# DuckDB's memory for the last step, the facts' sort, which spills to disk in runs: unlike
# the steps before it (windows, distinct counts) it works in any memory.
SORT_MEMORY = "64MB"
_STR_LIST = pa.list_(pa.string())


def _py_strip_macro() -> str:
    """``pystrip(x)``: ``x.strip()``. ``trim`` with a set of characters costs 2 us a value in
    DuckDB 2.0, so it runs only on values that start or end with one of them."""
    chars = ", ".join(f"'{c}'" for c in WHITESPACE)
    return (f"CREATE OR REPLACE TEMP MACRO pystrip(x) AS CASE WHEN left(x, 1) IN ({chars}) OR "
            f"right(x, 1) IN ({chars}) THEN trim(x, '{WHITESPACE}') ELSE x END")


def _flat(col: pa.ChunkedArray, typ: pa.DataType) -> pa.Array:
    return (pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)).cast(typ)


def _release() -> None:
    """Hand what Arrow freed back to the system. Its allocator keeps freed pages for reuse, and
    the batches' transient arrays (takes, concatenations) are freed in sizes that the next ones
    do not reuse: at 100k dense entities the row group's build peaked at 611 MB for a 130 MB
    table, 530 MB with this after each batch and column (the same bytes)."""
    pa.default_memory_pool().release_unused()


def _starts(cols: list[pa.Array]) -> np.ndarray:
    """True where a row differs from the one before it in any of ``cols`` (and at row 0)."""
    change = np.zeros(len(cols[0]), dtype=bool)
    change[:1] = True
    for col in cols:
        if len(col) > 1:
            change[1:] |= pc.not_equal(col[1:], col[:-1]).to_numpy(zero_copy_only=False)
    return change


def _answers(rel: pa.Array, subj: pa.Array, obj: pa.Array) -> tuple[int, pa.ListArray]:
    """:func:`~factprobe.builders.datasets.facts.answer_lists` on Arrow arrays (rows sorted
    by relation then subject): every distinct object label of the row's pair, sorted. Arrow
    orders strings by their UTF-8 bytes, Python by code points: the same order. Through pandas
    each value became a Python string: 0.70 CPU-s at 100k dense facts, 0.15 in Arrow."""
    if not len(rel):
        return 0, pa.array([], _STR_LIST)
    table = pa.table({"r": rel, "s": subj, "o": obj})
    order = pc.sort_indices(table, sort_keys=[("r", "ascending"), ("s", "ascending"),
                                              ("o", "ascending")])
    r, s, o = (_flat(c, pa.string()) for c in table.take(order).columns)
    pair = _starts([r, s])
    first = pair | _starts([o])
    offsets = np.append(np.flatnonzero(pair[first]), int(first.sum()))
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), o.filter(pa.array(first)))
    return len(offsets) - 1, lists.take(pa.array(np.cumsum(_starts([rel, subj])) - 1))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _missing(col: str) -> str:
    return f"({col} IS NULL OR pystrip({col}) = '')"


class DumpAssembly:
    """Assembles the facts of the join's ``st``/``lab``/``nm`` tables on ``con`` (kept open by
    the caller until the dataset is written)."""

    def __init__(self, con, lang: str, date_format: str, source_tag: str, dropped: dict,
                 relation_meta: pd.DataFrame, memory_limit: str | None = None,
                 spill_dir: Path | None = None):
        self.con, self.lang, self.date_format = con, lang, date_format
        self.spill_dir = spill_dir  # where the streamed writer holds its row groups
        self.memory_limit = memory_limit or ASSEMBLY_MEMORY
        self.sort_memory = memory_limit or SORT_MEMORY
        self.source_tag, self.dropped = source_tag, dict(dropped)
        self.relation_meta = relation_meta
        con.execute(_py_strip_macro())
        con.execute("CREATE OR REPLACE TEMP VIEW stk AS SELECT *, coalesce(object_kind = 'iri', "
                    "false) AS iri, NOT coalesce(object_kind = 'iri', false) AND coalesce(lang, "
                    "'') <> '' AND lang <> " + _quote(lang) + " AS foreign_text FROM st")
        # Rows the in-memory path hands to the assembly: all but text in another language.
        self.rows, self.foreign = con.execute(
            "SELECT count(*) FILTER (NOT foreign_text), count(*) FILTER (foreign_text) FROM stk"
        ).fetchall()[0]
        if self.foreign:  # counted as the in-memory path counts it, before the labels
            self.dropped = {"rows_with_foreign_literal": self.foreign, **self.dropped}

    # -- the steps, each a table in DuckDB ----------------------------------------------------

    def _literals(self) -> None:
        """``litv``: the display form and type of every literal value, by the same Python
        functions as the in-memory path, once per distinct (value, datatype)."""
        fmt = self.date_format

        def value(oid: pa.Array, datatype: pa.Array) -> pa.Array:
            return pa.array([literal_label({"value": o, "datatype": d or XSD + "string"}, fmt)
                             for o, d in zip(oid.to_pylist(), datatype.to_pylist())], pa.string())

        def kind(datatype: pa.Array) -> pa.Array:
            xsd = {"xsd": XSD}
            return pa.array([compact(d or XSD + "string", xsd) for d in datatype.to_pylist()],
                            pa.string())

        con = self.con
        con.create_function("lit_value", value, ["VARCHAR", "VARCHAR"], "VARCHAR",
                            type="arrow", null_handling="special")
        con.create_function("lit_type", kind, ["VARCHAR"], "VARCHAR", type="arrow",
                            null_handling="special")
        try:
            con.execute("CREATE OR REPLACE TEMP TABLE litv AS SELECT object_id, datatype, "
                        "lit_value(object_id, datatype) AS value, lit_type(datatype) AS otype "
                        "FROM (SELECT DISTINCT object_id, datatype FROM stk "
                        "WHERE NOT iri AND NOT foreign_text)")
        finally:
            con.remove_function("lit_value")
            con.remove_function("lit_type")

    def _rows(self) -> None:
        """``fr``: the rows as the in-memory path receives them (a view: DuckDB reads it twice
        rather than holding it); ``st``'s key columns give their order there."""
        self.con.execute(
            "CREATE OR REPLACE TEMP VIEW fr AS SELECT st.relation_id AS r0, st.subject_id AS s0, "
            "st.object_kind AS k0, st.object_id AS id0, st.datatype AS d0, st.lang AS l0, "
            "CASE WHEN st.iri THEN st.object_id ELSE lv.value END AS o0, s.label AS subj, "
            "CASE WHEN st.iri THEN o.label ELSE lv.value END AS obj, "
            "CASE WHEN st.iri THEN 'entity' ELSE lv.otype END AS otype FROM stk st "
            "LEFT JOIN lab s ON s.entity_id = st.subject_id "
            "LEFT JOIN lab o ON st.iri AND o.entity_id = st.object_id "
            "LEFT JOIN litv lv ON NOT st.iri AND lv.object_id IS NOT DISTINCT FROM st.object_id "
            "AND lv.datatype IS NOT DISTINCT FROM st.datatype WHERE NOT st.foreign_text")

    def _drop_unlabelled(self, dropped: dict) -> None:
        """Count what the in-memory path drops for missing labels; ``kept``: the rest, stripped,
        one row per triple (the first in the join's order, as there)."""
        con = self.con
        ms, mo = _missing("subj"), _missing("obj")
        # Each label stripped once a row: with the tests written into every FILTER, DuckDB
        # stripped them seven times (2.7 s of this step's 5.7 at 100k dense, now 0.8 s).
        rs, ss, ro, so, labelled = con.execute(
            "SELECT count(*) FILTER (ms), count(DISTINCT s0) FILTER (ms), "
            "count(*) FILTER (NOT ms AND mo), count(DISTINCT o0) FILTER (NOT ms AND mo), "
            f"count(*) FILTER (NOT ms AND NOT mo) FROM (SELECT s0, o0, {ms} AS ms, {mo} AS mo "
            "FROM fr)").fetchall()[0]
        for side, rows, ids in (("subject", rs, ss), ("object", ro, so)):
            if rows:
                dropped[f"rows_without_{side}_label"] = dropped.get(
                    f"rows_without_{side}_label", 0) + rows
                dropped[f"{side}s_without_label"] = dropped.get(f"{side}s_without_label", 0) + ids
        # One row per stripped triple, the first in the join's order. A window over every row
        # (PARTITION BY the triple) held them all in memory and failed under a 128 MB limit
        # at 100k dense entities; duplicates are rare, so only their rows go through one, and
        # the rest is an anti-join on a grouped table, which both spill to the work folder.
        con.execute(
            "CREATE OR REPLACE TEMP TABLE lr AS SELECT pystrip(r0) AS r, pystrip(s0) AS s, "
            "pystrip(o0) AS o, pystrip(subj) AS subj, pystrip(obj) AS obj, otype, r0, s0, k0, "
            f"id0, d0, l0 FROM fr WHERE NOT {ms} AND NOT {mo}")
        con.execute("CREATE OR REPLACE TEMP TABLE dup AS SELECT r, s, o FROM lr "
                    "GROUP BY r, s, o HAVING count(*) > 1")
        same = " AND ".join(f"lr.{c} IS NOT DISTINCT FROM dup.{c}" for c in "rso")
        con.execute(
            "CREATE OR REPLACE TEMP TABLE kept AS SELECT r, s, o, subj, obj, otype FROM lr "
            f"ANTI JOIN dup ON {same} UNION ALL SELECT r, s, o, subj, obj, otype FROM (SELECT "
            "lr.*, row_number() OVER (PARTITION BY lr.r, lr.s, lr.o ORDER BY r0, s0, k0, id0, "
            f"d0 NULLS FIRST, l0 NULLS FIRST) AS k FROM lr SEMI JOIN dup ON {same}) WHERE k = 1")
        con.execute("DROP TABLE lr")
        con.execute("DROP TABLE dup")
        # What DuckDB frees, it reuses for the next steps: the peak is that of one step, not
        # of all the tables at once.
        con.execute("DROP VIEW fr")
        con.execute("DROP VIEW stk")
        for table in ("st", "lab", "litv"):
            con.execute(f"DROP TABLE {table}")
        kept = con.execute("SELECT count(*) FROM kept").fetchall()[0][0]
        if kept < labelled:
            dropped["duplicate_rows"] = dropped.get("duplicate_rows", 0) + labelled - kept

    def _aliases(self) -> None:
        """``al``: each entity's sorted aliases without its own label (the first label it has
        in the facts, as a subject before as an object)."""
        con = self.con
        con.execute("CREATE OR REPLACE TEMP TABLE lof AS SELECT e, first(label ORDER BY side, r, "
                    "s, o) AS label FROM (SELECT s AS e, subj AS label, 0 AS side, r, s, o FROM "
                    "kept UNION ALL SELECT o, obj, 1, r, s, o FROM kept) GROUP BY e")
        con.execute("CREATE OR REPLACE TEMP TABLE al AS SELECT a.entity_id AS e, list(a.alias "
                    "ORDER BY a.alias) AS aliases FROM (SELECT DISTINCT entity_id, value AS alias "
                    "FROM nm WHERE kind IN ('label', 'pref', 'alt')) a JOIN lof ON lof.e = "
                    "a.entity_id WHERE a.alias IS NOT NULL AND pystrip(a.alias) <> '' AND "
                    "a.alias <> lof.label GROUP BY a.entity_id")
        con.execute("DROP TABLE lof")
        con.execute("DROP TABLE nm")

    def _batches(self, total: int, pairs_total: int) -> Iterator[pa.Table]:
        """The facts in order, a batch of whole (relation, subject) pairs at a time, every
        column of :data:`FACTS_SCHEMA`. DuckDB sorts only the five text columns (lists in its
        sort cost three times their memory); each entity's aliases are looked up in Arrow, and
        answers are gathered per batch of whole pairs (the rows of a batch's last pair wait
        for the next batch)."""
        al = self.con.sql("SELECT e, aliases FROM al").to_arrow_table()
        alias_ids = _flat(al["e"], pa.string())
        padded = pa.concat_arrays([_flat(al["aliases"], _STR_LIST), pa.array([[]], _STR_LIST)])
        del al

        def aliases_of(ids: pa.Array) -> pa.Array:
            pos = pc.fill_null(pc.index_in(ids, value_set=alias_ids), len(padded) - 1)
            return padded.take(pos)

        # The sort spills to the work folder: held to SORT_MEMORY, its share no longer grows
        # with the facts (at 100k dense entities it added 75 MB under 128 MB, 10 MB under 64).
        self.con.execute(f"SET memory_limit = {_quote(self.sort_memory)}")
        reader = self.con.sql("SELECT r, s, o, subj, obj FROM kept ORDER BY r, s, o"
                              ).to_arrow_reader(BATCH_ROWS)
        names = ["relation_id", "subject_id", "object_id", "subject", "object"]
        pairs = rows_out = 0

        def emit(rows: pa.Table) -> pa.Table:
            nonlocal pairs, rows_out
            cols = dict(zip(names, (_flat(rows.column(i), pa.string()) for i in range(5))))
            n, answers = _answers(cols["relation_id"], cols["subject_id"], cols["object"])
            pairs += n
            rows_out += len(cols["relation_id"])
            cols["fact_id"] = fact_ids(*(cols[k] for k in names[:3]))
            cols["subject_aliases"] = aliases_of(cols["subject_id"])
            cols["object_aliases"] = aliases_of(cols["object_id"])
            cols["answers"] = answers
            rows_n = len(cols["fact_id"])
            cols["split"] = pa.array([""] * rows_n, pa.string())
            cols["source"] = pa.array([self.source_tag] * rows_n, pa.string())
            return pa.table({f.name: cols[f.name] for f in FACTS_SCHEMA}, schema=FACTS_SCHEMA)

        held = None
        for batch in reader:
            rows = pa.Table.from_batches([batch])
            rows = pa.concat_tables([held, rows]) if held is not None else rows
            if rows.num_rows == 0:
                continue
            last = pc.and_(pc.equal(rows.column(0), rows.column(0)[-1]),
                           pc.equal(rows.column(1), rows.column(1)[-1]))
            cut = rows.num_rows - pc.sum(last).as_py()
            held = rows.slice(cut)
            if cut:
                yield emit(rows.slice(0, cut))
                _release()
        if held is not None and held.num_rows:
            yield emit(held)
            _release()
        # counted twice, by DuckDB for the manifest and here as written
        if (rows_out, pairs) != (total, pairs_total):
            raise RuntimeError(f"facts assembled {rows_out} rows in {pairs} pairs, counted "
                               f"{total} in {pairs_total}")

    def _row_groups(self, total: int, pairs_total: int) -> Iterator[pa.Table]:
        """The facts in order, :data:`ROW_GROUP_ROWS` rows at a time (the Parquet writer's row
        groups; each column one array, as the in-memory path's), held in memory."""
        parts: list[pa.Table] = []
        held = 0
        for table in self._batches(total, pairs_total):
            parts.append(table)
            held += table.num_rows
            while parts and held >= ROW_GROUP_ROWS:
                yield self._group(parts)
                held = sum(t.num_rows for t in parts)
        if parts:
            yield self._group(parts)

    @staticmethod
    def _group(parts: list[pa.Table]) -> pa.Table:
        """The first :data:`ROW_GROUP_ROWS` rows of ``parts``, one array a column; ``parts``
        keeps the rest. One column is concatenated at a time, so only one is held twice."""
        cols, rest = {}, {}
        for name in FACTS_SCHEMA.names:
            whole = pa.concat_arrays([c for t in parts for c in t.column(name).chunks])
            cols[name] = whole.slice(0, ROW_GROUP_ROWS)
            rest[name] = whole.slice(ROW_GROUP_ROWS)
            for i, t in enumerate(parts):  # the parts' column is no longer needed
                parts[i] = t.drop_columns([name])
            del whole
            _release()
        n = len(rest["fact_id"])
        parts[:] = [pa.table(rest, schema=FACTS_SCHEMA)] if n else []
        return pa.table(cols, schema=FACTS_SCHEMA)

    def _relations(self) -> tuple[pa.Table, dict[str, int]]:
        rows = self.con.execute("SELECT r, otype, count(*) FROM kept GROUP BY r, otype").fetchall()
        per_relation: dict[str, int] = {}
        best: dict[str, tuple[int, str]] = {}
        for r, otype, n in rows:
            per_relation[r] = per_relation.get(r, 0) + n
            # pandas' mode: the most frequent value, the smallest among equals; nulls ignored
            if otype is not None and (r not in best or (-n, otype) < (-best[r][0], best[r][1])):
                best[r] = (n, otype)
        frame = pd.DataFrame({"relation_id": list(per_relation),
                              "object_type": [best[r][1] if r in best else None
                                              for r in per_relation]})
        return relations_table(self.relation_meta, frame), dict(sorted(per_relation.items()))

    def _prepare(self) -> tuple[pa.Table, dict]:
        """Every step up to the ordered rows: (relations, counts)."""
        dropped = dict(self.dropped)
        con = self.con
        con.execute(f"SET memory_limit = {_quote(self.memory_limit)}")
        self._literals()
        self._rows()
        self._drop_unlabelled(dropped)
        self._aliases()
        facts_n, pairs = con.execute("SELECT count(*), count(DISTINCT (r, s)) FROM kept"
                                     ).fetchall()[0]
        with_aliases = con.execute("SELECT count(*) FROM al").fetchall()[0][0]
        relations, per_relation = self._relations()
        return relations, {"facts": facts_n, "relations": len(per_relation),
                           "subject_relation_pairs": pairs, "facts_per_relation": per_relation,
                           "entities_with_aliases": with_aliases, "dropped": dropped}

    def assemble(self) -> tuple[pa.Table, pa.Table, dict]:
        """(facts, relations, counts), as :func:`~factprobe.builders.datasets.facts.
        assemble_facts` gives them for the same rows: the whole table, for readers that want
        it (``factprobe init``'s sizing, the tests)."""
        relations, counts = self._prepare()
        groups = list(self._row_groups(counts["facts"], counts["subject_relation_pairs"]))
        facts = pa.concat_tables(groups) if groups else FACTS_SCHEMA.empty_table()
        return facts, relations, counts

    def assemble_kept(self, keep: Callable[[pa.Table], pa.Table]
                      ) -> tuple[pa.Table, pa.Table, dict]:
        """As :meth:`assemble`, each row group passed through ``keep`` as it is assembled:
        ``build refresh`` holds the rows of its dataset's pairs, never every fact of a
        relation (P19's millions)."""
        relations, counts = self._prepare()
        groups = [keep(g) for g in self._row_groups(counts["facts"],
                                                    counts["subject_relation_pairs"])]
        facts = pa.concat_tables(groups) if groups else FACTS_SCHEMA.empty_table()
        return facts, relations, counts

    def assemble_streamed(self) -> tuple["StreamedFacts", pa.Table, dict]:
        """As :meth:`assemble`, but the facts are only assembled as they are written, a row
        group at a time, to the path :func:`~factprobe.core.tables.write_dataset` gives."""
        relations, counts = self._prepare()
        return StreamedFacts(self, counts), relations, counts


class StreamedFacts:
    """``facts.parquet`` to be written: ``num_rows``, and called with a path, writes it."""

    def __init__(self, assembly: DumpAssembly, counts: dict):
        self.assembly, self.num_rows = assembly, counts["facts"]
        self.pairs = counts["subject_relation_pairs"]

    def __call__(self, path: Path) -> None:
        asm = self.assembly
        if asm.spill_dir is None:  # no work folder: the row groups are held in memory
            write_parquet_groups(asm._row_groups(self.num_rows, self.pairs), FACTS_SCHEMA, path)
            return
        spill = SpilledGroups(asm.spill_dir, FACTS_SCHEMA, ROW_GROUP_ROWS)
        # The writer gets a file object (pyarrow takes one where a path goes): each write
        # ends a column chunk, and the mapped pages the writer has read are dropped then.
        with PageDroppingFile(path, spill.drop_pages) as sink:
            groups = row_groups_from_disk(asm._batches(self.num_rows, self.pairs), spill)
            write_parquet_groups(groups, FACTS_SCHEMA, sink)
