"""Kills: SIGKILL at any instant of a write leaves the previous output or the new one, and the
next factprobe run with the same ``--out`` (any command writing it, even one that is then
refused) finishes or rolls back what was left, and removes the temporary folders of dead
writers, never a live one's; runs writing another ``--out`` beside it touch none of it.

Three ways to kill: a real ``factprobe build`` / ``factprobe eval`` polled until it is writing
(a temp folder with a table in it, a checkpoint with a chunk in it); and a real ``factprobe
build`` run in a child Python whose file-system primitives kill the process at one exact step
of the swap (before the exchange, after it, between the two renames of the fallback path,
half-way through emptying the replaced folder).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factprobe.core.writer import WRITER
from tests.contract.harness import STRAY, factprobe_exe, run, snapshot

MC = ["build", "mc", "--facts", "aliases", "--choices", "5", "--min-facts", "10",
      "--min-objects", "5", "--train", "5", "--test", "6", "--quiet"]
NEXT_DOOR = ["build", "misprimes", "--facts", "aliases", "--out", "next-door", "--quiet"]


def _recover(out: str) -> list[str]:
    """A command writing ``out`` that is refused once it has recovered it (a misprimes
    dataset where an mc dataset is): what recovery alone did to ``out``."""
    return ["build", "misprimes", "--facts", "aliases", "--out", out, "--quiet"]
ENV = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _strays(ws: Path) -> list[str]:
    return [p for p in snapshot(ws) if STRAY.match(Path(p).name)]


def _spawn(argv: list[str], ws: Path) -> subprocess.Popen:
    return subprocess.Popen(factprobe_exe() + argv, cwd=ws, env={**os.environ, **ENV},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_when(proc: subprocess.Popen, ready, what: str, timeout: float = 300) -> None:
    """SIGKILL ``proc`` as soon as ``ready()``; fail if it ends first."""
    end = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"finished before {what}: {proc.stderr.read()}"
        assert time.monotonic() < end, f"no {what} after {timeout} s"
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()                        # reaped: a zombie would still count as a live writer
    assert proc.returncode == -signal.SIGKILL


def _ok(argv: list[str], ws: Path) -> None:
    proc = run(argv, cwd=ws)
    assert proc.returncode == 0, proc.stderr


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)


# ------------------------------------------------------------------ real commands, killed

def test_kill_build_mid_write(workspace):
    """A build killed while it writes its tables: the previous dataset is intact, a run next
    to it removes the dead writer's temp folder, the rerun equals an uninterrupted build."""
    rng = random.Random(0)
    with open(workspace / "big.csv", "w") as fh:
        fh.write("subject,relation,object\n")
        for i in range(150_000):
            fh.write(f"Q{i},P{i % 7},Q{rng.randrange(10**6)}\n")
    build = ["build", "facts", "--source", "csv", "--path", "big.csv", "--relations", "all",
             "--quiet"]
    _ok([*build, "--limit", "100", "--out", "big"], workspace)     # the previous output
    _ok([*build, "--out", "ref/big"], workspace)                    # uninterrupted, for bytes
    previous = snapshot(workspace / "big")

    proc = _spawn([*build, "--out", "big"], workspace)
    _kill_when(proc, lambda: any((t / "facts.parquet").exists()
                                 for t in workspace.glob(".big.tmp-*")), "a table being written")
    assert snapshot(workspace / "big") == previous
    assert list(workspace.glob(".big.tmp-*")), "the kill should have left its temp folder"

    left = _strays(workspace)
    _ok(NEXT_DOOR, workspace)                   # a run writing another --out touches nothing
    assert _strays(workspace) == left
    assert snapshot(workspace / "big") == previous
    _ok([*build, "--out", "big"], workspace)    # the same --out: the dead writer's folder goes
    assert not _strays(workspace)
    assert snapshot(workspace / "big") == snapshot(workspace / "ref" / "big")


def _same_run(a: Path, b: Path) -> None:
    for name in ("outputs.parquet", "prompts.parquet", "metrics.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    ra, rb = (json.loads((d / "run.json").read_text()) for d in (a, b))
    for r in (ra, rb):        # how long it took, in how many sessions, and where: not results
        r.pop("timings_s"), r.pop("sessions"), r["eval"].pop("out")
        # the thread choice reads the machine's load at start (it does not change a number:
        # inference gives the same bits on 1 and 2 threads)
        r.pop("threads", None)
    assert ra == rb


def test_kill_eval_mid_run(workspace):
    """An eval killed between two checkpointed chunks: the previous run folder is intact, and
    the resumed run equals an uninterrupted one."""
    argv = ["eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "1,2",
            "--seeds", "0,1", "--response-tokens", "0", "--quiet"]
    previous = snapshot(workspace / "run")
    partial = workspace / ".run.partial"
    proc = _spawn([*argv, "--out", "run"], workspace)
    _kill_when(proc, lambda: partial.is_dir() and any(partial.glob("*.parquet")),
               "a checkpointed chunk")
    assert snapshot(workspace / "run") == previous
    _ok([*argv, "--out", "run"], workspace)
    assert not _strays(workspace)
    _ok([*argv, "--out", "ref/run"], workspace)
    _same_run(workspace / "run", workspace / "ref" / "run")


# ------------------------------------------------------- killed at one step of the swap

# Runs the real CLI in this process, with the primitive of one step replaced by a SIGKILL of
# the process, active only inside the swap (``swap.install``) or the emptying (``retire``).
CHILD = r"""
import errno, os, pathlib, signal, sys
from factprobe.core import outdir, swap

point = sys.argv[1]
state = {"active": False, "renames": 0, "unlinks": 0}
real_rename, real_renameat2, real_unlink = os.rename, swap._renameat2, pathlib.Path.unlink


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def rename(src, dst, *args, **kwargs):
    if state["active"]:
        state["renames"] += 1
        if point == "after-exchange" and state["renames"] == 1:
            die()
        if point == "between-renames" and state["renames"] == 2:
            die()
    return real_rename(src, dst, *args, **kwargs)


def renameat2(src, dst, flags):
    if point == "before-exchange" and flags == swap.RENAME_EXCHANGE:
        die()
    if point == "first-install" and flags == swap.RENAME_NOREPLACE:
        die()
    if point == "between-renames":         # a file system without the exchange
        raise OSError(errno.EINVAL, "not supported here")
    return real_renameat2(src, dst, flags)


def unlink(self, *args, **kwargs):
    if state["active"] == "retire":
        state["unlinks"] += 1
        if state["unlinks"] == 2:
            die()
    return real_unlink(self, *args, **kwargs)


def during(name, fn):
    def wrapped(*args, **kwargs):
        state["active"] = name
        return fn(*args, **kwargs)
    return wrapped


os.rename, swap._renameat2, pathlib.Path.unlink = rename, renameat2, unlink
swap.install = during("install", swap.install)
outdir.retire = during("retire", outdir.retire)
from factprobe.cli.app import main
sys.exit(main(sys.argv[2:]))
"""

# point -> what is at --out right after the kill ("previous", "new", or None: missing), and
# after the next run beside it.
POINTS = {
    "before-exchange": ("previous", "previous"),
    "after-exchange": ("new", "new"),
    "between-renames": (None, "previous"),
    "during-retire": ("new", "new"),
}


@pytest.fixture(scope="module")
def new_mc(workspace_template, tmp_path_factory) -> dict:
    """What ``build mc --seed 1 --out mc`` writes, uninterrupted."""
    ws = tmp_path_factory.mktemp("new-mc")
    (ws / "aliases").symlink_to(workspace_template / "aliases")
    _ok([*MC, "--seed", "1", "--out", "mc"], ws)
    return snapshot(ws / "mc")


def _kill_at(point: str, ws: Path, argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, point, *argv], cwd=ws,
                          env={**os.environ, **ENV}, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, f"{point}: not killed: {proc.stderr}"


def _without(snap: dict, name: str) -> dict:
    return {k: v for k, v in snap.items() if k != name}


@pytest.mark.parametrize("point", POINTS)
def test_kill_inside_the_swap(point, workspace, new_mc):
    """--force over a dataset holding the user's notes.txt, killed at ``point``: --out is the
    previous or the new dataset at once (missing only between the fallback's two renames), the
    next run beside it restores or finishes it, and notes.txt is never lost."""
    mc = workspace / "mc"
    (mc / "notes.txt").write_text("mine\n")
    previous = snapshot(mc)
    argv = [*MC, "--seed", "1", "--out", "mc", "--force"]
    _kill_at(point, workspace, argv)

    right_after, after_recovery = POINTS[point]
    right_after_snap = snapshot(mc)
    if right_after is None:
        assert not mc.exists() and list(workspace.glob(".mc.old-*"))
    else:
        # the killed writer's record may be in mc (it marks the previous folder before the
        # exchange): factprobe's bookkeeping, not part of either output, and gone after recovery
        want = previous if right_after == "previous" else new_mc
        assert _without(_without(snapshot(mc), "notes.txt"), WRITER) == \
            _without(want, "notes.txt")

    _ok(NEXT_DOOR, workspace)                   # another --out: nothing of mc is touched
    assert snapshot(mc) == right_after_snap
    proc = run(_recover("mc"), cwd=workspace)
    assert proc.returncode == 2 and "'mc' dataset" in proc.stderr, proc.stderr
    assert not _strays(workspace), point
    assert (mc / "notes.txt").read_text() == "mine\n"
    want = previous if after_recovery == "previous" else new_mc
    assert _without(snapshot(mc), "notes.txt") == _without(want, "notes.txt")

    if after_recovery == "previous":            # and the rerun is the uninterrupted build
        _ok(argv, workspace)
        assert _without(snapshot(mc), "notes.txt") == new_mc


def test_kill_before_a_first_install(workspace, new_mc):
    """Nothing was at --out: the complete new folder is put in place by the next run."""
    _kill_at("first-install", workspace, [*MC, "--seed", "1", "--out", "fresh/mc"])
    assert not (workspace / "fresh" / "mc").exists()
    _ok([*NEXT_DOOR[:-3], "--out", "fresh/next-door"], workspace)
    assert not (workspace / "fresh" / "mc").exists()
    assert run(_recover("fresh/mc"), cwd=workspace).returncode == 2
    assert not _strays(workspace)
    assert snapshot(workspace / "fresh" / "mc") == new_mc


# ------------------------------------------------------------ whose temp folders go

def test_live_writer_is_left_alone(workspace):
    """A temp folder of a running writer survives a run beside it; once that writer is dead,
    the next run removes it."""
    code = ("import sys; from pathlib import Path; from factprobe.core import swap; "
            "t = swap.make_temp(Path('.'), 'mc'); (t / 'facts.parquet').write_bytes(b'x'); "
            "print(t.name, flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=workspace, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        tmp = workspace / child.stdout.readline().strip()
        assert tmp.is_dir()
        _ok(NEXT_DOOR, workspace)
        _ok([*MC, "--out", "mc"], workspace)        # even a write of the same output
        assert (tmp / "facts.parquet").read_bytes() == b"x"
    finally:
        child.kill()
        child.wait()
    _ok(NEXT_DOOR, workspace)
    assert tmp.exists()                         # not the --out of that run
    _ok([*MC, "--out", "mc"], workspace)
    assert not tmp.exists()
    assert not _strays(workspace)


def test_checkpoints_and_lookalikes_are_left_alone(workspace):
    """An eval's resume checkpoint, and folders that merely look like a dead process's
    temporary folders (no writer record proves them factprobe's), are not factprobe's to
    touch; a dead writer's own folder goes when its --out is written again."""
    partial = workspace / ".run.partial"
    partial.mkdir()
    (partial / "main-00000-0123456789abcdef.parquet").write_bytes(b"chunk")
    pid = _dead_pid()
    lookalike = workspace / f".notes.old-{pid}"
    lookalike.mkdir()
    (lookalike / "diary.txt").write_text("mine\n")
    empty = workspace / f".next-door.tmp-{pid}-0badcafe"
    empty.mkdir()                 # killed between mkdir and its record, or a user's: unproved
    half = workspace / f".next-door.tmp-{pid}-x"
    half.mkdir()
    (half / "facts.parquet").write_bytes(b"PAR1 half")
    code = ("import sys; from pathlib import Path; from factprobe.core import swap; "
            "t = swap.make_temp(Path('.'), 'next-door'); print(t.name)")
    dead_writer = workspace / subprocess.run(
        [sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True,
        check=True).stdout.strip()
    before = snapshot(workspace)
    _ok(NEXT_DOOR, workspace)
    after = snapshot(workspace)
    assert not (workspace / "notes").exists()
    assert not dead_writer.exists()
    kept = {k: v for k, v in before.items() if not k.startswith(dead_writer.name)}
    assert {k: after[k] for k in kept} == kept
