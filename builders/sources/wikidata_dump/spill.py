"""The row groups of a dump's ``facts.parquet`` held on disk, not in memory (issue 30).

pyarrow writes a row group from one ``write_table`` call, and only a table whose every column
is one array gives the bytes of the in-memory writer (a table in several chunks cuts the
writer's internal batches, hence its pages and its dictionary fallback, elsewhere: measured on
the 25k dense dump, chunks of 16Ki rows changed ``fact_id`` and ``subject_aliases``). So a
row group must be handed over whole; here it is handed over *from disk*:

1. each batch of assembled rows is appended to an Arrow IPC file in the work folder (``add``);
2. when a row group is complete, each column in turn is read back from that file and written,
   as one contiguous array, to a file of its own (only one column is in memory at a time);
3. the table given to the writer is those column files, memory-mapped: the writer encodes one
   column after the other, and each time it writes to the output, the pages of the mapped
   columns it has read are dropped from this process (``madvise(MADV_DONTNEED)``: they stay in
   the kernel's page cache, which the kernel may evict; reading them again reads the file).

The process then holds about one column of a row group, where it held the whole row group
(125 MB at 100k dense entities, up to 1Mi facts, about 240 MB, beyond). Linux and macOS only
(``mmap.madvise``), as the dump reader's locking already is.
"""
from __future__ import annotations

import io
import mmap
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def _release_arrow() -> None:
    # Arrow's allocator keeps freed pages for reuse; a column's copy is not reused by the next
    pa.default_memory_pool().release_unused()


class _Mapped:
    """One Arrow IPC file, memory-mapped read-only; its arrays point into the mapping."""

    def __init__(self, path: Path):
        self.path = path
        with open(path, "rb") as fh:
            self.map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.reader = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(self.map)))

    def drop_pages(self) -> None:
        """Unmap the pages read so far from this process (the data stay on disk)."""
        if MADV_DONTNEED is not None and not self.map.closed:
            self.map.madvise(MADV_DONTNEED)

    def close(self) -> None:
        self.reader = None
        try:
            self.map.close()
        except BufferError:  # an array still points into it: the mapping goes with it
            pass


class SpilledGroups:
    """Rows of ``schema`` appended batch by batch to ``folder``, handed back as row groups of
    ``group_rows`` rows whose columns are each one array mapped from disk."""

    def __init__(self, folder: Path, schema: pa.Schema, group_rows: int):
        self.folder, self.schema, self.group_rows = Path(folder), schema, group_rows
        self.folder.mkdir(parents=True, exist_ok=True)
        # what a killed build left: the folder is inside the build's own work folder
        for stale in (*self.folder.glob("rows-*.arrow"), *self.folder.glob("col*-*.arrow")):
            stale.unlink()
        self.rows = 0
        self._n = 0
        self._writer = None
        self._mapped: list[_Mapped] = []

    def _path(self, stem: str) -> Path:
        self._n += 1
        return self.folder / f"{stem}-{self._n}.arrow"

    def add(self, table: pa.Table) -> None:
        if self._writer is None:
            self._spill = self._path("rows")
            self._writer = pa.ipc.new_file(self._spill, self.schema)
        for batch in table.to_batches():
            self._writer.write_batch(batch)
        self.rows += table.num_rows

    def full(self) -> bool:
        return self.rows >= self.group_rows

    def take(self) -> pa.Table:
        """The next row group (the first ``group_rows`` rows, or all that are left), mapped;
        the rows after it are spilled again. The previous group's mappings are closed."""
        self.close_group()
        self._writer.close()
        self._writer = None
        rows = _Mapped(self._spill)
        n = min(self.rows, self.group_rows)
        columns, rest = [], []
        for i, field in enumerate(self.schema):
            chunks = [rows.reader.get_batch(b).column(i)
                      for b in range(rows.reader.num_record_batches)]
            whole = pa.concat_arrays(chunks) if chunks else pa.array([], field.type)
            del chunks
            path = self._path(f"col{i}")
            one = pa.schema([field])
            with pa.ipc.new_file(path, one) as out:
                out.write_batch(pa.record_batch([whole.slice(0, n)], schema=one))
            if len(whole) > n:
                rest.append(pa.concat_arrays([whole.slice(n)]))  # a copy: the map is closed
            del whole
            rows.drop_pages()
            _release_arrow()
            columns.append(path)
        rows.close()
        rows.path.unlink()
        self.rows = 0  # what is left is added again
        if rest:
            self.add(pa.Table.from_arrays(rest, schema=self.schema))
        del rest
        arrays = []
        for path in columns:
            col = _Mapped(path)
            self._mapped.append(col)
            arrays.append(col.reader.get_batch(0).column(0))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def drop_pages(self) -> None:
        for col in self._mapped:
            col.drop_pages()

    def close_group(self) -> None:
        for col in self._mapped:
            col.close()
            col.path.unlink(missing_ok=True)
        self._mapped = []

    def close(self) -> None:
        """Remove every file of this spill (rows not taken included)."""
        self.close_group()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._spill.unlink(missing_ok=True)


class PageDroppingFile(io.FileIO):
    """The output file, which calls ``on_write`` after each write: the Parquet writer writes a
    column chunk once it has encoded it, so the mapped pages read for it can go."""

    def __init__(self, path: Path, on_write: Callable[[], None]):
        super().__init__(path, "wb")
        self._on_write = on_write

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):  # a raw write may write less than asked
            done += super().write(view[done:])
        self._on_write()
        return done


def row_groups_from_disk(batches: Iterator[pa.Table], spill: SpilledGroups
                         ) -> Iterator[pa.Table]:
    """Row groups of ``spill.group_rows`` rows of ``batches``, each mapped from disk; a group
    stays mapped until the next one is asked for."""
    try:
        for table in batches:
            spill.add(table)
            while spill.full():
                yield spill.take()
        if spill.rows:
            yield spill.take()
    finally:
        spill.close()
