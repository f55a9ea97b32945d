"""builders/core/outdir.py and builders/core/swap.py in process: markers, refusals, the swap on both of
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

from builders.core import outdir, swap
from builders.core.errors import UserError
from builders.core.outdir import atomic_folder, contents, out_policy, prepare, recover, stamp


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


def test_recover_the_pre_pid_writers_kill(tmp_path):
    """The exact state factprobe left before temp names carried a PID, killed between its two
    renames: ``out`` missing, ``.out.old-PID`` and a ``tempfile.mkdtemp`` folder beside it."""
    previous = _write(tmp_path / "d", "one")
    pid = _dead_pid()
    os.rename(previous, tmp_path / f".d.old-{pid}")
    legacy = tmp_path / ".d.tmp-k3j_x9aa"
    legacy.mkdir()
    (legacy / "facts.parquet").write_text("two")
    (legacy / "dataset.json").write_text(json.dumps(
        {"kind": "facts", "schema_version": 1, "factprobe_version": "0.1.0"}))
    recover(tmp_path)
    assert (tmp_path / "d" / "facts.parquet").read_text() == "one"
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_recover_leaves_a_lone_pre_pid_temp_folder(tmp_path):
    """Without a dead partner nothing says its writer is dead: it may be an old factprobe's."""
    legacy = tmp_path / ".d.tmp-k3j_x9aa"
    legacy.mkdir()
    (legacy / "facts.parquet").write_text("being written")
    recover(tmp_path)
    assert (legacy / "facts.parquet").is_file()


def test_recover_unfinished_and_live(tmp_path):
    pid = _dead_pid()
    dead = tmp_path / f".d.tmp-{pid}-0000abcd"
    dead.mkdir()
    (dead / swap.SENTINEL).touch()
    (dead / "facts.parquet").write_text("half")
    live = swap.make_temp(tmp_path, "e")
    recover(tmp_path)
    assert not dead.exists()
    assert live.is_dir()


def test_recover_moves_the_users_files_out_of_a_replaced_folder(tmp_path):
    """Killed after the exchange, before the replaced folder was renamed and emptied."""
    out = _write(tmp_path / "d", "new")
    replaced = tmp_path / f".d.tmp-{_dead_pid()}-0000abcd"
    _write(tmp_path / "x", "old")
    (tmp_path / "x" / "notes.txt").write_text("mine")
    os.rename(tmp_path / "x", replaced)
    recover(tmp_path)
    assert (out / "notes.txt").read_text() == "mine"
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
