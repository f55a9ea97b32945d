"""factprobe/core/outdir.py and factprobe/core/swap.py in process: markers, refusals, the swap on both of
its paths, and recovery from every state a killed writer can leave (the command-line contract
and real kills are in tests/contract/)."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from factprobe.core import outdir, swap, writer
from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder, contents, out_policy, prepare, recover, stamp


def _write(out: Path, text: str, kind: str = "dataset", subkind: str = "facts", **kw) -> Path:
    with atomic_folder(out, kind, subkind if kind == "dataset" else None, **kw) as tmp:
        (tmp / "facts.parquet").write_text(text)
        (tmp / "sub").mkdir()
        (tmp / "sub" / "part.txt").write_text(text)
        marker = outdir.MARKER[kind]
        (tmp / marker).write_text(json.dumps(stamp({"kind": subkind}, tmp, kind)))
    return out


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)


@pytest.fixture(autouse=True)
def _cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_replace_keeps_unlisted_files(tmp_path, exchange):
    out = _write(tmp_path / "d", "one")
    (out / "notes.txt").write_text("mine")
    (out / "sub" / "mine.txt").write_text("mine too")
    with pytest.raises(UserError, match="did not write there"):
        _write(out, "two", exchange=exchange)
    with out_policy(force=True):
        _write(out, "two", exchange=exchange)
    assert (out / "facts.parquet").read_text() == "two"
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "sub" / "mine.txt").read_text() == "mine too"
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_marker_lists_every_file(tmp_path):
    out = _write(tmp_path / "d", "x")
    data = json.loads((out / "dataset.json").read_text())
    assert data["output"] == "dataset"
    assert data["files"] == ["dataset.json", "facts.parquet", "sub/part.txt"] == contents(out)


def test_failure_inside_leaves_the_previous_folder(tmp_path):
    out = _write(tmp_path / "d", "one")
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with atomic_folder(out, "dataset", "facts") as tmp:
                (tmp / "facts.parquet").write_text("half")
                raise exc
        assert (out / "facts.parquet").read_text() == "one"
        assert sorted(os.listdir(tmp_path)) == ["d"]


def test_a_marker_that_forgets_a_file_is_refused(tmp_path):
    with pytest.raises(UserError, match="does not list exactly"):
        with atomic_folder(tmp_path / "d", "dataset") as tmp:
            (tmp / "dataset.json").write_text(json.dumps(stamp({}, tmp, "dataset")))
            (tmp / "late.parquet").write_text("written after the marker")
    assert os.listdir(tmp_path) == []


def test_refusals(tmp_path):
    _write(tmp_path / "facts", "x")
    _write(tmp_path / "run", "x", kind="run")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    (tmp_path / "file").write_text("mine")
    (tmp_path / "link").symlink_to("facts")
    cases = {
        "": "is empty", "file": "is a file", "file/sub": "not a folder",
        "link": "symbolic link", "mine": "did not write", ".": "working directory",
        "facts": "not a 'mc' dataset", "run": "not a 'mc' dataset", "/proc/x": "/proc",
    }
    for out, message in cases.items():
        with pytest.raises(UserError, match=message):
            prepare(out, "dataset", "mc")
    with out_policy(force=True, inputs=["facts/dataset.json"]):
        prepare("run", "dataset", "mc")                      # another kind: --force may
        for out, message in (("mine", "did not write"), ("facts", "holds the input"),
                             (".", "working directory"), (str(tmp_path), "working")):
            with pytest.raises(UserError, match=message):
                prepare(out, "dataset", "mc")
    with out_policy(inputs=[str(tmp_path / "facts")]):
        with pytest.raises(UserError, match="is the input"):
            prepare(tmp_path / "facts", "dataset", "facts")
    assert prepare("new/deeper", "run") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()                   # checking creates nothing


def test_empty_and_vcs_only_folders_are_free(tmp_path):
    (tmp_path / "e").mkdir()
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / ".gitignore").write_text("/facts.parquet\n")
    _write(tmp_path / "e", "x")
    _write(tmp_path / "g", "x")
    assert (tmp_path / "g" / ".gitignore").read_text() == "/facts.parquet\n"
    assert (tmp_path / "e" / "facts.parquet").is_file()


def test_mode_follows_umask(tmp_path):
    old = os.umask(0o027)
    try:
        out = _write(tmp_path / "d", "x")
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o750
    assert (out / "sub").stat().st_mode & 0o777 == 0o750


def test_exchange_swaps_two_folders(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "x").write_text("a")
    try:
        swap._renameat2(a, b, swap.RENAME_EXCHANGE)
    except OSError as exc:
        pytest.skip(f"no RENAME_EXCHANGE here: {exc}")
    assert (b / "x").read_text() == "a" and os.listdir(a) == []


def test_exchange_unsupported_takes_two_renames(tmp_path, monkeypatch):
    out = _write(tmp_path / "d", "one")

    def unsupported(src, dst, flags):
        raise OSError(errno.EINVAL, "not here")
    monkeypatch.setattr(swap, "_renameat2", unsupported)
    _write(out, "two")
    _write(tmp_path / "new", "three")
    assert (out / "facts.parquet").read_text() == "two"
    assert sorted(os.listdir(tmp_path)) == ["d", "new"]


def test_zombie_is_dead_and_self_is_alive():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert swap.alive(child.pid)
    child.send_signal(signal.SIGKILL)
    for _ in range(500):          # killed, not reaped: a zombie
        if not swap.alive(child.pid):
            break
        os.sched_yield()
    assert not swap.alive(child.pid)
    child.wait()
    assert swap.alive(os.getpid())


def _record(folder: Path, name: str, role: str, writer_pid: int, **over) -> Path:
    """A writer record of process ``writer_pid`` (dead, for these tests) on this machine."""
    rec = {**writer.record(name, role), "pid": writer_pid, "start": None, **over}
    (folder / writer.WRITER).write_text(json.dumps(rec))
    return folder


def test_recover_leaves_what_no_record_proves(tmp_path):
    """Before writer records, factprobe's temp folders carried only a name; a name proves
    nothing (a user's .d.old-PID looks the same), so such folders are left, even as the pair a
    killed old factprobe left between its two renames."""
    previous = _write(tmp_path / "d", "one")
    pid = _dead_pid()
    os.rename(previous, tmp_path / f".d.old-{pid}")
    legacy = tmp_path / ".d.tmp-k3j_x9aa"
    legacy.mkdir()
    (legacy / "facts.parquet").write_text("two")
    unfinished = tmp_path / f".d.tmp-{pid}-0000abcd"
    unfinished.mkdir()
    (unfinished / swap.SENTINEL).touch()
    before = sorted(contents(tmp_path))
    recover(tmp_path / "d")
    assert sorted(contents(tmp_path)) == before


def test_recover_the_swap_a_dead_writer_left(tmp_path):
    """Killed between the two renames: ``d`` missing, the replaced folder and the new one
    beside it, both recorded: the previous folder goes back, the new one goes."""
    previous = _write(tmp_path / "d", "one")
    pid = _dead_pid()
    os.rename(previous, _record(previous, "d", "replaced", pid).with_name(f".d.old-{pid}"))
    new = _write(tmp_path / "x", "two")
    os.rename(_record(new, "d", "new", pid), tmp_path / f".d.tmp-{pid}-0000abcd")
    recover(tmp_path / "d")
    assert (tmp_path / "d" / "facts.parquet").read_text() == "one"
    assert sorted(os.listdir(tmp_path)) == ["d"]
    assert sorted(os.listdir(tmp_path / "d")) == ["dataset.json", "facts.parquet", "sub"]


def test_recover_only_the_current_out(tmp_path):
    pid = _dead_pid()
    for name in ("d", "e"):
        t = tmp_path / f".{name}.tmp-{pid}-0000abcd"
        t.mkdir()
        (t / swap.SENTINEL).touch()
        _record(t, name, "new", pid)
    recover(tmp_path / "d")
    assert sorted(os.listdir(tmp_path)) == [f".e.tmp-{pid}-0000abcd"]


def test_recover_unfinished_and_live(tmp_path):
    pid = _dead_pid()
    dead = tmp_path / f".d.tmp-{pid}-0000abcd"
    dead.mkdir()
    (dead / swap.SENTINEL).touch()
    (dead / "facts.parquet").write_text("half")
    _record(dead, "d", "new", pid)
    recover(tmp_path / "d")
    assert not dead.exists()
    live = swap.make_temp(tmp_path, "d")
    dead.mkdir()
    (dead / swap.SENTINEL).touch()
    _record(dead, "d", "new", pid)
    recover(tmp_path / "d")          # a writer of d is at work: nothing of d is touched
    assert live.is_dir() and dead.is_dir()


@pytest.mark.parametrize("field,value", [("host", "another-host"), ("pid_ns", "pid:[1]"),
                                         ("boot_id", "00000000-0000-0000-0000-000000000000"),
                                         ("target", "e"), ("pid", 1)])
def test_recover_leaves_foreign_or_mismatched_records(tmp_path, field, value):
    pid = _dead_pid()
    t = tmp_path / f".d.tmp-{pid}-0000abcd"
    t.mkdir()
    (t / swap.SENTINEL).touch()
    _record(t, "d", "new", pid, **{field: value})
    said = []
    recover(tmp_path / "d", say=said.append)
    assert t.is_dir()
    if field in ("host", "pid_ns", "boot_id"):
        assert len(said) == 1 and str(t) in said[0], said
    else:
        assert said == []


def test_a_reused_pid_is_dead(tmp_path):
    """The record's start time differs from the running process's: the PID was reused."""
    t = tmp_path / f".d.tmp-{os.getppid()}-0000abcd"
    t.mkdir()
    (t / swap.SENTINEL).touch()
    _record(t, "d", "new", os.getppid(), start=1)
    recover(tmp_path / "d")
    assert not t.exists()


def test_recover_moves_the_users_files_out_of_a_replaced_folder(tmp_path):
    """Killed after the exchange, before the replaced folder was renamed and emptied."""
    out = _write(tmp_path / "d", "new")
    replaced = tmp_path / f".d.tmp-{_dead_pid()}-0000abcd"
    _write(tmp_path / "x", "old")
    (tmp_path / "x" / "notes.txt").write_text("mine")
    (tmp_path / "x" / "mine").mkdir()
    (tmp_path / "x" / "mine" / "deep.txt").write_text("mine too")
    _record(tmp_path / "x", "d", "replaced", int(replaced.name.split("-")[1]))
    os.rename(tmp_path / "x", replaced)
    recover(tmp_path / "d")
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "mine" / "deep.txt").read_text() == "mine too"
    assert (out / "facts.parquet").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_a_marker_never_reaches_outside_its_folder(tmp_path):
    """A marker listing ``../x`` is not factprobe's; one whose listed sub-folder became a link
    never deletes through the link."""
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "dataset.json").write_text(json.dumps({"output": "dataset", "kind": "facts",
                                                  "files": ["dataset.json", "../victim.txt"]}))
    with pytest.raises(UserError, match="did not write"):
        prepare(bad, "dataset", "facts")

    out = _write(tmp_path / "d", "one")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "part.txt").write_text("mine too")
    os.remove(out / "sub" / "part.txt")
    os.rmdir(out / "sub")
    (out / "sub").symlink_to(elsewhere)
    with out_policy(force=True), pytest.raises(UserError, match="sub was not written"):
        _write(out, "two")                  # the link is the user's, and in the way
    assert outdir.retire(out, None) == ["sub"]
    assert victim.read_text() == "mine"
    assert (elsewhere / "part.txt").read_text() == "mine too"
