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

Every temporary name carries the writer's PID, so a later run can tell a folder a live writer is
filling from one a killed writer left behind (:func:`alive`). Python's ``os`` module has no
``renameat2`` wrapper, hence ctypes (glibc and musl export it; without it, the two renames).

A replaced folder is emptied by :func:`retire`: files its marker lists are deleted, anything
else is moved into the new folder. :func:`recover` applies the same steps to whatever dead
writers left in a folder, and runs before every write into it (``outdir.prepare``).
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

from builders.core.markers import (
    BOOKKEEPING,
    MARKER,
    SENTINEL,
    clashes,
    contents,
    identify,
    unlisted,
)

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
# What renameat2 answers when the kernel, libc or file system lacks the flag.
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP}
# .NAME.tmp-PID-RAND (a writer's), .NAME.old-PID[-RAND] (a replaced folder), and the
# .NAME.tmp-XXXXXXXX that factprobe wrote with tempfile.mkdtemp before names carried a PID
# (only ever removed beside a dead .NAME.old-PID, the pair such a writer left when killed).
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<role>tmp|old)-(?P<pid>[1-9]\d{0,9})(?:-[0-9a-z]+)?$")
_LEGACY_TMP = re.compile(r"^\.(?P<name>.+)\.tmp-\w+$")


@dataclass(frozen=True)
class Temp:
    """A parsed temporary name: the output it belongs to, its role, the writer's PID."""

    name: str
    role: str           # "tmp" (being written) or "old" (a replaced folder)
    pid: int | None     # None: a pre-PID name, whose writer cannot be told alive or dead


def parse(entry: str) -> Temp | None:
    """
    >>> parse(".sample-mc.tmp-4242-9f3a01bc")
    Temp(name='sample-mc', role='tmp', pid=4242)
    >>> parse(".run.old-77")
    Temp(name='run', role='old', pid=77)
    >>> parse(".run.tmp-k3j_x9aa")
    Temp(name='run', role='tmp', pid=None)
    >>> parse(".run.partial") is None, parse("run") is None
    (True, True)
    """
    m = _TEMP.match(entry)
    if m:
        return Temp(m["name"], m["role"], int(m["pid"]))
    m = _LEGACY_TMP.match(entry)
    return Temp(m["name"], "tmp", None) if m else None


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs. A zombie (killed, not yet reaped) counts as dead; an
    unknown state counts as alive, so a doubt never removes anything."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # another user's process
        return True
    except (OverflowError, ValueError):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


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
        # A kill before this line leaves an empty folder, which recovery simply removes.
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
        return None
    old = old_name(out)
    if exchange:
        try:
            _renameat2(tmp, out, RENAME_EXCHANGE)
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED:
                raise
        else:
            # ``tmp`` holds the previous folder now. A kill before the next rename leaves it
            # under the temporary name, without the sentinel: recovery treats it as replaced.
            try:
                os.rename(tmp, old)
            except OSError:
                return tmp
            return old
    os.rename(out, old)        # a kill after this: recovery renames ``old`` back to ``out``
    try:
        os.rename(tmp, out)
    except OSError:
        os.rename(old, out)
        raise
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
    if into is not None and into.is_dir() and not into.is_symlink():
        for rel in kept:
            src, dst = old / rel.rstrip("/"), into / rel.rstrip("/")
            if not os.path.lexists(src) or clashes(into, rel):
                continue
            with contextlib.suppress(OSError):
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.rename(src, dst)
    marker = MARKER.get(found.kind or "")
    # The marker goes last: a kill half-way leaves a folder recovery still knows as factprobe's.
    for rel in sorted(found.owned, key=lambda r: (r == marker, r)):
        p = old / rel.rstrip("/")
        # Never through a linked sub-folder: that file would be someone else's.
        inside = os.path.realpath(p.parent) == os.path.join(real, *Path(rel).parent.parts)
        if inside and (p.is_symlink() or p.is_file()):
            with contextlib.suppress(OSError):
                p.unlink()
    still = set(unlisted(old, found)) if old.is_dir() else set()
    for dirpath, _, _ in os.walk(old, topdown=False):
        rel = Path(dirpath).relative_to(old).as_posix() + "/"
        if rel not in still:                       # a user's empty folder stays where it was
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)
    return contents(old) if old.is_dir() else []


def _complete(folder: Path) -> bool:
    found = identify(folder)
    return found.kind is not None and set(contents(folder)) == found.owned


def recover(parent: Path) -> None:
    """Finish or roll back every swap that a killed factprobe left in ``parent``, for any output
    there, and remove its unfinished temporary folders. Entries of live processes, and every
    name that is not factprobe's temporary pattern (``.NAME.partial`` checkpoints included),
    are left alone. Best effort: a failure here never stops the command."""
    groups: dict[str, list[tuple[Temp, Path]]] = {}
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for e in entries:
        t = parse(e.name)
        with contextlib.suppress(OSError):
            if t is not None and e.is_dir(follow_symlinks=False):
                groups.setdefault(t.name, []).append((t, Path(e.path)))
    for name, temps in groups.items():
        if any(t.pid is not None and alive(t.pid) for t, _ in temps):
            continue                       # a writer of this output is at work
        if not any(t.role == "old" for t, _ in temps):
            # A pre-PID temp folder may be a live old factprobe's: only the pair that such a
            # writer left when killed between its two renames is known dead.
            temps = [(t, p) for t, p in temps if t.pid is not None]
        with contextlib.suppress(OSError):
            _recover_one(parent / name, temps)


def _replaced(folder: Path) -> bool:
    """Whether a folder with a temporary name holds a whole output (marked), or nothing of
    anyone's (version-control files at most): a folder factprobe moved aside or finished."""
    if identify(folder).kind is not None:
        return True
    return all(Path(p).name in BOOKKEEPING for p in contents(folder))


def _recover_one(out: Path, temps: list[tuple[Temp, Path]]) -> None:
    rest = []
    for t, p in temps:
        if t.role == "tmp" and ((p / SENTINEL).exists() or not _replaced(p)):
            # An unfinished write: the sentinel says so, and a temporary folder of a dead
            # writer holding anything but a whole output can be nothing else.
            shutil.rmtree(p, ignore_errors=True)
        elif _replaced(p):
            rest.append((t, p))
        # else an ``.old`` name over someone's folder: factprobe only ever moves whole outputs
        # aside, so this is not one of its own; it is left where it is.
    if not os.path.lexists(out):
        # Killed between the two renames (or before a first install): put the previous
        # folder back, else finish installing a complete new one.
        back = [p for t, p in rest if t.role == "old"] or [p for t, p in rest if _complete(p)]
        if back:
            os.rename(back[0], out)
            rest = [(t, p) for t, p in rest if p != back[0]]
    for _, p in rest:
        retire(p, out)
