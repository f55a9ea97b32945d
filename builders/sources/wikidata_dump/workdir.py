"""The scratch folder of one dump build: finished shards, kept across a kill so that rerunning
the same command picks up where it stopped, and removed once the dataset is written.

The folder is named by a hash of the dump file (path, size, modification time) and of what is
read from it (:class:`~.spec.ExtractSpec`, shard size), so a changed dump or a different
``--relations`` never reuses a shard. A shard is three Parquet files written under temporary
names and renamed, then a ``.done.json`` marker: only a shard with its marker counts as done.
factprobe only ever deletes a folder that carries its own marker file.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from factprobe.core import atomic
from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.builders.sources.wikidata_dump.rows import TABLES, Piece, PieceStats
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.stream import DumpFile

MARKER = "factprobe-dump-work.json"


def dump_key(dump: DumpFile) -> str:
    """Identifies the dump file: its path, size and modification time."""
    st = dump.path.stat()
    ident = json.dumps([str(dump.path.resolve()), st.st_size, st.st_mtime_ns])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def work_key(dump: DumpFile, spec: ExtractSpec, shard_bytes: int) -> str:
    ident = json.dumps([dump_key(dump), spec.key(), shard_bytes])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


class WorkDir:
    def __init__(self, root: str | os.PathLike, dump: DumpFile, spec: ExtractSpec,
                 shard_bytes: int):
        self.root = Path(root)
        self.path = self.root / f"{dump.path.name}.{work_key(dump, spec, shard_bytes)}"
        self.shards = self.path / "shards"
        self._lock = None

    def __enter__(self) -> "WorkDir":
        self.shards.mkdir(parents=True, exist_ok=True)
        marker = self.path / MARKER
        if not marker.exists():
            marker.write_text(json.dumps({"owner": "factprobe", "what": "wikidata-dump shards"}))
        self._lock = open(self.path / "lock", "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise UserError(f"another factprobe command is reading this dump into {self.path}; "
                            f"wait for it to finish") from None
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def remove(self) -> None:
        """Delete the folder (only if factprobe made it)."""
        if (self.path / MARKER).is_file():
            if self._lock is not None:
                self._lock.close()
                self._lock = None
            shutil.rmtree(self.path, ignore_errors=True)

    def _file(self, shard: int, name: str) -> Path:
        return self.shards / f"{shard:06d}.{name}.parquet"

    def done(self, shard: int) -> PieceStats | None:
        marker = self.shards / f"{shard:06d}.done.json"
        if not marker.is_file():
            return None
        try:
            return PieceStats.from_dict(jsonsafe.loads(marker.read_text()))
        except (ValueError, KeyError, TypeError):
            return None      # a damaged marker: read the shard again

    def finished(self) -> int:
        return len(list(self.shards.glob("*.done.json")))

    def writer(self, shard: int) -> "ShardWriter":
        return ShardWriter(self, shard)

    def write(self, shard: int, piece: Piece) -> None:
        writer = self.writer(shard)
        writer.add(piece)
        writer.close()

    def files(self, name: str, shards: int) -> list[str]:
        return [str(self._file(k, name)) for k in range(shards)]

    def read(self, shard: int, name: str):
        return pq.read_table(self._file(shard, name))


class ShardWriter:
    """Writes a shard batch by batch (one row group per batch), so a shard's rows never have
    to be in memory at once; the files get their names and the shard its marker on close."""

    def __init__(self, work: WorkDir, shard: int):
        self.work, self.shard = work, shard
        self.stats = PieceStats()
        self.paths = {name: work._file(shard, name) for name in TABLES}
        # The same writer options as factprobe.core.tables.write_parquet, for the same reasons.
        self.writers = {name: pq.ParquetWriter(
            path.with_name(path.name + ".partial"), schema, compression="zstd",
            compression_level=3, use_dictionary=True, write_statistics=True, version="2.6")
            for (name, schema), path in zip(TABLES.items(), self.paths.values())}

    def add(self, piece: Piece) -> None:
        for name, table in piece.tables.items():
            if table.num_rows:
                self.writers[name].write_table(table)
        self.stats.add(piece.stats)

    def close(self) -> PieceStats:
        for name, writer in self.writers.items():
            writer.close()
            path = self.paths[name]
            os.replace(path.with_name(path.name + ".partial"), path)
        marker = self.work.shards / f"{self.shard:06d}.done.json"
        atomic.write_text(marker, json.dumps(self.stats.as_dict()),
                          tmp=marker.with_name(marker.name + ".partial"))
        return self.stats

    def abandon(self) -> None:
        for writer in self.writers.values():
            writer.close()
