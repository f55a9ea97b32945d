"""The local executor: one pass over the dump, decompressed on several threads, batches parsed
in worker processes (or in this one), results gathered in file order into shards.

Memory stays flat whatever the dump's size: at most ``2 x workers`` batches are in flight, and
each batch's rows go to its shard's files as soon as they are in (one row group a batch).
"""
from __future__ import annotations

import multiprocessing
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor

from tqdm import tqdm

from factprobe.core.errors import UserError
from factprobe.builders.sources.wikidata_dump.extract import extract
from factprobe.builders.sources.wikidata_dump.rows import DumpLineError, PieceStats, concat_pieces
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.stream import DumpFile, batches, open_stream
from factprobe.builders.sources.wikidata_dump.workdir import ShardWriter, WorkDir


def line_error(dump: DumpFile, line: int, reason: str) -> UserError:
    return UserError(f"{dump.path}: line {line}: {reason}; download the dump again, or pass "
                     f"--skip-bad to skip and count such lines")


class _Gather:
    """Takes batch results in file order into the shard they belong to; a shard is closed
    (renamed and marked done) when the first batch of the next one arrives."""

    def __init__(self, work: WorkDir, dump: DumpFile):
        self.work, self.dump = work, dump
        self.shard: int | None = None
        self.writer: ShardWriter | None = None
        self.skipped: PieceStats | None = None
        self.totals = PieceStats()
        self.shards = 0

    def take(self, shard: int, first_line: int, result) -> None:
        if shard != self.shard:
            self.flush()
            self.shard = shard
            self.skipped = self.work.done(shard)
            if self.skipped is None:
                self.writer = self.work.writer(shard)
        if self.skipped is not None:
            return
        try:
            piece = result.result() if isinstance(result, Future) else result()
        except DumpLineError as exc:
            raise line_error(self.dump, first_line + exc.line - 1, exc.reason) from None
        self.writer.add(piece)

    def flush(self) -> None:
        if self.shard is None:
            return
        # Shards no batch started in (one line longer than a shard) are written empty.
        for k in range(self.shards, self.shard):
            if self.work.done(k) is None:
                self.work.write(k, concat_pieces([]))
        if self.skipped is not None:
            self.totals.add(self.skipped)
        else:
            self.totals.add(self.writer.close())
        self.shards = self.shard + 1
        self.shard, self.writer = None, None

    def abandon(self) -> None:
        if self.writer is not None:
            self.writer.abandon()


def read_local(dump: DumpFile, spec: ExtractSpec, work: WorkDir, *, shard_bytes: int,
               batch_bytes: int, workers: int, threads: int, decompressor: str,
               progress: bool) -> tuple[PieceStats, int]:
    """Read the whole dump into ``work``'s shards; return the totals and the shard count."""
    per_shard = shard_bytes // batch_bytes
    pool = None
    if workers > 0:
        # spawn, not fork: the decompressor's threads are running by the time workers start.
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    gather = _Gather(work, dump)
    pending: deque = deque()
    limit = max(1, 2 * workers)
    size = dump.path.stat().st_size
    try:
        with open_stream(dump, threads, decompressor) as stream, \
                tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {dump.path.name}",
                     disable=not progress) as bar:
            for batch in batches(stream, batch_bytes):
                shard = batch.window // per_shard
                if gather.work.done(shard) is not None:
                    result = None
                elif pool is not None:
                    result = pool.submit(extract, spec, batch.data)
                else:
                    result = (lambda data=batch.data: extract(spec, data))
                pending.append((shard, batch.first_line, result))
                while len(pending) > limit:
                    gather.take(*pending.popleft())
                bar.update(min(size, stream.compressed_position()) - bar.n)
            while pending:
                gather.take(*pending.popleft())
            gather.flush()
            bar.update(size - bar.n)
    finally:
        gather.abandon()   # a shard left open by an error stays unmarked: read again next time
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if gather.shards == 0:
        work.write(0, concat_pieces([]))
        gather.shards = 1
    return gather.totals, gather.shards
