"""Who wrote a temporary folder, and whether that writer can be proved dead.

factprobe removes or empties a folder it left beside ``--out`` only when it can prove it wrote
it and that the writer is gone. The proof is a *writer record*, the file :data:`WRITER` that
factprobe puts in every folder it creates or moves aside, naming the writer process, the
machine and PID namespace it ran in, and the output it was writing::

    {"factprobe_writer": 1, "pid": 4242, "start": 123456, "host": "node1",
     "boot_id": "4f0c...", "pid_ns": "pid:[4026531836]", "target": "sample-mc",
     "role": "new"}

``role`` is ``new`` (a new output being written) or ``replaced`` (the previous output, moved
aside). A PID means something only inside one PID namespace of one running kernel: a writer on
another host (a shared file system), in another container or Slurm job (another PID
namespace), or before a reboot cannot be seen from here, so it is never taken for dead
(:func:`verdict` answers ``foreign``, and the folder is left alone). ``start`` (the process's
start time, in clock ticks since boot) tells a reused PID from the writer itself.
"""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

WRITER = ".factprobe-writer"
_VERSION = 1
_LINUX = sys.platform.startswith("linux")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (after the parenthesised command name, which may hold
    spaces and parentheses itself)."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _proc_is_ours() -> bool:
    """Whether /proc shows this PID namespace (``unshare --pid --fork`` without
    ``--mount-proc`` leaves the parent's: PID N there is another process than N here)."""
    stat = _read("/proc/self/stat")
    return stat is not None and stat.split(" ", 1)[0] == str(os.getpid())


def _pid_ns() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def here() -> dict:
    """Where this process runs: what a record must match to be judged from here."""
    return {"host": socket.gethostname(), "boot_id": _read("/proc/sys/kernel/random/boot_id"),
            "pid_ns": _pid_ns()}


def record(target: str, role: str) -> dict:
    start = _start_time(os.getpid()) if _proc_is_ours() else None
    return {"factprobe_writer": _VERSION, "pid": os.getpid(), "start": start,
            **here(), "target": target, "role": role}


def write(folder: Path, target: str, role: str) -> None:
    """Put this process's record in ``folder`` (one small write: a kill leaves a record that
    does not parse, which proves nothing and so removes nothing). Raises FileExistsError
    rather than overwrite a file of that name: it is another writer's, or someone's."""
    data = json.dumps(record(target, role), sort_keys=True).encode("utf-8")
    fd = os.open(folder / WRITER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read(folder: Path, target: str, pid: int | None = None) -> dict | None:
    """The record in ``folder`` if it is a well-formed one for output ``target`` (and, when
    given, written by ``pid``, the PID in the folder's name); else None."""
    path = folder / WRITER
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 4096:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):     # 4 KB of "[" nests too deep to parse
        return None
    if not isinstance(data, dict) or data.get("factprobe_writer") != _VERSION:
        return None
    ok = (isinstance(data.get("pid"), int) and data["pid"] > 0
          and data.get("target") == target and data.get("role") in ("new", "replaced")
          and (pid is None or data["pid"] == pid)
          and all(isinstance(data.get(k), (str, type(None))) for k in ("host", "boot_id",
                                                                       "pid_ns"))
          and isinstance(data.get("start"), (int, type(None))))
    return data if ok else None


def alive(pid: int) -> bool:
    """Whether process ``pid`` (of this PID namespace) still runs. A zombie (killed, not yet
    reaped) counts as dead; an unknown state counts as alive, so a doubt never removes
    anything."""
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
    stat = _read(f"/proc/{pid}/stat") if _proc_is_ours() else None
    if stat is None:
        return True
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


def verdict(rec: dict) -> str:
    """``dead``, ``alive`` or ``foreign`` (written on another host, in another PID namespace
    or before a reboot: this process cannot tell, so nothing is removed)."""
    now = here()
    if rec["host"] != now["host"]:
        return "foreign"
    for key in ("boot_id", "pid_ns"):
        # Without /proc (not Linux) there are neither PID namespaces nor boot ids to compare;
        # on Linux a record or a process that lacks one cannot be placed.
        if rec[key] != now[key] or (_LINUX and rec[key] is None):
            return "foreign"
    if not alive(rec["pid"]):
        return "dead"
    start = _start_time(rec["pid"]) if _proc_is_ours() else None
    if rec["start"] is not None and start is not None and start != rec["start"]:
        return "dead"           # the PID was reused by a later process
    return "alive"


def describe(rec: dict) -> str:
    """Where a foreign record's writer ran, in words."""
    now = here()
    if rec["host"] != now["host"]:
        return f"process {rec['pid']} on host {rec['host']}"
    if rec["boot_id"] != now["boot_id"]:
        return f"process {rec['pid']} before this machine last booted (or on another machine)"
    return f"process {rec['pid']} in another PID namespace (a container or a batch job)"
