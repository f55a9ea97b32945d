"""One dump read, start to end: detect the file, extract it into shards with the chosen
executor, hand the shards to the caller's join, and clean up.

The scratch shards are removed once the caller has written its dataset, and on a user error
(a bad dump: nothing to resume). A kill or a crash leaves them, so that the same command,
run again, reuses every finished shard.
"""
from __future__ import annotations

import contextlib
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256
from factprobe.builders.sources.wikidata_dump.join import check_memory_limit
from factprobe.builders.sources.wikidata_dump.options import DECOMPRESSORS, EXECUTORS, DumpOptions
from factprobe.builders.sources.wikidata_dump.rows import PieceStats
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.stream import DumpFile
from factprobe.builders.sources.wikidata_dump.workdir import WorkDir

_DATED_NAME = re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)")


@dataclass
class Extraction:
    dump: DumpFile
    work: WorkDir
    shards: int
    stats: PieceStats
    sha256: str

    def files(self, name: str) -> list[str]:
        return self.work.files(name, self.shards)

    def provenance(self) -> dict:
        st = self.stats
        return {"type": "wikidata-dump", "path": str(self.dump.path), "sha256": self.sha256,
                **self.dump.describe(), "dump_date": dump_date(self.dump.path, st.modified),
                "latest_modified": st.modified or None, "lines": st.lines,
                "entities": st.entities, "retrieved": []}


def dump_date(path: Path, modified: str) -> str | None:
    """The dump's date: from a dated file name (``wikidata-20240101-all.json.bz2``), else the
    day of the latest edit in it (``modified`` of JSON entities), else unknown.

    >>> dump_date(Path("wikidata-20240101-all.json.bz2"), "2023-12-31T23:59:59Z")
    '2024-01-01'
    >>> dump_date(Path("latest-all.json.bz2"), "2023-12-31T23:59:59Z")
    '2023-12-31'
    """
    m = _DATED_NAME.search(path.name)
    if m:
        return f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    return modified[:10] if modified else None


def _check(opts: DumpOptions) -> None:
    if opts.executor not in EXECUTORS:
        raise UserError(f"--executor {opts.executor!r}: choose local or ray")
    if opts.decompressor not in DECOMPRESSORS:
        raise UserError(f"--decompressor {opts.decompressor!r}: choose one of "
                        f"{', '.join(DECOMPRESSORS)}")
    check_memory_limit(opts.memory_limit)
    if (opts.batch_bytes < 1 or opts.shard_bytes < opts.batch_bytes
            or opts.shard_bytes % opts.batch_bytes):
        raise UserError(f"the shard size ({opts.shard_bytes >> 20} MB) must be a multiple of "
                        f"the batch size ({opts.batch_bytes >> 20} MB)")


def work_root(opts: DumpOptions) -> Path:
    if opts.work_root:
        return Path(opts.work_root)
    from factprobe.core.cache import default_cache_dir
    return default_cache_dir() / "wikidata-dump"


@contextlib.contextmanager
def extracted(dump: DumpFile, spec: ExtractSpec, opts: DumpOptions, progress: bool = True
              ) -> Iterator[Extraction]:
    """Extract ``spec`` from the dump into shards; yield them for the caller's join."""
    _check(opts)
    hashed: dict[str, str] = {}
    # The input's hash goes into the manifest; it is read beside the decompressor, which
    # spends far longer on the same bytes.
    hasher = threading.Thread(target=lambda: hashed.setdefault("sha256", file_sha256(dump.path)),
                              daemon=True)
    hasher.start()
    shard_bytes, batch_bytes = opts.shard_bytes, opts.batch_bytes
    work = WorkDir(work_root(opts), dump, spec, shard_bytes)
    with work:
        try:
            reused = work.finished()
            if reused:  # said even without progress bars, as eval's "starting over" is
                print(f"resuming: {reused} finished shard(s) of an interrupted run are reused "
                      f"from {work.path}", file=sys.stderr, flush=True)
            threads = opts.decompress_threads()
            if opts.executor == "ray":
                from factprobe.builders.sources.wikidata_dump.ray_executor import read_ray
                stats, shards = read_ray(dump, spec, work, shard_bytes=shard_bytes,
                                         batch_bytes=batch_bytes, address=opts.ray_address,
                                         threads=threads, progress=progress)
            else:
                from factprobe.builders.sources.wikidata_dump.local import read_local
                stats, shards = read_local(dump, spec, work, shard_bytes=shard_bytes,
                                           batch_bytes=batch_bytes,
                                           workers=opts.parser_workers(), threads=threads,
                                           decompressor=opts.decompressor, progress=progress)
            if dump.syntax == "json" and not stats.closed:
                raise UserError(f"{dump.path}: the JSON dump ends before its closing ']' "
                                f"(line {stats.lines}); the file is truncated: download it "
                                f"again")
            hasher.join()
            yield Extraction(dump, work, shards, stats, hashed.get("sha256", ""))
        except UserError:
            work.remove()
            raise
    work.remove()
