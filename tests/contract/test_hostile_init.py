"""Hostile values in what ``factprobe init`` writes: a graph file name, an endpoint URL or a
relation id holding shell syntax must reach factprobe as written when ``dvc repro`` runs the
generated pipeline, and never run as a command. What cannot be passed safely (a single quote,
an unprintable character) is refused at init: one line, exit 2, nothing written.

Each case is a fresh git + DVC repository and the real console scripts (``factprobe init``, then
``dvc repro``), as a user runs them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from factprobe.builders.templates.files import file_name
from tests.contract.harness import check, factprobe_exe, snapshot
from tests.evaluators.cli.own_graph import write_csv, write_graph

BIN = Path(sys.executable).parent
# Every shell trick in one name: a command substitution in both syntaxes, a separator, a
# background &, redirections, quotes a shell would eat, a glob, and non-ASCII letters.
NASTY = 'a b;$(touch pwned)&`touch pwned2`<in>out"q"*é日.ttl'


def env() -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


def sh(repo: Path, *cmd: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), cwd=repo, env=env(), capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def repo(tmp_path) -> Path:
    if shutil.which("dvc", path=str(BIN)) is None:
        pytest.fail("dvc is missing: pip install 'factprobe[pipeline]'")
    root = tmp_path / "probe"
    root.mkdir()
    assert sh(root, "git", "init", "-q").returncode == 0
    assert sh(root, "dvc", "init", "-q").returncode == 0
    return root


def hostile_csv(path: Path, relations: dict[str, str], tiny: bool = False) -> Path:
    """The test graph as CSV, its relation ids renamed (``ex:capital`` -> a hostile id)."""
    write_csv(path, tiny=tiny)
    text = path.read_text(encoding="utf-8")
    for old, new in relations.items():
        text = text.replace(f",{old},", f',"{new}",')
    path.write_text(text, encoding="utf-8")
    return path


@dataclass(frozen=True)
class Runs:
    """A pipeline init writes and ``dvc repro`` runs: the graph file, init's extra flags, the
    stage to reproduce, and the relation ids the built facts must hold."""
    id: str
    graph: str
    flags: tuple[str, ...]
    stage: str = "facts"
    relations: dict = None   # CSV only: ex:capital/ex:language -> hostile ids
    want: tuple[str, ...] = ()


RUNS = [
    Runs("rdf-path-with-every-shell-character", NASTY,
         ("--source", "rdf", "--relations", "ex:capital,ex:language"), stage="mc",
         want=("ex:capital", "ex:language")),
    Runs("rdf-relations-as-iris-in-angle-brackets", "g.ttl",
         ("--source", "rdf", "--relations",
          "<http://example.org/capital>,<http://example.org/language>"),
         want=("ex:capital", "ex:language")),
    Runs("csv-relation-ids-with-shell-commands", "my graph $(touch pwned).csv",
         ("--source", "csv", "--relations", "x;touch pwned_rel;echo,`touch pwned3`&"),
         relations={"ex:capital": "x;touch pwned_rel;echo", "ex:language": "`touch pwned3`&"},
         want=("x;touch pwned_rel;echo", "`touch pwned3`&")),
    Runs("csv-all-relations-leading-dash-path", "-rf $(touch pwned).csv",
         ("--source", "csv", "--relations", "all", "--lang", "en"),
         relations={"ex:capital": "../../etc/passwd", "ex:language": "<a>|b"},
         want=("../../etc/passwd", "<a>|b")),
]


@pytest.mark.parametrize("case", RUNS, ids=lambda c: c.id)
def test_dvc_repro_runs_hostile_values_as_data(repo, case):
    graph = repo / case.graph
    if case.relations:
        hostile_csv(graph, case.relations)
    else:
        write_graph(graph)
    before = set(os.listdir(repo))
    proc = sh(repo, *factprobe_exe(), "init", ".", "--path", f"./{case.graph}", *case.flags)
    assert proc.returncode == 0, proc.stderr
    # the printed template names are plain names inside templates/
    for rid in case.want:
        name = file_name(rid)
        assert f"templates/{name}" in proc.stdout + proc.stderr, proc.stderr
        assert "/" not in name and not name.startswith(".") and "'" not in name
        assert all(c.isalnum() or c in "._-" for c in name), name
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    assert params["facts"]["path"] == case.graph                 # the file's name, as it is
    name = params["name"]
    proc = sh(repo, "dvc", "repro", case.stage)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    new = set(os.listdir(repo)) - before
    assert not {n for n in new if n.startswith("pwned")}, new    # no command from data ran
    assert new <= {"dvc.yaml", "params.yaml", "plot-templates", "templates", "data", "dvc.lock",
                   ".gitignore"}, new
    import pyarrow.parquet as pq
    facts = pq.read_table(repo / f"data/datasets/{name}-facts/facts.parquet")
    assert set(facts.column("relation_id").to_pylist()) == set(case.want)


def test_sparql_endpoint_with_shell_characters_reaches_factprobe_as_written(repo):
    """No SPARQL server needed: the endpoint is refused by factprobe itself, and its error
    line quotes the URL whole (a shell would have cut it at & and run the rest)."""
    url = "http://127.0.0.1:9/q?a=1&b=$(touch pwned)&c=`touch pwned2`;d"
    proc = sh(repo, *factprobe_exe(), "init", ".", "--source", "sparql", "--endpoint", url,
              "--relations", "P36")
    assert proc.returncode == 0, proc.stderr
    # one try, short: the point is what the command receives, not the retries
    text = (repo / "params.yaml").read_text(encoding="utf-8")
    proc = sh(repo, "dvc", "repro", "facts", timeout=300)
    assert proc.returncode != 0
    assert not list(repo.glob("pwned*"))
    assert "b=$(touch pwned)&c=`touch pwned2`;d" in proc.stdout + proc.stderr
    assert (repo / "params.yaml").read_text(encoding="utf-8") == text


# (id, init's flags after `init .`, needles of the one error line); the graph is g.ttl
REFUSED = [
    ("single-quote-in-path", ("--path", "O'Brien.ttl"), ("--path", "'", "rename")),
    ("newline-in-path", ("--path", "a\nb.ttl"), ("--path", "unprintable character")),
    ("non-utf8-byte-in-path", ("--path", os.fsdecode(b"bad\xff.ttl")),
     ("--path", "unprintable character")),
    ("quote-in-relations", ("--path", "g.ttl", "--relations", "ex:capital'"),
     ("--relations", "'")),
    ("newline-in-relations", ("--path", "g.ttl", "--relations", "ex:capital\n rm -rf ~"),
     ("--relations", "unprintable character")),
    ("quote-in-lang", ("--path", "g.ttl", "--lang", "en';touch pwned;'"), ("--lang",)),
    ("quote-in-endpoint", ("--source", "sparql", "--endpoint", "http://x/q?a='1'",
                           "--relations", "P36"), ("--endpoint", "percent-encoded")),
    ("escape-in-endpoint", ("--source", "sparql", "--endpoint", "http://x/q\x1b[2J",
                            "--relations", "P36"), ("--endpoint", "unprintable character")),
]


@pytest.mark.parametrize("flags,needles", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_init_refuses_what_cannot_be_quoted(repo, flags, needles):
    for name in ("g.ttl", "O'Brien.ttl", "a\nb.ttl", os.fsdecode(b"bad\xff.ttl")):
        write_graph(repo / name)
    before = snapshot(repo)
    proc = sh(repo, *factprobe_exe(), "init", ".", *flags, timeout=120)
    check(proc, before, snapshot(repo), needles=needles)


def test_what_init_prints_and_writes_holds_no_escape_sequence_of_the_graph(repo):
    """A relation too small for a multiple-choice set is named in init's message and in
    params.yaml's comment: its id (terminal escapes, a YAML line break) must not act there."""
    evil = "\x1b]0;pwned\x07\x1b[2J\u2028evil: 1\x85x"
    hostile_csv(repo / "g.csv", {"ex:hemisphere": evil}, tiny=True)
    proc = sh(repo, *factprobe_exe(), "init", ".", "--source", "csv", "--path", "g.csv")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr and "left out" in proc.stderr
    text = (repo / "params.yaml").read_text(encoding="utf-8")
    assert "left out" in text and not set("\x1b\x07\u2028\x85") & set(text)
    params = yaml.safe_load(text)
    assert "evil" not in params and params["facts"]["relations"] == "all"
