"""How to read a dump (executor, parallelism, shard sizes), as one typed value read at the edge.

What is read from it is an :class:`~.spec.ExtractSpec`; none of these options changes a byte of
the datasets built, only how fast and where they are built.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

MB = 1 << 20
EXECUTORS = ("local", "ray")
DECOMPRESSORS = ("auto", "lbzip2", "pigz")


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


@dataclass(frozen=True)
class DumpOptions:
    executor: str = "local"              # local | ray
    ray_address: str | None = None       # None: a Ray started on this machine
    workers: int | None = None           # parser processes; None: see parser_workers
    threads: int | None = None           # decompression threads; None: see decompress_threads
    shard_bytes: int = 1024 * MB         # decompressed bytes per shard (the unit of resume)
    batch_bytes: int = 8 * MB            # decompressed bytes handed to a parser at a time
    decompressor: str = "auto"           # auto (indexed_bzip2 / rapidgzip) | lbzip2 | pigz
    work_root: str | None = None         # scratch folder's parent; None: the cache folder
    memory_limit: str | None = None      # DuckDB's; None: half the memory, at most 8 GB

    def params(self) -> dict:
        """What a dataset's manifest records of these options: nothing, none changes a byte."""
        return {}

    def decompress_threads(self) -> int:
        """Every free core by default: indexed_bzip2 and rapidgzip decode ahead on their own
        threads while the main process parses. A core another process keeps busy is left out
        (factprobe.core.cpus): a decoder thread that waits for it wastes more than it decodes
        (docs/benchmarks.md has figures for both)."""
        if self.threads:
            return self.threads
        from factprobe.core.cpus import choose_threads
        # decoder threads change no byte of the output, so they may follow the load
        return choose_threads("auto").threads

    def parser_workers(self) -> int:
        if self.workers is not None:
            return self.workers
        n = cores()
        # Parsing costs about a tenth of bzip2 decompression (docs/benchmarks.md): below four
        # cores the main process keeps up while the decompressor's threads use the cores.
        return 0 if n < 4 else max(1, n // 4)
