"""``--out`` ownership, as a contract on the real command line (factprobe/core/outdir.py).

Every command that writes a folder (build *, eval *, plant, report, publish --dry-run) is run
with outputs it must refuse: a path that cannot be a folder, a user's file or folder, an input
or a folder holding one, the working directory, an output of another kind, its own kind of
output holding a user's file. Each must end in one line and exit 2 with nothing changed. Then
the outputs it must accept: its own marked folder, an empty folder, ``--force`` keeping the
user's files.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from factprobe.core.outdir import contents
from tests.contract.conftest import RELATIONS, SAMPLE, TEMPLATES
from tests.contract.harness import STRAY, Case, check, expand, factprobe_exe, run, snapshot

FKTC_FILES = Path(__file__).resolve().parents[1] / "data" / "fktc"
NOBEL_MODEL = ["--award-statement", "st:awardReceived", "--award-value", "sv:awardReceived",
               "--award-time", "qual:pointInTime", "--birth-property", "rel:birthYear",
               "--gender-property", "rel:sexOrGender", "--nobel-class", "ent:nobel_prize",
               "--instance-of", "rel:instanceOf", "--subclass-of", "rel:subclassOf"]

# command -> (argv without its output flag, output flag, its own kind of folder in the
# workspace, a folder of another kind there, an input of the command)
COMMANDS: dict[str, tuple[list[str], str, str, str, str]] = {
    "facts": (["build", "facts", "--source", "rdf", "--path", "data/kg/sample.ttl",
               "--relations", RELATIONS, "--date-format", "year"], "--out", "facts", "mc",
              "data/kg/sample.ttl"),
    "aliases": (["build", "aliases", "--facts", "facts", "--via", "graph"], "--out", "aliases",
                "mc", "facts"),
    "mc": (["build", "mc", "--facts", "aliases", "--choices", "5", "--min-facts", "10",
            "--min-objects", "5", "--train", "5", "--test", "6"], "--out", "mc", "facts",
           "aliases"),
    "nobel": (["build", "nobel", "--source", "rdf", "--path", "data/kg/sample.ttl",
               *NOBEL_MODEL], "--out", "nobel", "facts", "data/kg/sample.ttl"),
    "templates": (["build", "templates", "--facts", "aliases", "--templates-dir", str(TEMPLATES),
                   "--paraphrases", "0"], "--out", "templates", "mc", "aliases"),
    "misprimes": (["build", "misprimes", "--facts", "aliases"], "--out", "misprimes", "facts",
                  "aliases"),
    "multiprompt": (["build", "multiprompt", "--facts", "aliases", "--templates", "templates"],
                    "--out", "multiprompt", "misprimes", "templates"),
    "fktc": (["build", "fktc", "--facts", "aliases", "--templates", "templates"], "--out",
             "fktc", "multiprompt", "aliases"),
    "fktc-import": (["build", "fktc", "--import", "fktc-src"], "--out", "fktc", "mc",
                    "fktc-src"),
    "zp-lke": (["eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "2",
                "--response-tokens", "0"], "--out", "run", "facts", "mc"),
    "prompt": (["eval", "prompt", "--dataset", "mc", "--model", "model", "--templates",
                str(TEMPLATES), "--response-tokens", "0"], "--out", "run", "planted", "model"),
    "belief": (["eval", "belief", "--dataset", "multiprompt", "--model", "mlm"], "--out", "run",
               "report", "mlm"),
    "belief-icl": (["eval", "belief-icl", "--dataset", "multiprompt", "--model", "model",
                    "--contexts", "zero", "--samples", "0"], "--out", "run", "hub",
                   "multiprompt"),
    "monitor": (["eval", "monitor", "--dataset", "fktc", "--model", "model", "--no-frames",
                 "--max-new-tokens", "1"], "--out", "run", "fktc-dataset-copy", "fktc"),
    "plant": (["plant", "--dataset", "mc", "--templates", str(TEMPLATES), "--epochs", "1",
               "--layers", "1", "--width", "32"], "--out", "planted", "run", "mc"),
    "report": (["report", "--results", "run", "--bootstrap", "10", "--no-plots"], "--out",
               "report", "mc", "run"),
    "publish": (["publish", "mc", "--repo-id", "my-org/mc"], "--dry-run", "hub", "facts", "mc"),
}


def _argv(command: str, out: str, *extra: str) -> tuple[str, ...]:
    argv, flag, *_ = COMMANDS[command]
    return (*argv, flag, out, "--quiet", *extra)


def _user_file(rel: str):
    def setup(ws: Path) -> None:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("the user's own file\n")
    return setup


def _symlink(target: str):
    def setup(ws: Path) -> None:
        (ws / "link").symlink_to(target)
    return setup


def _nested(name: str):
    """The input moved one folder down, so ``--out inputs`` holds it."""
    def setup(ws: Path) -> None:
        (ws / "inputs").mkdir()
        os.replace(ws / name, ws / "inputs" / name)
    return setup


def _partial_file(ws: Path) -> None:
    (ws / ".run2.partial").write_text("not a checkpoint\n")


# Families that do not depend on the command: each command gets one, in turn, so every family
# is run by at least one command (the first four by two).
PATHS = [
    ("empty", "", ("empty",), None),
    ("proc", "/proc/factprobe-out", ("/proc",), None),
    ("sys", "/sys/factprobe-out", ("/sys",), None),
    ("through-file", "userfile.txt/sub", ("userfile.txt", "not a folder"), None),
    ("file", "userfile.txt", ("userfile.txt", "is a file"), None),
    ("user-folder", "mine", ("mine", "did not write"), None),
    ("user-folder-force", "mine", ("mine", "did not write"), "force"),
    ("cwd", ".", ("working directory",), None),
    ("parent-of-cwd", "..", ("working directory",), None),
    ("root", "/", ("--",), None),
    ("symlink-to-own", "link", ("link", "symbolic link"), "own"),
    ("dangling-symlink", "link", ("link", "symbolic link"), "nowhere"),
    ("long-name", "x" * 230, ("longer than 200",), None),
]


def _cases() -> list[Case]:
    cases = []
    names = list(COMMANDS)
    for i, command in enumerate(names):
        _, flag, own, other, inp = COMMANDS[command]
        setup_in = _nested(inp) if inp in ("facts", "aliases", "mc", "run", "model") else None
        in_argv = list(_argv(command, "inputs"))
        if setup_in is not None:          # the command reads inputs/NAME instead of NAME
            in_argv = [f"inputs/{a}" if a == inp else a for a in in_argv]
            in_argv[in_argv.index(flag) + 1] = "inputs"
        cases += [
            Case(f"{command}-own-kind-with-user-file", _argv(command, own),
                 (own, "did not write", "--force"), _user_file(f"{own}/notes.txt")),
            Case(f"{command}-other-kind", _argv(command, other), (other, "--force")),
            Case(f"{command}-is-input", _argv(command, inp), (inp, "input")),
        ]
        if setup_in is not None:
            cases.append(Case(f"{command}-holds-input", tuple(in_argv), ("inputs", "input"),
                              setup_in))
        for fam, out, needles, how in [PATHS[i % len(PATHS)]]:
            extra = ("--force",) if how == "force" else ()
            setup = (_symlink(own) if how == "own" else _symlink("nowhere") if how == "nowhere"
                     else None)
            cases.append(Case(f"{command}-{fam}", _argv(command, out, *extra), needles, setup))
    cases += [
        Case("facts-out-holds-graph", _argv("facts", "data"), ("data", "input")),
        Case("nobel-out-holds-graph", _argv("nobel", "data/kg", "--force"), ("input",)),
        Case("mc-input-even-with-force", _argv("mc", "aliases", "--force"), ("input",)),
        # the paths the issue names, for eval too (the loop above gives them to build commands)
        Case("eval-zp-lke-empty", _argv("zp-lke", ""), ("empty",)),
        Case("eval-belief-proc", _argv("belief", "/proc/factprobe-out"), ("/proc",)),
        Case("eval-monitor-sys", _argv("monitor", "/sys/factprobe-out"), ("/sys",)),
        Case("eval-prompt-through-file", _argv("prompt", "userfile.txt/sub"), ("not a folder",)),
        # an empty --dry-run must not fall through to uploading
        Case("publish-dry-run-empty", _argv("publish", ""), ("--dry-run", "empty")),
        Case("eval-dataset-parent", _argv("zp-lke", "mc/.."), ("working directory",)),
        Case("mc-output-of-a-run", _argv("mc", "run"), ("run folder", "--force")),
        Case("plant-unmarked-model-folder", _argv("plant", "model"), ("did not write",)),
        Case("eval-partial-is-a-file", _argv("zp-lke", "run2"), ("checkpoint",),
             _partial_file),
        Case("report-user-file-in-subfolder", _argv("report", "report"),
             ("tables/mine.md",), _user_file("report/tables/mine.md")),
        Case("publish-user-file", _argv("publish", "hub"), ("notes.txt",),
             _user_file("hub/data/notes.txt")),
        # --force carries the user's file over; one whose name the new output needs stops it
        Case("nobel-force-clash", _argv("nobel", "facts", "--force"), ("laureates.parquet",),
             _user_file("facts/laureates.parquet")),
    ]
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def out_template(workspace_template, tmp_path_factory) -> Path:
    """The contract workspace plus one output of every other kind: nobel, a planted model,
    a report, a Hub folder, the MONITOR fixture files, the sample graph under data/kg/."""
    ws = tmp_path_factory.mktemp("out-ws") / "ws"
    shutil.copytree(workspace_template, ws, symlinks=True)
    (ws / "data" / "kg").mkdir(parents=True)
    shutil.copy(SAMPLE, ws / "data" / "kg" / "sample.ttl")
    shutil.copytree(FKTC_FILES, ws / "fktc-src")
    shutil.copytree(ws / "fktc", ws / "fktc-dataset-copy")
    for name, argv in (
            ("nobel", _argv("nobel", "nobel")), ("planted", _argv("plant", "planted")),
            ("report", _argv("report", "report")), ("hub", _argv("publish", "hub"))):
        proc = run(list(argv), cwd=ws)
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
    shutil.rmtree(ws / ".cache-factprobe", ignore_errors=True)
    return ws


@pytest.fixture
def ws(out_template, tmp_path) -> Path:
    dest = tmp_path / "ws"
    shutil.copytree(out_template, dest, symlinks=True)
    return dest


def _cache(p: str) -> bool:
    return p.startswith(".cache-factprobe")


def test_enough_cases():
    assert len(CASES) >= 40
    assert {c.id.split("-")[0] for c in CASES} >= {"facts", "aliases", "mc", "nobel",
                                                   "templates", "misprimes", "multiprompt",
                                                   "fktc", "zp", "prompt", "belief", "monitor",
                                                   "plant", "report", "publish"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_out(case: Case, ws):
    if case.setup:
        case.setup(ws)
    before = snapshot(ws)
    proc = run(expand(case.argv, {"ws": str(ws)}), cwd=ws, env=case.env, timeout=case.timeout)
    check(proc, before, snapshot(ws), needles=case.needles, new_ok=_cache)


def test_read_only_parent(ws):
    """A folder nobody may write in (immutable, so that root is refused too)."""
    (ws / "locked").mkdir()
    if subprocess.run(["chattr", "+i", str(ws / "locked")], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        before = snapshot(ws)
        proc = run(list(_argv("mc", "locked/mc")), cwd=ws)
        check(proc, before, snapshot(ws), needles=("locked",), new_ok=_cache)
    finally:
        subprocess.run(["chattr", "-i", str(ws / "locked")], check=True)


# ------------------------------------------------------------------------- what must work

def _ok(ws: Path, argv, **kw) -> None:
    proc = run(list(argv), cwd=ws, **kw)
    assert proc.returncode == 0, proc.stderr
    strays = [p for p in snapshot(ws) if STRAY.match(Path(p).name)]
    assert not strays, strays


def _files(folder: Path) -> dict:
    return {k: v for k, v in snapshot(folder).items() if v[0] != "dir"}


@pytest.mark.parametrize("command", ["mc", "nobel", "zp-lke", "plant", "report", "publish"])
def test_rerun_into_own_folder(command, ws):
    own = COMMANDS[command][2]
    before = _files(ws / own)
    _ok(ws, _argv(command, own))
    after = _files(ws / own)
    assert set(after) == set(before)
    if command in ("mc", "nobel", "publish"):       # datasets are byte-stable
        assert after == before


def test_marker_lists_exactly_the_files(ws):
    for folder, marker in (("mc", "dataset.json"), ("run", "run.json"),
                           ("planted", "planted.json"), ("report", "report.json"),
                           ("hub", "factprobe_layout.json")):
        data = json.loads((ws / folder / marker).read_text())
        assert data["files"] == contents(ws / folder), folder
        assert data["output"] == {"mc": "dataset", "hub": "publish", "planted": "model"}.get(
            folder, folder)


def test_empty_folder_and_vcs_files(ws):
    (ws / "empty").mkdir()
    _ok(ws, _argv("mc", "empty"))
    assert (ws / "empty" / "dataset.json").is_file()
    (ws / "tracked").mkdir()
    (ws / "tracked" / ".gitignore").write_text("/outputs.parquet\n")
    _ok(ws, _argv("zp-lke", "tracked"))
    assert (ws / "tracked" / ".gitignore").read_text() == "/outputs.parquet\n"
    assert (ws / "tracked" / "run.json").is_file()


def test_force_keeps_the_users_files(ws):
    (ws / "mc" / "notes.txt").write_text("mine\n")
    (ws / "report" / "tables" / "mine.md").write_text("my table\n")
    _ok(ws, _argv("mc", "mc", "--force"))
    _ok(ws, _argv("report", "report", "--force"))
    assert (ws / "mc" / "notes.txt").read_text() == "mine\n"
    assert (ws / "report" / "tables" / "mine.md").read_text() == "my table\n"
    assert (ws / "report" / "report.md").is_file()


def test_force_replaces_another_kind_only(ws):
    facts_files = set(json.loads((ws / "facts" / "dataset.json").read_text())["files"])
    (ws / "facts" / "notes.txt").write_text("mine\n")
    _ok(ws, _argv("mc", "facts", "--force"))
    manifest = json.loads((ws / "facts" / "dataset.json").read_text())
    assert manifest["kind"] == "mc"
    assert set(os.listdir(ws / "facts")) == set(manifest["files"]) | {"notes.txt"}
    assert facts_files <= set(manifest["files"])     # facts, relations, dataset.json: replaced


def test_legacy_marker_is_still_owned(ws):
    """A dataset written before markers listed their files is still recognised."""
    path = ws / "mc" / "dataset.json"
    data = json.loads(path.read_text())
    del data["files"], data["output"]
    path.write_text(json.dumps(data))
    _ok(ws, _argv("mc", "mc"))
    assert json.loads(path.read_text())["output"] == "dataset"


def test_new_folders_follow_the_umask(ws):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for umask, mode in ((0o002, 0o775), (0o077, 0o700)):
        out = f"mc-{umask:o}"
        proc = subprocess.run(factprobe_exe() + list(_argv("mc", out)), cwd=ws, env=env,
                              capture_output=True, text=True, umask=umask)
        assert proc.returncode == 0, proc.stderr
        assert (ws / out).stat().st_mode & 0o777 == mode
        assert (ws / out / "facts.parquet").stat().st_mode & 0o777 == mode & 0o666
