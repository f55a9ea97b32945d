"""The flags only the wikidata-dump source reads (``build facts`` and ``build nobel``): how a
dump is read, never what is read from it. The source's flags module (see
builders/sources/graph_flags.py for what one gives)."""
from __future__ import annotations

import argparse
from pathlib import Path

from factprobe.core.argtypes import count, positive
from factprobe.builders.sources.wikidata_dump.options import DECOMPRESSORS, EXECUTORS, MB, DumpOptions

NAME = "wikidata-dump"
OPTIONS = DumpOptions


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("wikidata-dump (see docs/sources.md)")
    g.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="where shards are read: this machine, or a Ray cluster (local)")
    g.add_argument("--ray-address", help="Ray cluster address (default: start Ray here); "
                   "every node needs the dump at the same --path")
    g.add_argument("--workers", type=count,
                   help="parser processes beside the decompressor (default: one per 4 cores, "
                        "none below 4)")
    g.add_argument("--threads", type=positive,
                   help="decompression threads (default: the cores no other process keeps "
                        "busy, measured at start)")
    g.add_argument("--shard-mb", type=positive, default=1024,
                   help="decompressed MB per shard, the unit a killed run resumes from (1024)")
    g.add_argument("--decompressor", choices=DECOMPRESSORS, default="auto",
                   help="auto: indexed_bzip2 / rapidgzip; or the lbzip2 / pigz program")
    g.add_argument("--memory-limit", help="DuckDB's memory for the join, e.g. 4GB (default: "
                   "half the memory, at most 8GB, and 256MB while build facts assembles the "
                   "facts, 64MB for their final sort; it spills to disk beyond)")


def read_flags(args: argparse.Namespace) -> DumpOptions:
    from factprobe.core.cache import default_cache_dir
    # the scratch folder sits in the response cache (--cache-dir, a network flag every build
    # shares) unless told otherwise
    cache_dir = getattr(args, "cache_dir", None) or str(default_cache_dir())
    batch = min(8, args.shard_mb)
    while args.shard_mb % batch:
        batch -= 1
    return DumpOptions(executor=args.executor, ray_address=args.ray_address,
                       workers=args.workers, threads=args.threads,
                       shard_bytes=args.shard_mb * MB, batch_bytes=batch * MB,
                       decompressor=args.decompressor,
                       work_root=str(Path(cache_dir) / "wikidata-dump"),
                       memory_limit=args.memory_limit)
