"""``--out`` ownership: factprobe replaces only folders it wrote, and never loses one on a kill.

A folder is factprobe's when it carries a marker of the kind being written
(:mod:`factprobe.core.markers`). ``--out`` may name a missing path, an empty folder, or a folder whose
marker is of the same kind (and dataset kind) and lists everything in it. Anything else ends in
a :class:`UserError` before any work: a file, a symbolic link, a folder without a marker, an
output of another kind, a marked folder holding files its marker does not list, a path that
cannot be a folder. ``--force`` lifts two of these: an output of another kind is replaced, and
files its marker does not list are moved into the new folder, never deleted. Nothing ever
replaces an input or a folder holding one, the working directory or a folder holding it.

Files version control puts in output folders (DVC writes ``.gitignore`` beside its outputs) do
not count as the user's content, and are carried into the new folder like any unlisted file.

An ``--out`` inside an input folder is refused too (``build mc --facts F --out F/mc``).

The swap, and the recovery of what a killed writer left, are :mod:`factprobe.core.swap`; recovery
runs before every write, for that ``--out`` only, and touches only folders whose writer record
(:mod:`factprobe.core.writer`) proves a dead factprobe wrote them here.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from factprobe.core import swap
from factprobe.core.errors import UserError
from factprobe.core.markers import (
    BOOKKEEPING,
    MARKER,
    RECORDS,
    Found,
    clashes,
    contents,
    identify,
    stamp,
    unlisted,
)
from factprobe.core.swap import recover, retire

__all__ = ["OutPolicy", "atomic_folder", "no_space", "out_policy", "prepare", "stamp"]


@dataclass(frozen=True)
class OutPolicy:
    """Set once by the command line for the whole command (``out_policy``)."""

    force: bool = False
    inputs: tuple[str, ...] = ()     # paths the command reads: never replaced, nor their parents


# A context variable rather than a parameter of every builder: the policy belongs to the
# command, and every folder it writes (the dataset, a converted Hub copy) obeys the same one.
_POLICY: contextvars.ContextVar[OutPolicy] = contextvars.ContextVar("factprobe_out_policy",
                                                                      default=OutPolicy())


@contextlib.contextmanager
def out_policy(force: bool = False, inputs: Iterable[str] = ()) -> Iterator[OutPolicy]:
    policy = OutPolicy(force=force, inputs=tuple(str(p) for p in inputs if p))
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)


def _refuse_protected(path: Path, say: str, flag: str) -> None:
    real = path.resolve()
    with contextlib.suppress(OSError):
        cwd = Path.cwd().resolve()
        if real == cwd or real in cwd.parents:
            raise UserError(f"{say} is the working directory or a folder holding it; "
                            f"choose another {flag}")
    if real == Path(real.anchor):
        raise UserError(f"{say} is the root folder; choose another {flag}")
    for given in _POLICY.get().inputs:
        inp = Path(os.path.abspath(given)).resolve()
        if real == inp or real in inp.parents:
            what = "is the input" if real == inp else "holds the input"
            raise UserError(f"{say} {what} {given}, and factprobe never writes over its "
                            f"inputs; choose another {flag}")
        # Only a folder that is there can be written into (a model name like gpt2 or an
        # hf:// address is no folder here).
        if inp in real.parents and inp.is_dir():
            raise UserError(f"{say} is inside the input {given}, and factprobe never writes "
                            f"into its inputs; choose an {flag} outside it")


# What a full disk (or quota) looks like from the libraries that write files for factprobe:
# OSError's errno, pyarrow's "[errno 28]", safetensors' and torch's Rust/C++ messages.
_NO_SPACE = re.compile(r"No space left on device|Disk quota exceeded|\[errno (28|122)\]|"
                       r"StorageFull|QuotaExceeded", re.IGNORECASE)


def no_space(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk is full, however the library that raised it words it.

    >>> no_space(OSError(28, "No space left on device")), no_space(OSError(2, "x"))
    (True, False)
    >>> no_space(RuntimeError("Error while serializing: IoError(Os { code: 28, kind: StorageFull })"))
    True
    """
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return bool(_NO_SPACE.search(str(exc)))


_SAID: set[str] = set()


def _warn(line: str) -> None:
    # --out is prepared twice (before any work, and again by the writer): one line, once.
    if line not in _SAID:
        _SAID.add(line)
        print(f"factprobe: warning: {line}", file=sys.stderr)


def _existing_ancestor(path: Path, say: str, flag: str) -> Path:
    for p in (path, *path.parents):
        if os.path.lexists(p):
            if p != path and not p.is_dir():
                raise UserError(f"{say}: {p} is a file, not a folder; choose another {flag}")
            return p
    return Path(path.anchor)


def _check_existing(path: Path, kind: str, subkind: str | None, say: str, flag: str) -> Found:
    if path.is_symlink():
        raise UserError(f"{say} is a symbolic link; give the folder it points to, or choose "
                        f"another {flag}")
    if not path.is_dir():
        raise UserError(f"{say} is a file, and factprobe writes a folder there; choose another "
                        f"{flag}, or move the file away")
    found = identify(path)
    try:
        extra = [p for p in unlisted(path, found) if Path(p).name not in BOOKKEEPING]
    except OSError as exc:
        raise UserError(f"{say}: cannot read {exc.filename or path} ({exc.strerror}); choose "
                        f"another {flag}") from None
    shown = ", ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
    if found.kind is None:
        if extra:
            raise UserError(f"{say} is a folder factprobe did not write (it holds {shown}, and "
                            f"no factprobe marker); choose another {flag}, or move its "
                            f"contents away (--force never replaces it)")
        return found
    force = _POLICY.get().force
    want = Found(kind, subkind)
    if found.kind != kind or (subkind and found.subkind and found.subkind != subkind):
        if not force:
            raise UserError(f"{say} holds {found.describe()}, not {want.describe()}; choose "
                            f"another {flag}, or pass --force to replace it")
    if extra and not force:
        raise UserError(f"{say} holds files factprobe did not write there ({shown}); move them "
                        f"away, or pass --force to replace the output and keep them")
    return found


def _probe(folder: Path, name: str, say: str, flag: str) -> None:
    """Create and remove a folder where the output's temporary folder will go: the one sure
    test (permissions, read-only mounts, /proc and /sys all answer differently)."""
    probe = folder / f".{name}.tmp-{os.getpid()}-probe"
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as exc:
        raise UserError(f"{say}: cannot create folders in {folder} ({exc.strerror}); choose "
                        f"another {flag}") from None


def prepare(out: str | os.PathLike, kind: str, subkind: str | None = None, *,
            flag: str = "--out") -> Path:
    """Check that ``out`` may receive a new output of ``kind`` (see the module docstring), after
    recovering what a killed writer left beside it. Returns the absolute path; raises
    UserError, having changed nothing of the user's."""
    text = os.fspath(out)
    if not text.strip():
        raise UserError(f"{flag} is empty: give the folder to write, e.g. {flag} results/run1")
    say = f"{flag} {text}"
    path = Path(os.path.abspath(text))
    if len(os.fsencode(path.name)) > 200:
        raise UserError(f"{say}: the folder name is longer than 200 bytes; choose a shorter one")
    _refuse_protected(path, say, flag)
    base = _existing_ancestor(path, say, flag)
    if base in (path, path.parent):
        recover(path, say=_warn)
    if os.path.lexists(path):
        _check_existing(path, kind, subkind, say, flag)
        base = path.parent
    first = path.relative_to(base).parts[0] if base != path.parent else path.name
    _probe(base, first, say, flag)
    return path


@contextlib.contextmanager
def atomic_folder(out: str | os.PathLike, kind: str, subkind: str | None = None, *,
                  flag: str = "--out", exchange: bool = True) -> Iterator[Path]:
    """Yield an empty temporary folder to fill (ending with its marker, see :func:`stamp`);
    on success it replaces ``out`` in one atomic exchange. ``out`` is checked first
    (:func:`prepare`) and again just before the swap; a failure or a kill at any instant
    leaves the previous ``out`` in place."""
    path = prepare(out, kind, subkind, flag=flag)
    say = f"{flag} {os.fspath(out)}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = swap.make_temp(path.parent, path.name)
    except OSError as exc:
        raise UserError(f"{say}: cannot create a folder in {path.parent} ({exc.strerror}); "
                        f"choose another {flag}") from None
    installed = False
    try:
        yield tmp
        new = identify(tmp)
        missing = (set(contents(tmp)) - RECORDS) ^ new.owned
        if new.kind != kind or missing:
            raise UserError(f"{say}: the new folder's {MARKER[kind]} does not list exactly its "
                            f"files ({', '.join(sorted(missing)[:3]) or 'no marker'}); nothing "
                            f"was replaced")
        if os.path.lexists(path):   # checked again: it may have changed while we worked
            found = _check_existing(path, kind, subkind, say, flag)
            clash = [p for p in unlisted(path, found) if clashes(tmp, p)]
            if clash:
                raise UserError(f"{say}: {clash[0]} was not written by factprobe, and the new "
                                f"output has a file of that name; move it away and run again")
        try:
            old = swap.install(tmp, path, exchange=exchange)
        except OSError as exc:
            raise UserError(f"{say}: cannot put the new folder in place ({exc.strerror}); the "
                            f"previous one is untouched") from None
        installed = True
        if old is not None:
            retire(old, path)
    except BaseException as exc:
        if not installed:
            swap.discard(tmp)
        if isinstance(exc, Exception) and not isinstance(exc, UserError) and no_space(exc):
            raise UserError(f"{say}: no space left on the device that holds it; free some "
                            f"space there, or choose another {flag} (nothing was replaced)"
                            ) from None
        raise
