"""What one piece of a dump yields: three small tables, and the error type for a bad line.

Extraction runs in worker processes and Ray tasks, so everything here is plain data that pickles
cheaply (Arrow tables and a few counters), and the tables have fixed schemas so that shards
written by any executor are the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

_s = pa.string()

# A truthy (best-rank) statement with a value: (relation, subject, object term).
STATEMENTS = pa.schema([("relation_id", _s), ("subject_id", _s), ("object_id", _s),
                        ("object_kind", _s), ("datatype", _s), ("lang", _s)])
# A statement of any rank with one of its qualifier values (Nobel: award P166 + time P585);
# a statement without the qualifier has one row with null qualifier columns.
QUALIFIED = pa.schema([("relation_id", _s), ("subject_id", _s), ("statement_id", _s),
                       ("rank", _s), ("object_id", _s), ("object_kind", _s), ("datatype", _s),
                       ("lang", _s), ("qualifier_id", _s), ("qualifier_value", _s),
                       ("qualifier_kind", _s), ("qualifier_datatype", _s)])
# Names in the wanted language: kind is label, pref (skos:prefLabel), alt (aliases), or for
# property entities description / comment / definition.
NAMES = pa.schema([("entity_id", _s), ("kind", _s), ("value", _s)])

TABLES = {"statements": STATEMENTS, "qualified": QUALIFIED, "names": NAMES}


class DumpLineError(Exception):
    """A line the reader cannot use. ``line`` counts from the start of the piece that was
    being read; the caller turns it into a line of the file."""

    def __init__(self, line: int, reason: str):
        super().__init__(line, reason)
        self.line = line
        self.reason = reason


@dataclass
class Rows:
    """Column lists for each table, filled entity by entity."""
    statements: dict = field(default_factory=lambda: {n: [] for n in STATEMENTS.names})
    qualified: dict = field(default_factory=lambda: {n: [] for n in QUALIFIED.names})
    names: dict = field(default_factory=lambda: {n: [] for n in NAMES.names})

    def tables(self) -> dict[str, pa.Table]:
        return {name: pa.table(getattr(self, name), schema=schema)
                for name, schema in TABLES.items()}


@dataclass
class PieceStats:
    """Counters of one piece (a batch, a shard): they add up over pieces."""
    lines: int = 0
    entities: int = 0
    bad_lines: int = 0
    modified: str = ""          # the latest ``modified`` timestamp seen (JSON dumps)
    closed: bool = False        # the piece ended with the JSON array's closing ``]``

    def add(self, other: "PieceStats") -> None:
        self.lines += other.lines
        self.entities += other.entities
        self.bad_lines += other.bad_lines
        self.modified = max(self.modified, other.modified)
        if other.lines:           # an empty piece says nothing about how the text ended
            self.closed = other.closed

    def as_dict(self) -> dict:
        return {"lines": self.lines, "entities": self.entities, "bad_lines": self.bad_lines,
                "modified": self.modified, "closed": self.closed}

    @classmethod
    def from_dict(cls, d: dict) -> "PieceStats":
        return cls(**{k: d[k] for k in ("lines", "entities", "bad_lines", "modified", "closed")})


@dataclass
class Piece:
    """The result of reading a run of whole lines."""
    tables: dict[str, pa.Table]
    stats: PieceStats


def concat_pieces(pieces: list[Piece]) -> Piece:
    stats = PieceStats()
    for p in pieces:
        stats.add(p.stats)
    tables = {name: pa.concat_tables([p.tables[name] for p in pieces]) if pieces
              else schema.empty_table() for name, schema in TABLES.items()}
    return Piece(tables, stats)
