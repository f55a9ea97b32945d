"""Hostile or unlucky surroundings of ``--out``, on the real command line (issue #24).

- Folders of every ``.X.tmp-*`` / ``.X.old-*`` shape beside ``--out`` that nothing proves
  factprobe wrote (a user's, an older factprobe's, a look-alike), with dead and live PIDs,
  with and without digits: an ordinary build beside them leaves every one as it was.
- Folders factprobe did write, but on another host or in another PID namespace (a container,
  a batch job on a shared file system: ``unshare --pid --fork --mount-proc``): left alone,
  with one warning line, even when the writer's PID means nothing here.
- A ``dataset.json`` from before markers listed their files claims only the tables its kind
  always has: a user's own ``*.parquet`` beside them is refused without ``--force`` and
  moved, not deleted, with it.
- ``--out`` inside an input, for every command that reads a folder: refused, one line.
- ``--force`` over a user's sub-folder leaves no empty ``.X.old-PID/sub/`` behind.
- A full disk (a small tmpfs) names ``--out``, not a library's file, and leaves nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.contract.conftest import TEMPLATES
from tests.contract.harness import STRAY, Case, check, expand, factprobe_exe, run, snapshot

FKTC_FILES = Path(__file__).resolve().parents[1] / "data" / "fktc"
MC = ["build", "mc", "--facts", "aliases", "--choices", "5", "--min-facts", "10",
      "--min-objects", "5", "--train", "5", "--test", "6", "--quiet"]
WRITER = ".factprobe-writer"
SENTINEL = ".factprobe-incomplete"


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)


def _mc_copy(ws: Path, dest: Path) -> None:
    """A whole, marked mc dataset under ``dest``: what a user's backup copy looks like."""
    shutil.copytree(ws / "mc", dest)


def _record(folder: Path, target: str, pid: int, **over) -> None:
    """A writer record as factprobe writes it, with fields changed by ``over``."""
    rec = {"factprobe_writer": 1, "pid": pid, "start": None, "host": socket.gethostname(),
           "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
           "pid_ns": os.readlink("/proc/self/ns/pid"), "target": target, "role": "new", **over}
    (folder / WRITER).write_text(json.dumps(rec))


# ------------------------------------------------- folders beside --out that are not ours

@dataclass(frozen=True)
class Beside:
    """A folder put beside ``--out mc`` before ``build mc --out mc`` runs; it must be there,
    unchanged, afterwards. ``warns``: the one warning line the run must print about it."""

    id: str
    name: str                          # {dead} and {live} are filled with PIDs
    fill: Callable[[Path, Path], None]  # (workspace, folder) -> None
    warns: bool = False


def _notes(ws: Path, d: Path) -> None:
    d.mkdir()
    (d / "notes.txt").write_text("mine\n")
    (d / "sub").mkdir()
    (d / "sub" / "data.parquet").write_bytes(b"PAR1 my own table")


def _half_table(ws: Path, d: Path) -> None:
    d.mkdir()
    (d / "facts.parquet").write_bytes(b"PAR1 mine, half-copied")


def _sentinel_only(ws: Path, d: Path) -> None:
    """What a factprobe from before writer records left, or a user's folder that happens to
    hold a file of that name: nothing proves whose it is."""
    _half_table(ws, d)
    (d / SENTINEL).write_text("")


def _empty(ws: Path, d: Path) -> None:
    d.mkdir()


def _backup(ws: Path, d: Path) -> None:
    _mc_copy(ws, d)
    (d / "why.txt").write_text("my backup before trying seed 1\n")


def _other_host(ws: Path, d: Path) -> None:
    _sentinel_only(ws, d)
    _record(d, "mc", int(d.name.split("-")[1]), host="node-17.cluster")


def _other_boot(ws: Path, d: Path) -> None:
    _sentinel_only(ws, d)
    _record(d, "mc", int(d.name.split("-")[1]), boot_id="0" * 8 + "-0000-0000-0000-" + "0" * 12)


def _other_ns_replaced(ws: Path, d: Path) -> None:
    _backup(ws, d)
    _record(d, "mc", int(d.name.split("-")[1]), pid_ns="pid:[4026500001]", role="replaced")


def _other_target(ws: Path, d: Path) -> None:
    """A record for another output, copied into a folder named for mc: proves nothing."""
    _sentinel_only(ws, d)
    _record(d, "misprimes", int(d.name.split("-")[1]))


def _record_of_another_pid(ws: Path, d: Path) -> None:
    _sentinel_only(ws, d)
    _record(d, "mc", 1)


BESIDE = [
    # the issue's own examples: any NAME, digits or not
    Beside("photos-year", ".photos.tmp-2023", _notes),
    Beside("exports-date-suffix", ".exports.tmp-20240101-final", _notes),
    Beside("cache-big-number", ".cache.tmp-99999", _notes),
    Beside("other-name-dead-pid", ".photos.tmp-{dead}-0badcafe", _notes),
    Beside("other-name-old-dead", ".photos.old-{dead}", _backup),
    # named for --out itself
    Beside("out-tmp-no-digits", ".mc.tmp-final", _notes),
    Beside("out-tmp-dead-pid", ".mc.tmp-{dead}", _notes),
    Beside("out-tmp-dead-pid-rand", ".mc.tmp-{dead}-0badcafe", _half_table),
    Beside("out-tmp-dead-sentinel-no-record", ".mc.tmp-{dead}-0badcafe", _sentinel_only),
    Beside("out-tmp-dead-empty", ".mc.tmp-{dead}-0badcafe", _empty),
    Beside("out-tmp-live-pid", ".mc.tmp-{live}-0badcafe", _notes),
    Beside("out-old-dead-backup", ".mc.old-{dead}", _backup),
    Beside("out-old-dead-rand-backup", ".mc.old-{dead}-1a2b3c4d", _backup),
    Beside("out-old-live-backup", ".mc.old-{live}", _backup),
    Beside("out-old-dead-notes", ".mc.old-{dead}", _notes),
    Beside("out-tmp-dead-backup", ".mc.tmp-{dead}-0badcafe", _backup),
    # records that do not prove a dead writer of this --out here
    Beside("another-host", ".mc.tmp-{dead}-0badcafe", _other_host, warns=True),
    Beside("another-boot", ".mc.tmp-{dead}-0badcafe", _other_boot, warns=True),
    Beside("another-namespace-replaced", ".mc.old-{dead}", _other_ns_replaced, warns=True),
    Beside("record-for-another-output", ".mc.tmp-{dead}-0badcafe", _other_target),
    Beside("record-of-another-pid", ".mc.tmp-{dead}-0badcafe", _record_of_another_pid),
]


@pytest.fixture(scope="module")
def dead() -> int:
    return _dead_pid()


@pytest.mark.parametrize("case", BESIDE, ids=lambda c: c.id)
def test_folders_beside_out_are_left(case: Beside, workspace, dead):
    folder = workspace / case.name.format(dead=dead, live=os.getppid())
    case.fill(workspace, folder)
    before = snapshot(folder)
    # with --force too: --force speaks of --out, never of what lies beside it
    for extra in ([], ["--force"]):
        proc = run([*MC, "--seed", "1", "--out", "mc", *extra], cwd=workspace)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert folder.is_dir() and snapshot(folder) == before, f"{folder.name} changed"
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        if case.warns:
            assert len(lines) == 1 and folder.name in lines[0], proc.stderr
            assert lines[0].startswith("factprobe: warning:"), lines[0]
        else:
            assert lines == [], proc.stderr
    assert not (workspace / "photos").exists() and not (workspace / "exports").exists()
    assert sorted(p.name for p in workspace.glob(".mc.*")) == \
        ([folder.name] if folder.name.startswith(".mc.") else [])


def test_a_killed_writers_folder_is_still_recovered(workspace, dead):
    """What the rules still allow: a dead writer's unfinished folder, proved by its record,
    goes when the same --out is written again, and only then."""
    t = workspace / f".mc.tmp-{dead}-0badcafe"
    _sentinel_only(workspace, t)
    _record(t, "mc", dead)
    proc = run(["build", "misprimes", "--facts", "aliases", "--out", "next", "--quiet"],
               cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert t.is_dir(), "another --out must not touch it"
    proc = run([*MC, "--out", "mc"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert not t.exists()


# --------------------------------------------------------- writers in other PID namespaces

def _unshare_ok() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                          capture_output=True).returncode == 0


needs_unshare = pytest.mark.skipif(not _unshare_ok(),
                                   reason="unshare --pid needs root (or user namespaces)")

# Inside a new PID namespace: fork until the next PID is the wanted one (a PID no process
# outside has), and let that child start writing --out mc as factprobe does, then wait.
IN_NAMESPACE = r"""
import os, sys, time
from pathlib import Path
want = int(sys.argv[1])
while True:
    pid = os.fork()
    if pid == 0:
        if os.getpid() != want:
            os._exit(0)
        from factprobe.core import swap
        t = swap.make_temp(Path("."), "mc")
        (t / "facts.parquet").write_bytes(b"PAR1 being written")
        print(t.name, flush=True)
        time.sleep(120)
        os._exit(0)
    os.waitpid(pid, 0) if pid != want else None
    if pid >= want:
        break
sys.stdout.close()
os.waitpid(want, 0)
"""


def _free_pid(low: int = 300) -> int:
    """A PID no process on this machine has now."""
    taken = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    return next(p for p in range(low, 30000) if p not in taken)


@needs_unshare
def test_writer_in_another_pid_namespace_is_left(workspace):
    """A container writes --out mc on the shared folder; its PID is no process here."""
    want = _free_pid()
    child = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable,
                              "-c", IN_NAMESPACE, str(want)], cwd=workspace, text=True,
                             stdout=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        name = child.stdout.readline().strip()
        assert name.startswith(f".mc.tmp-{want}-"), name
        tmp = workspace / name
        assert not os.path.exists(f"/proc/{want}") or want in (os.getpid(), os.getppid())
        proc = run([*MC, "--seed", "1", "--out", "mc"], cwd=workspace)
        assert proc.returncode == 0, proc.stderr
        assert (tmp / "facts.parquet").read_bytes() == b"PAR1 being written"
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and name in lines[0] and "namespace" in lines[0], proc.stderr
    finally:
        child.kill()
        child.wait()


@needs_unshare
def test_factprobe_in_a_namespace_leaves_an_outside_writer(workspace):
    """The other way round: factprobe runs in a batch job's own PID namespace, where the
    writer's PID (a live process outside) is nobody."""
    code = ("import sys; from pathlib import Path; from factprobe.core import swap; "
            "t = swap.make_temp(Path('.'), 'mc'); (t / 'facts.parquet').write_bytes(b'x'); "
            "print(t.name, flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=workspace, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        tmp = workspace / child.stdout.readline().strip()
        proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", *factprobe_exe(),
                               *MC, "--seed", "1", "--out", "mc"], cwd=workspace,
                              capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert proc.returncode == 0, proc.stderr
        assert (tmp / "facts.parquet").read_bytes() == b"x"
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and tmp.name in lines[0], proc.stderr
    finally:
        child.kill()
        child.wait()


# ------------------------------------------------------------------ legacy markers

def _legacy(ws: Path, folder: str, *extra: str) -> None:
    path = ws / folder / "dataset.json"
    data = json.loads(path.read_text())
    del data["files"], data["output"]
    path.write_text(json.dumps(data))
    for name in extra:
        (ws / folder / name).write_bytes(b"PAR1 the user's own results")


LEGACY = [
    # (id, --out folder, the command, user's files put in it)
    ("mc-results-parquet", "mc", MC, ("my_experiment_results.parquet",)),
    ("mc-table-like-name", "mc", MC, ("templates.parquet",)),
    ("misprimes-results", "misprimes",
     ["build", "misprimes", "--facts", "aliases", "--quiet"], ("results.parquet",)),
    ("templates-facts-parquet", "templates",
     ["build", "templates", "--facts", "aliases", "--templates-dir", str(TEMPLATES),
      "--paraphrases", "0", "--quiet"], ("facts.parquet",)),
]


@pytest.mark.parametrize("lid,out,argv,extra", LEGACY, ids=[c[0] for c in LEGACY])
def test_legacy_marker_claims_only_its_kinds_tables(lid, out, argv, extra, workspace):
    _legacy(workspace, out, *extra)
    before = snapshot(workspace)
    proc = run([*argv, "--out", out], cwd=workspace)
    check(proc, before, snapshot(workspace), needles=(out, extra[0], "--force"),
          new_ok=lambda p: p.startswith(".cache-factprobe"))
    proc = run([*argv, "--out", out, "--force"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads((workspace / out / "dataset.json").read_text())["files"]
    for name in extra:
        assert (workspace / out / name).read_bytes() == b"PAR1 the user's own results"
        assert name not in listed
    assert not [p for p in snapshot(workspace) if STRAY.match(Path(p).name)]


def test_legacy_marker_still_owns_its_tables(workspace):
    _legacy(workspace, "mc")
    proc = run([*MC, "--out", "mc"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(workspace / "mc")) == ["dataset.json", "facts.parquet",
                                                     "relations.parquet"]


# ---------------------------------------------------------------- --out inside an input

def _copy(src: Path, name: str):
    def setup(ws: Path) -> None:
        shutil.copytree(src, ws / name)
    return setup


INSIDE = [
    Case("aliases", ("build", "aliases", "--facts", "facts", "--via", "graph", "--out",
                     "facts/aliases", "--quiet")),
    Case("mc", (*MC, "--out", "aliases/mc")),
    Case("mc-deeper", (*MC, "--out", "aliases/new/deeper/mc")),
    Case("mc-via-dotdot", (*MC, "--out", "mine/../aliases/mc")),
    Case("templates-dir", ("build", "templates", "--facts", "aliases", "--templates-dir", "tpl",
                           "--paraphrases", "0", "--out", "tpl/built", "--quiet"),
         setup=_copy(TEMPLATES, "tpl")),
    Case("templates-facts", ("build", "templates", "--facts", "aliases", "--templates-dir",
                             str(TEMPLATES), "--paraphrases", "0", "--out", "aliases/t",
                             "--quiet")),
    Case("misprimes", ("build", "misprimes", "--facts", "aliases", "--out", "aliases/m",
                       "--quiet")),
    Case("multiprompt", ("build", "multiprompt", "--facts", "aliases", "--templates",
                         "templates", "--out", "templates/mp", "--quiet")),
    Case("fktc", ("build", "fktc", "--facts", "aliases", "--templates", "templates", "--out",
                  "aliases/fktc", "--quiet")),
    Case("fktc-import", ("build", "fktc", "--import", "fktc-src", "--out", "fktc-src/built",
                         "--quiet"), setup=_copy(FKTC_FILES, "fktc-src")),
    Case("zp-lke-dataset", ("eval", "zp-lke", "--dataset", "mc", "--model", "model",
                            "--examples", "2", "--response-tokens", "0", "--out", "mc/run",
                            "--quiet")),
    Case("zp-lke-model", ("eval", "zp-lke", "--dataset", "mc", "--model", "model",
                          "--examples", "2", "--response-tokens", "0", "--out", "model/run",
                          "--quiet")),
    Case("belief-model", ("eval", "belief", "--dataset", "multiprompt", "--model", "mlm",
                          "--out", "mlm/run", "--quiet")),
    Case("monitor-dataset", ("eval", "monitor", "--dataset", "fktc", "--model", "model",
                             "--no-frames", "--max-new-tokens", "1", "--out", "fktc/run",
                             "--quiet")),
    Case("plant", ("plant", "--dataset", "mc", "--templates", str(TEMPLATES), "--epochs", "1",
                   "--layers", "1", "--width", "32", "--out", "mc/planted", "--quiet")),
    Case("report", ("report", "--results", "run", "--bootstrap", "10", "--no-plots", "--out",
                    "run/report", "--quiet")),
    Case("publish-dry-run", ("publish", "mc", "--repo-id", "my-org/mc", "--dry-run", "mc/hub",
                             "--quiet")),
    Case("export-lm-eval", ("export", "lm-eval", "mc", "mc/task", "--quiet")),
    Case("merge", ("merge", "shard", "--out", "shard/merged", "--quiet")),
]


@pytest.mark.parametrize("case", INSIDE, ids=lambda c: c.id)
def test_out_inside_an_input_is_refused(case: Case, workspace):
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    proc = run(expand(case.argv, {"ws": str(workspace)}), cwd=workspace)
    check(proc, before, snapshot(workspace), needles=("inside the input",),
          new_ok=lambda p: p.startswith(".cache-factprobe"))


def test_out_beside_an_input_with_a_similar_name_is_fine(workspace):
    """``aliases-mc`` is not inside ``aliases``: prefixes of names are no parents."""
    proc = run([*MC, "--out", "aliases-mc"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------- --force leftovers

def test_force_leaves_no_empty_old_folder(workspace):
    (workspace / "mc" / "sub" / "deeper").mkdir(parents=True)
    (workspace / "mc" / "sub" / "deeper" / "notes.txt").write_text("mine\n")
    (workspace / "mc" / "empty-of-mine").mkdir()
    proc = run([*MC, "--seed", "1", "--out", "mc", "--force"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "mc" / "sub" / "deeper" / "notes.txt").read_text() == "mine\n"
    assert (workspace / "mc" / "empty-of-mine").is_dir()
    assert not list(workspace.glob(".mc.*")), list(workspace.glob(".mc.*"))
    listed = json.loads((workspace / "mc" / "dataset.json").read_text())["files"]
    assert not any(f.startswith(("sub", "empty-of-mine")) for f in listed)


# ------------------------------------------------------------------------ a full disk

def _mount_ok() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "--mount", "sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"],
        capture_output=True).returncode == 0


@pytest.mark.skipif(not _mount_ok(), reason="mounting a tmpfs needs root")
@pytest.mark.parametrize("what,size", [("mc", "12k"), ("plant", "160k"), ("zp-lke", "8k")])
def test_full_disk_names_out(what, size, workspace, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    argv = {"mc": [*MC[:3], str(workspace / "aliases"), *MC[4:]],
            "plant": ["plant", "--dataset", str(workspace / "mc"), "--templates",
                      str(TEMPLATES), "--epochs", "1", "--layers", "2", "--width", "64",
                      "--quiet"],
            "zp-lke": ["eval", "zp-lke", "--dataset", str(workspace / "mc"), "--model",
                       str(workspace / "model"), "--examples", "2", "--response-tokens", "0",
                       "--quiet"]}[what]
    script = (f'mount -t tmpfs -o size={size} tmpfs "$1" && cd "$1" && shift && "$@"; '
              f'rc=$?; ls -A; exit $rc')
    proc = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", str(disk),
                           *factprobe_exe(), *argv, "--out", "out/x"],
                          capture_output=True, text=True, env={**os.environ,
                                                               "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "no space left" in lines[0] and "--out out/x" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    left = proc.stdout.split()
    assert not [p for p in left if STRAY.match(p)], left
