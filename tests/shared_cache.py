"""Session artefacts built once for all pytest-xdist workers: a session-scoped fixture runs in
every worker that needs it, so a planted model (25 CPU-s) was trained once per worker, the
same bytes each time. Here the first worker builds it under a lock in the run's own temporary
folder (the parent of every worker's, which pytest removes with its old runs; never the
repository) and the others wait and read the same folder.

The folder's name holds a digest of every input the build reads (its arguments and the files
it is given), so two builds that differ in any input never share one. A build that fails
leaves no marker: the next worker to need it builds it again, and fails the same way."""
from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from filelock import FileLock


def digest(*parts: object, files: Iterable[Path] = ()) -> str:
    """A digest of ``parts`` (their repr) and of the paths and bytes of ``files`` (folders:
    every file under them, in sorted order).

    >>> digest("a", 1) == digest("a", 1), digest("a", 1) == digest("a", 2)
    (True, False)
    """
    h = hashlib.sha256(repr(parts).encode())
    for f in files:
        f = Path(f)
        for p in sorted(f.rglob("*")) if f.is_dir() else [f]:
            if p.is_file():
                h.update(str(p.relative_to(f.parent)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def built_once(tmp_path_factory, name: str, key: str, build: Callable[[Path], object]) -> Path:
    """A folder ``build`` filled, built once per test run for all workers (and for every
    fixture that asks with the same key)."""
    base = tmp_path_factory.getbasetemp()
    # every xdist worker's basetemp is <run>/popen-gwN: their parent is this run's alone;
    # without xdist the session's own basetemp is
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "built-once"
    root.mkdir(exist_ok=True)
    folder, done = root / f"{name}-{key}", root / f"{name}-{key}.done"
    with FileLock(str(root / f"{name}-{key}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)   # a failed build's leftovers
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
