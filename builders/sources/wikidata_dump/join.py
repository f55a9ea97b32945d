"""Joining the shards out of core with DuckDB: statements meet the names of their subjects and
objects wherever in the dump those entities were.

Only the result (the facts asked for, their entities' names) comes back to Python; the names of
every other entity stay in the shard files, and DuckDB spills its hash tables to the work
folder when they outgrow ``memory_limit``. Every query that feeds a table orders its rows, so
the bytes never depend on DuckDB's threads.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from factprobe.core.errors import UserError

LABEL_KINDS = ("label", "pref", "alt")


def connect(work: Path, threads: int, memory_limit: str):
    import duckdb
    tmp = work / "duckdb-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(config={"threads": max(1, threads), "memory_limit": memory_limit,
                                  "temp_directory": str(tmp),
                                  "preserve_insertion_order": False})


def check_memory_limit(limit: str | None) -> None:
    """``--memory-limit`` as DuckDB reads it, checked before the dump is read."""
    if limit is None:
        return
    import duckdb
    try:
        duckdb.connect(config={"memory_limit": limit}).close()
    except duckdb.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise UserError(f"--memory-limit {limit!r}: {first}; give a size such as 512MB or "
                        f"4GB") from None


@contextlib.contextmanager
def memory_errors(limit: str | None) -> Iterator[None]:
    """DuckDB running out of its memory limit, as one line. Entered outside the extraction:
    the finished shards are kept, so the command run again with more starts at the join."""
    try:
        yield
    except Exception as exc:
        # duckdb is imported only once the shards are joined: imported here, its library
        # would sit in memory through the read (9 MB more at the peak of a sparse build)
        duckdb = sys.modules.get("duckdb")
        if duckdb is None or not isinstance(exc, duckdb.OutOfMemoryException):
            raise
        given = f"its limit, --memory-limit {limit}" if limit else "its default limit"
        raise UserError(f"DuckDB ran out of memory ({given}) joining the dump's shards; run the "
                        f"command again with a larger --memory-limit (e.g. 1GB): the shards "
                        f"read so far are reused") from None


def default_memory_limit() -> str:
    """Half the machine's memory, at most 8 GB: DuckDB spills beyond it."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 << 30
    return f"{max(256, min(total // 2, 8 << 30) >> 20)}MB"


def _arrow(con, query: str) -> pa.Table:
    rel = con.sql(query)
    # Newer DuckDB releases name it to_arrow_table, older ones arrow.
    return (getattr(rel, "to_arrow_table", None) or rel.arrow)()


def files_sql(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def load_statements(con, files: list[str], relations: list[str] | None,
                    limit: int | None) -> None:
    """Table ``st``: the distinct truthy triples of the relations (every relation if None),
    at most ``limit`` per relation (the first by subject, then object)."""
    where = ""
    if relations is not None:
        con.execute("CREATE TEMP TABLE wanted AS SELECT unnest(?) AS relation_id", [relations])
        where = "WHERE relation_id IN (SELECT relation_id FROM wanted)"
    distinct = (f"SELECT DISTINCT relation_id, subject_id, object_id, object_kind, datatype, "
                f"lang FROM read_parquet({files_sql(files)}) {where}")
    if limit is not None:
        distinct = (f"SELECT * FROM ({distinct}) QUALIFY row_number() OVER (PARTITION BY "
                    f"relation_id ORDER BY subject_id, object_kind, object_id, "
                    f"datatype NULLS FIRST, lang NULLS FIRST) <= {int(limit)}")
    con.execute(f"CREATE TEMP TABLE st AS {distinct}")


def load_names(con, files: list[str], extra_ids: list[str]) -> None:
    """Table ``nm``: the names of the subjects and entity objects of ``st`` and of
    ``extra_ids`` (the relations), nobody else's."""
    con.execute("CREATE TEMP TABLE extra AS SELECT unnest(?::VARCHAR[]) AS id", [extra_ids])
    con.execute("CREATE TEMP TABLE ent AS SELECT subject_id AS id FROM st UNION "
                "SELECT object_id FROM st WHERE object_kind = 'iri' UNION SELECT id FROM extra")
    con.execute(f"CREATE TEMP TABLE nm AS SELECT entity_id, kind, value FROM "
                f"read_parquet({files_sql(files)}) WHERE entity_id IN (SELECT id FROM ent)")
    # The preferred label as the SPARQL source picks it: skos:prefLabel, else rdfs:label, the
    # smallest when there are several.
    con.execute("CREATE TEMP TABLE lab AS SELECT entity_id, coalesce("
                "min(value) FILTER (WHERE kind = 'pref'), "
                "min(value) FILTER (WHERE kind = 'label')) AS label FROM nm "
                "WHERE kind IN ('pref', 'label') GROUP BY entity_id")


def labelled_statements(con) -> pa.Table:
    return _arrow(
        con, "SELECT st.relation_id, st.subject_id, st.object_id, st.object_kind, st.datatype, "
        "st.lang, s.label AS subject, o.label AS object_label FROM st "
        "LEFT JOIN lab s ON s.entity_id = st.subject_id "
        "LEFT JOIN lab o ON st.object_kind = 'iri' AND o.entity_id = st.object_id "
        "ORDER BY st.relation_id, st.subject_id, st.object_kind, st.object_id, "
        "st.datatype NULLS FIRST, st.lang NULLS FIRST")


def present_relations(con) -> set[str]:
    return {r for (r,) in con.execute("SELECT DISTINCT relation_id FROM st").fetchall()}


def aliases(con) -> pa.Table:
    """Every name of every entity in ``nm``; the facts builder drops each entity's own label."""
    return _arrow(
        con, "SELECT DISTINCT entity_id, value AS alias FROM nm WHERE kind IN ('label', 'pref', "
        "'alt') ORDER BY entity_id, alias")


def names_by_kind(con, ids: list[str]) -> dict[str, dict[str, list[str]]]:
    """``{entity: {kind: sorted values}}`` for a few entities (the relations)."""
    rows = con.execute("SELECT entity_id, kind, value FROM nm WHERE entity_id IN "
                       "(SELECT unnest(?::VARCHAR[])) ORDER BY entity_id, kind, value",
                       [ids]).fetchall()
    out: dict[str, dict[str, list[str]]] = {}
    for eid, kind, value in rows:
        out.setdefault(eid, {}).setdefault(kind, []).append(value)
    return out
