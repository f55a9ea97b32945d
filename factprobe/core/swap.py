"""Replacing an output folder so that a kill at any instant loses nothing, and recovering
what a killed writer left.

A new output is written into a temporary sibling ``.NAME.tmp-PID-RAND`` (same parent, so the
final rename never crosses file systems) that holds the sentinel file :data:`SENTINEL` until it
is complete. :func:`install` then puts it in place:

- ``NAME`` missing: one ``renameat2(RENAME_NOREPLACE)`` (plain ``rename`` where unsupported);
- ``NAME`` present: one ``renameat2(RENAME_EXCHANGE)``, which swaps the two folders atomically:
  at every instant ``NAME`` is either the previous folder or the new one. The previous folder,
  now under the temporary name, is renamed ``.NAME.old-PID`` and emptied by the caller.
- Where the file system has no exchange (some network and FUSE file systems, non-Linux), two
  renames: ``NAME -> .NAME.old-PID``, then ``tmp -> NAME``. A kill between them leaves ``NAME``
  missing; the next factprobe run beside it puts ``.NAME.old-PID`` back (:func:`recover`).

Every folder factprobe creates or moves aside holds its writer record
(:mod:`factprobe.core.writer`: process, host, PID namespace, boot, output), so a later run can
prove which folders a killed factprobe left behind, and tell them from a live writer's, another
machine's, or a user's folder of a similar name. Python's ``os`` module has no ``renameat2``
wrapper, hence ctypes (glibc and musl export it; without it, the two renames).

A replaced folder is emptied by :func:`retire`: files its marker lists are deleted, anything
else is moved into the new folder. :func:`recover` applies the same steps to what dead writers
of the same ``--out`` left, and runs before every write of that ``--out``
(``outdir.prepare``).
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from factprobe.core import writer
from factprobe.core.markers import (
    MARKER,
    RECORDS,
    SENTINEL,
    clashes,
    contents,
    identify,
    unlisted,
)
from factprobe.core.writer import WRITER, alive  # noqa: F401  (alive: re-exported)

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
# What renameat2 answers when the kernel, libc or file system lacks the flag.
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP}
# .NAME.tmp-PID-RAND (a writer's) and .NAME.old-PID[-RAND] (a replaced folder). A name of
# this shape proves nothing by itself (a user may call a folder .photos.tmp-2023): only the
# writer record inside does (factprobe.core.writer).
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<role>tmp|old)-(?P<pid>[1-9]\d{0,9})(?:-[0-9a-z]+)?$")


@dataclass(frozen=True)
class Temp:
    """A parsed temporary name: the output it belongs to, its role, the writer's PID."""

    name: str
    role: str           # "tmp" (being written) or "old" (a replaced folder)
    pid: int


def parse(entry: str) -> Temp | None:
    """
    >>> parse(".sample-mc.tmp-4242-9f3a01bc")
    Temp(name='sample-mc', role='tmp', pid=4242)
    >>> parse(".run.old-77")
    Temp(name='run', role='old', pid=77)
    >>> parse(".run.tmp-k3j_x9aa") is None, parse(".run.partial") is None, parse("run") is None
    (True, True, True)
    """
    m = _TEMP.match(entry)
    return Temp(m["name"], m["role"], int(m["pid"])) if m else None


def make_temp(parent: Path, name: str) -> Path:
    """A new, empty temporary folder for output ``name`` in ``parent``, marked incomplete.

    ``os.mkdir`` (not ``tempfile.mkdtemp``, which forces 0700) so the folder gets the mode the
    user's umask gives every other folder."""
    for _ in range(100):
        path = parent / f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        # A kill before the record is written leaves an empty folder that nothing proves is
        # factprobe's: it stays (the window is two system calls wide).
        writer.write(path, name, "new")
        with open(path / SENTINEL, "x"):
            pass
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent))


def discard(tmp: Path) -> None:
    """Remove a temporary folder this process made and never installed."""
    shutil.rmtree(tmp, ignore_errors=True)


def old_name(out: Path) -> Path:
    path = out.with_name(f".{out.name}.old-{os.getpid()}")
    while os.path.lexists(path):
        path = out.with_name(f".{out.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
    return path


def _renameat2(src: Path, dst: Path, flags: int) -> None:
    fn = getattr(_libc(), "renameat2", None)
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available", str(src))
    if fn(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(src), None, str(dst))


_LIBC: list = []


def _libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


def _unrecord(folder: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(folder / WRITER)


def install(tmp: Path, out: Path, *, exchange: bool = True) -> Path | None:
    """Put the complete folder ``tmp`` at ``out``. Returns where the previous ``out`` now is
    (``.NAME.old-PID``, for the caller to empty), or None when there was none. ``exchange=False``
    takes the two-rename path even where the exchange works (tests of that path).

    Raises OSError with ``out`` untouched when it cannot install; ``tmp`` is then still the new
    folder (without its sentinel)."""
    (tmp / SENTINEL).unlink()
    if not os.path.lexists(out):
        try:
            _renameat2(tmp, out, RENAME_NOREPLACE)
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED:
                raise
            os.rename(tmp, out)
        _unrecord(out)      # a kill before this leaves a record recovery removes
        return None
    # The previous folder gets a record too before it leaves ``out``: under a temporary name,
    # a folder is only ever touched when its record proves it is factprobe's.
    writer.write(out, out.name, "replaced")
    old = old_name(out)
    if exchange:
        try:
            _renameat2(tmp, out, RENAME_EXCHANGE)
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED:
                _unrecord(out)
                raise
        else:
            # ``tmp`` holds the previous folder now. A kill before the next rename leaves it
            # under the temporary name, its record saying it was replaced.
            _unrecord(out)
            try:
                os.rename(tmp, old)
            except OSError:
                return tmp
            return old
    try:
        os.rename(out, old)    # a kill after this: recovery renames ``old`` back to ``out``
    except OSError:
        _unrecord(out)
        raise
    try:
        os.rename(tmp, out)
    except OSError:
        os.rename(old, out)
        _unrecord(out)
        raise
    _unrecord(out)
    return old


# ------------------------------------------------ emptying replaced folders, recovery

def retire(old: Path, into: Path | None) -> list[str]:
    """Empty a folder that ``into`` replaced: move what factprobe did not write into ``into``
    (where nothing of that name is), delete what it did. Returns what is left in ``old``
    (nothing, normally; ``old`` is then removed)."""
    try:
        return _retire(old, into)
    except OSError:
        return ["(unreadable)"]        # left for a later run; nothing is deleted blindly


def _retire(old: Path, into: Path | None) -> list[str]:
    found = identify(old)
    kept = unlisted(old, found)
    real = os.path.realpath(old)
    moved = set()
    if into is not None and into.is_dir() and not into.is_symlink():
        for rel in kept:
            src, dst = old / rel.rstrip("/"), into / rel.rstrip("/")
            if not os.path.lexists(src) or clashes(into, rel):
                continue
            with contextlib.suppress(OSError):
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.rename(src, dst)
                moved.add(rel)
    marker = MARKER.get(found.kind or "")
    # The marker goes after the files it lists, and the writer record last: a kill half-way
    # leaves a folder recovery still knows as factprobe's.
    for rel in sorted(found.owned, key=lambda r: (r == marker, r)):
        p = old / rel.rstrip("/")
        # Never through a linked sub-folder: that file would be someone else's.
        inside = os.path.realpath(p.parent) == os.path.join(real, *Path(rel).parent.parts)
        if inside and (p.is_symlink() or p.is_file()):
            with contextlib.suppress(OSError):
                p.unlink()
    for name in (SENTINEL, WRITER):
        with contextlib.suppress(OSError):
            os.unlink(old / name)
    # A user's empty folder that could not be moved stays where it was; every other folder
    # left is empty because its files were deleted or moved out (``sub/`` after ``sub/x``
    # moved into the new output), and goes.
    stays = {rel for rel in kept if rel.endswith("/") and rel not in moved}
    for dirpath, _, _ in os.walk(old, topdown=False):
        rel = Path(dirpath).relative_to(old).as_posix() + "/"
        if rel not in stays:
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)
    return contents(old) if old.is_dir() else []


def _complete(folder: Path) -> bool:
    found = identify(folder)
    return found.kind is not None and set(contents(folder)) - RECORDS == found.owned


def recover(out: Path, say=None) -> None:
    """Finish or roll back a swap of ``out`` that a killed factprobe left beside it, and remove
    its unfinished temporary folders. Only folders named for ``out`` whose writer record
    (:mod:`factprobe.core.writer`) proves they are factprobe's, written on this machine, in this
    PID namespace, by a process that has ended, are touched; everything else (a user's
    look-alike, a checkpoint, a live writer's folder) is left alone. ``say`` receives one line
    for each folder left because its writer cannot be seen from here. Best effort: a failure
    here never stops the command."""
    say = say or (lambda line: None)
    parent, name = out.parent, out.name
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    ours: list[tuple[Temp, Path, dict]] = []
    at_work = False
    for e in entries:
        t = parse(e.name)
        with contextlib.suppress(OSError):
            if t is None or t.name != name or not e.is_dir(follow_symlinks=False):
                continue
            rec = writer.read(Path(e.path), name, t.pid)
            if rec is None:
                continue                   # nothing proves factprobe wrote it: not ours
            v = writer.verdict(rec)
            if v == "foreign":
                say(f"left {e.path}: factprobe's {writer.describe(rec)} wrote it, and this "
                    f"run cannot tell whether that process still runs; remove it yourself "
                    f"once it has ended")
            elif v == "alive":
                at_work = True
            else:
                ours.append((t, Path(e.path), rec))
    rec = writer.read(out, name) if out.is_dir() and not out.is_symlink() else None
    v = writer.verdict(rec) if rec is not None else None
    if v == "foreign":
        say(f"{out} holds the record of factprobe's {writer.describe(rec)}, which may be "
            f"replacing it now")
    if at_work or v == "alive":
        return                             # a writer of this output is at work
    if v == "dead":
        _unrecord(out)
    with contextlib.suppress(OSError):
        _recover_one(out, ours)


def _recover_one(out: Path, temps: list[tuple[Temp, Path, dict]]) -> None:
    rest = []
    for _, p, rec in temps:
        if rec["role"] == "new" and (p / SENTINEL).exists():
            shutil.rmtree(p, ignore_errors=True)       # an unfinished write
        else:
            rest.append((rec["role"], p))
    if not os.path.lexists(out):
        # Killed between the two renames (or before a first install): put the previous
        # folder back, else finish installing a complete new one.
        back = [p for role, p in rest if role == "replaced"] or \
            [p for _, p in rest if _complete(p)]
        if back:
            os.rename(back[0], out)
            _unrecord(out)
            rest = [(role, p) for role, p in rest if p != back[0]]
    for _, p in rest:
        retire(p, out)
