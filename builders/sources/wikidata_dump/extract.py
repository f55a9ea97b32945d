"""The pure function at the heart of a dump build: whole lines in, a :class:`Piece` out.

The same function runs in the main process, in local worker processes and in Ray tasks; a
reader is built once per process for a spec (msgspec types are made at run time for the
language and the properties asked for).
"""
from __future__ import annotations

from factprobe.builders.sources.wikidata_dump.rows import Piece, PieceStats, Rows
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec

_READERS: dict[ExtractSpec, object] = {}


def reader_for(spec: ExtractSpec):
    reader = _READERS.get(spec)
    if reader is None:
        if spec.syntax == "json":
            from factprobe.builders.sources.wikidata_dump.json_lines import EntityReader
            reader = EntityReader(spec)
        else:
            from factprobe.builders.sources.wikidata_dump.ntriples import TriplesReader
            reader = TriplesReader(spec)
        _READERS[spec] = reader
    return reader


def extract(spec: ExtractSpec, data: bytes) -> Piece:
    """Read the whole lines ``data``. Raises :class:`~.rows.DumpLineError` with a line number
    counted from 1 at the start of ``data``."""
    rows, stats = Rows(), PieceStats()
    reader_for(spec).read(data, rows, stats)
    return Piece(rows.tables(), stats)
