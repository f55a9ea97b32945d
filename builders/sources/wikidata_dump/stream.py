"""Opening a dump: which format it is, decompressing it on several threads, and cutting the
decompressed bytes into batches of whole lines that any reader process can take.

Decompression is the cost of reading a dump, so it runs on several threads: ``indexed_bzip2``
for bzip2 and ``rapidgzip`` for gzip (both from PyPI, both parallel, both seekable through an
index of their block offsets), or the ``lbzip2`` / ``pigz`` programs when asked for and present.

Batches and shards are defined on offsets in the decompressed text, so they are the same
whoever reads them: window ``w`` holds the lines that *start* in bytes ``[w*B, (w+1)*B)``, and
shard ``k`` the windows ``[k*S/B, (k+1)*S/B)``. A reader that seeks to a shard (a Ray task)
therefore cuts exactly the batches that the sequential reader cuts.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from factprobe.core import atomic
from factprobe.core import jsonsafe
from factprobe.core.errors import UserError

MAGIC = {b"BZh": "bz2", b"\x1f\x8b": "gzip"}
READ_SIZE = 4 << 20
# The longest entity line of a real dump is a few MB (the JSON of the items with the most
# statements); a longer one is a damaged or hostile file, read no further than this.
MAX_LINE_BYTES = 64 << 20
_TOOLS = {"lbzip2": "bz2", "pigz": "gzip"}


@dataclass(frozen=True)
class DumpFile:
    path: Path
    compression: str       # bz2 | gzip | none
    syntax: str            # json | nt

    def describe(self) -> dict:
        return {"format": {"json": "Wikidata JSON dump", "nt": "truthy N-Triples dump"}[
            self.syntax], "compression": self.compression}


def detect(path: str | os.PathLike) -> DumpFile:
    """Tell the compression from the first bytes and the syntax from the first decompressed
    ones: ``[`` opens the JSON dump, ``<`` (or ``#``) the N-Triples dump."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"dump {path} not found; pass --path latest-all.json.bz2 (or .json.gz, "
                        f"or a truthy .nt.bz2 / .nt.gz)")
    with open(p, "rb") as fh:
        magic = fh.read(3)
    compression = next((c for m, c in MAGIC.items() if magic.startswith(m)), "none")
    dump = DumpFile(p, compression, "json")
    try:
        with open_stream(dump, threads=1) as stream:
            head = stream.read(1 << 16)
    except UserError:
        raise
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return dump
    if text.startswith((b"<", b"#", b"_:")):
        return DumpFile(p, compression, "nt")
    shown = text[:40].decode("utf-8", "replace")
    raise UserError(f"{p} is neither a Wikidata JSON dump (a JSON array, one entity a line) nor "
                    f"an N-Triples dump; it starts with {shown!r}. Pass latest-all.json.bz2 or "
                    f"latest-truthy.nt.bz2 (bz2, gz or uncompressed)")


def is_dump_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a compressed file or a JSON array: a dump for the dump reader, not
    an RDF file for the in-process graph (a plain ``.nt`` file is read as RDF)."""
    try:
        with open(Path(path).expanduser(), "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.startswith(tuple(MAGIC)) or head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"["


class _Reader:
    """A decompressed stream whose read errors become one clear :class:`UserError`."""

    def __init__(self, raw, dump: DumpFile, proc: subprocess.Popen | None = None,
                 from_start: bool = True):
        self.raw, self.dump, self.proc = raw, dump, proc
        self.consumed = 0
        self.from_start = from_start
        self.checked = False

    def read(self, n: int) -> bytes:
        try:
            data = self.raw.read(n)
        except (RuntimeError, ValueError, OSError, EOFError) as exc:
            raise damaged(self.dump, exc) from None
        self.consumed += len(data)
        if not data and self.proc is not None:
            err = self.proc.stderr.read().decode("utf-8", "replace").strip()
            if self.proc.wait() != 0:
                raise damaged(self.dump, err.splitlines()[-1] if err else "decompressor failed")
        if not data and n and self.dump.compression == "gzip" and self.from_start \
                and self.proc is None and not self.checked:
            self.checked = True
            check_gzip_end(self.dump, self.consumed)
        return data

    def compressed_position(self) -> int:
        """Bytes of the compressed file read so far (for progress)."""
        if self.dump.compression == "none":
            return self.consumed
        tell = getattr(self.raw, "tell_compressed", None)
        return tell() // 8 if tell else 0


def check_gzip_end(dump: DumpFile, size: int) -> None:
    """Raise if a gzip file ended early. rapidgzip reports damage inside a large file, but
    reads a small truncated one as empty (rapidgzip 0.16), so the end is checked here: a gzip
    file ends with its (last member's) length modulo 2**32. When that differs, the file may
    still be whole (several members, each with its own length), so Python's own gzip reader,
    which raises on a missing end, decides; only multi-member files pay for that pass."""
    import gzip
    import zlib
    with open(dump.path, "rb") as fh:
        tail = fh.read() if dump.path.stat().st_size < 4 else (fh.seek(-4, os.SEEK_END),
                                                                 fh.read(4))[1]
    if len(tail) == 4 and int.from_bytes(tail, "little") == size % (1 << 32):
        return
    try:
        with gzip.open(dump.path, "rb") as fh:
            while fh.read(READ_SIZE):
                pass
    except (EOFError, OSError, zlib.error) as exc:
        raise damaged(dump, exc) from None


def damaged(dump: DumpFile, exc) -> UserError:
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    # indexed_bzip2 reports a cut-off archive as a bare "std::exception": no detail to add.
    detail = "" if detail in ("", "std::exception") else f" ({detail})"
    return UserError(f"{dump.path}: cannot decompress it{detail}; the {dump.compression} "
                     f"archive is truncated or damaged: download it again")


@contextlib.contextmanager
def open_stream(dump: DumpFile, threads: int, decompressor: str = "auto",
                index: str | None = None) -> Iterator[_Reader]:
    """The decompressed bytes of ``dump``. ``index``: a block-offset index written by
    :func:`build_index`, which makes the stream seekable without reading it first."""
    threads = max(1, threads)
    if decompressor != "auto" and dump.compression != "none":
        if _TOOLS.get(decompressor) != dump.compression:
            raise UserError(f"--decompressor {decompressor} cannot read a {dump.compression} "
                            f"file; use auto")
        exe = shutil.which(decompressor)
        if exe is None:
            raise UserError(f"--decompressor {decompressor}: the program is not installed; "
                            f"install it or use --decompressor auto")
        proc = subprocess.Popen([exe, "-d", "-c", "-n" if decompressor == "lbzip2" else "-p",
                                 str(threads), str(dump.path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=READ_SIZE)
        try:
            yield _Reader(proc.stdout, dump, proc)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        return
    try:
        if dump.compression == "bz2":
            import indexed_bzip2
            raw = indexed_bzip2.open(str(dump.path), parallelization=threads)
            if index:
                raw.set_block_offsets(_load_bz2_index(index))
        elif dump.compression == "gzip":
            import rapidgzip
            raw = rapidgzip.open(str(dump.path), parallelization=threads)
            if index:
                raw.import_index(index)
        else:
            raw = open(dump.path, "rb")
    except (RuntimeError, ValueError, OSError) as exc:
        raise damaged(dump, exc) from None
    try:
        yield _Reader(raw, dump, from_start=index is None)
    finally:
        # rapidgzip's threads must be joined before the interpreter exits (it aborts otherwise).
        raw.close()


def _load_bz2_index(path: str) -> dict[int, int]:
    return {int(k): v for k, v in jsonsafe.loads(Path(path).read_text()).items()}


def build_index(dump: DumpFile, threads: int, target: Path) -> int:
    """Read the whole dump once on ``threads`` threads and keep the offsets of its compressed
    blocks in ``target``; return the decompressed size. Seeking later costs one block."""
    import json
    if dump.compression == "none":
        return dump.path.stat().st_size
    with open_stream(dump, threads) as stream:
        while stream.read(READ_SIZE):
            pass
        raw = stream.raw
        size = raw.tell()
        with atomic.replacing(target, tmp=target.with_name(target.name + ".partial")) as tmp:
            if dump.compression == "bz2":
                tmp.write_text(json.dumps({str(k): v for k, v in raw.block_offsets().items()}))
            else:
                raw.export_index(str(tmp))
    return size


@dataclass
class Batch:
    window: int            # the batch window its first line starts in
    start: int             # decompressed offset of its first byte
    first_line: int        # line number of its first line (1-based, relative to the reader)
    data: bytes            # whole lines


def batches(stream: _Reader, batch_bytes: int, start: int = 0, stop: int | None = None
            ) -> Iterator[Batch]:
    """Cut ``stream`` (positioned at offset ``start``, a line start) into batches; stop before
    the first batch starting at or after ``stop``."""
    buf = b""
    line = 1
    eof = False
    while True:
        if stop is not None and start >= stop:
            return
        boundary = (start // batch_bytes + 1) * batch_bytes
        idx = -1
        while True:
            if len(buf) >= boundary - start:
                idx = buf.find(b"\n", boundary - 1 - start)
            if idx >= 0 or eof:
                break
            if len(buf) - max(0, buf.rfind(b"\n")) > MAX_LINE_BYTES:
                raise line_too_long(stream.dump, line + buf.count(b"\n"))
            chunk = stream.read(READ_SIZE)
            if chunk:
                buf += chunk
            else:
                eof = True
        cut = idx + 1 if idx >= 0 else len(buf)
        if cut == 0:
            return
        data, buf = buf[:cut], buf[cut:]
        yield Batch(start // batch_bytes, start, line, data)
        line += data.count(b"\n")
        start += cut


def line_too_long(dump: DumpFile, line: int) -> UserError:
    return UserError(f"{dump.path}: line {line} is longer than {MAX_LINE_BYTES >> 20} MB "
                     f"(an entity line of a real dump is at most a few MB): the file is damaged "
                     f"or not a Wikidata dump; download it again")


def seek_line_start(stream: _Reader, offset: int) -> int:
    """Position ``stream`` at the first line start at or after ``offset``; return it."""
    if offset == 0:
        stream.raw.seek(0)
        return 0
    stream.raw.seek(offset - 1)
    pos = offset - 1
    while True:
        chunk = stream.read(1 << 16)
        if not chunk:
            return pos
        idx = chunk.find(b"\n")
        if idx >= 0:
            pos += idx + 1
            stream.raw.seek(pos)
            return pos
        pos += len(chunk)
