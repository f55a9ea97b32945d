"""One file replaced in one rename: a reader (or a resumed run) sees the old file or the whole
new one, never a torn write, and a failed or killed write leaves nothing of itself behind.

Folders are swapped by :mod:`factprobe.core.swap`; this is the same idea for a single file,
used by every writer of a file that another run may read (caches, checkpoints, markers, init's
files, the template review).
"""
from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: str | os.PathLike, tmp: str | os.PathLike | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; on a clean exit it is renamed over
    ``path``, on any exception (a full disk, a kill's KeyboardInterrupt) it is removed.

    ``tmp`` names the temporary file where a reader must recognise it (a checkpoint folder
    that tells a stray ``.tmp`` chunk from a finished one); by default it is a fresh
    ``.NAME.tmp-XXXX`` that no concurrent writer shares.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with replacing(d / "a.json") as t:
    ...     _ = t.write_text("{}")
    >>> sorted(p.name for p in d.iterdir()), (d / "a.json").read_text()
    (['a.json'], '{}')
    >>> try:
    ...     with replacing(d / "a.json") as t:
    ...         _ = t.write_text("{half")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> sorted(p.name for p in d.iterdir()), (d / "a.json").read_text()
    (['a.json'], '{}')
    """
    path = Path(path)
    # not mkstemp: its file is private (0600), and the file renamed into place must get the
    # permissions any other file of the user's gets (init's dvc.yaml, a review CSV)
    tmp = Path(tmp) if tmp is not None else \
        path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str, tmp: str | os.PathLike | None = None,
               newline: str | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` in one rename (:func:`replacing`)."""
    with replacing(path, tmp) as t:
        with open(t, "w", encoding="utf-8", newline=newline) as fh:
            fh.write(text)
    return Path(path)
