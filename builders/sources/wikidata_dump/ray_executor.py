"""The Ray executor: shards read in parallel across a cluster, each by seeking into the dump.

A compressed dump cannot be entered in the middle without knowing where its blocks start, so
the first run reads it once on this machine (on every core) to index its blocks (bzip2 block
offsets from indexed_bzip2, a seek-point index from rapidgzip); the index is kept in the cache
folder for every later build from the same file. Each Ray task then opens the dump at the same path, seeks to its shard's first line and
cuts the same batches the local executor cuts, so shards are identical whichever executor wrote
them. Tasks return their tables to the driver, which writes the shards: only the dump has to be
on every node (a shared filesystem or a copy at the same path), not the scratch folder.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

from tqdm import tqdm

from factprobe.core import jsonsafe
from factprobe.core.cpus import import_ray, ray_worker_env
from factprobe.core.errors import UserError
from factprobe.builders.sources.wikidata_dump.extract import extract
from factprobe.builders.sources.wikidata_dump.local import line_error
from factprobe.builders.sources.wikidata_dump.rows import DumpLineError, PieceStats
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.stream import (
    DumpFile,
    batches,
    build_index,
    open_stream,
    seek_line_start,
)
from factprobe.builders.sources.wikidata_dump.workdir import WorkDir, dump_key


def read_shard(dump: DumpFile, spec: ExtractSpec, index: bytes | None, shard: int,
               shard_bytes: int, batch_bytes: int):
    """Read one shard of the dump: ``("ok", [one piece per batch])``, or ``("bad", line within
    the shard, reason)``, or ``("damaged", message)``. A pure function of its arguments."""
    index_path = None
    try:
        if index is not None:
            fd, index_path = tempfile.mkstemp(prefix="factprobe-index-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(index)
        with open_stream(dump, threads=1, index=index_path) as stream:
            start = seek_line_start(stream, shard * shard_bytes)
            pieces = []
            for batch in batches(stream, batch_bytes, start=start,
                                 stop=(shard + 1) * shard_bytes):
                try:
                    pieces.append(extract(spec, batch.data))
                except DumpLineError as exc:
                    return ("bad", batch.first_line + exc.line - 1, exc.reason)
        return ("ok", pieces)
    except UserError as exc:
        return ("damaged", str(exc))
    finally:
        if index_path:
            os.unlink(index_path)


def read_ray(dump: DumpFile, spec: ExtractSpec, work: WorkDir, *, shard_bytes: int,
             batch_bytes: int, address: str | None, threads: int, progress: bool
             ) -> tuple[PieceStats, int]:
    ray = import_ray()
    # The index depends on the dump file only, so builds that read other relations of the same
    # dump share it; it stays beside the scratch folders like a cache entry.
    stem = work.root / "index" / f"{dump.path.name}.{dump_key(dump)}"
    index_file = stem.with_name(stem.name + (".json" if dump.compression == "bz2" else ".gzi"))
    size_file = stem.with_name(stem.name + ".size.json")
    if not size_file.is_file():
        stem.parent.mkdir(parents=True, exist_ok=True)
        if progress:
            print(f"indexing {dump.path.name} (one pass on {threads} threads)...",
                  file=sys.stderr, flush=True)
        size = build_index(dump, threads, index_file)
        size_file.write_text(json.dumps({"size": size}))
    size = jsonsafe.loads(size_file.read_text())["size"]
    index = index_file.read_bytes() if dump.compression != "none" else None
    shards = max(1, -(-size // shard_bytes))

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        # at its node's niceness, not 15 nicer (core.cpus.ray_worker_env says why)
        remote = ray.remote(num_cpus=1, runtime_env={"env_vars": ray_worker_env()})(read_shard)
        index_ref = ray.put(index)
        todo = {remote.remote(dump, spec, index_ref, k, shard_bytes, batch_bytes): k
                for k in range(shards) if work.done(k) is None}
        failures: dict[int, tuple] = {}
        with tqdm(total=shards, initial=shards - len(todo), unit="shard",
                  desc=f"reading {dump.path.name} on Ray", disable=not progress) as bar:
            while todo:
                ready, _ = ray.wait(list(todo), num_returns=1)
                k = todo.pop(ready[0])
                result = ray.get(ready[0])
                if result[0] == "ok":
                    writer = work.writer(k)
                    for piece in result[1]:
                        writer.add(piece)
                    writer.close()
                else:
                    failures[k] = result
                    # Earlier shards may still be running: their line counts name the line.
                    for ref, j in list(todo.items()):
                        if j > k:
                            ray.cancel(ref)
                            del todo[ref]
                bar.update(1)
        if failures:
            k = min(failures)
            result = failures[k]
            if result[0] == "damaged":
                raise UserError(result[1])
            before = sum(work.done(j).lines for j in range(k))
            raise line_error(dump, before + result[1], result[2])
    finally:
        if started_here:
            ray.shutdown()
    totals = PieceStats()
    for k in range(shards):
        totals.add(work.done(k))
    return totals, shards
