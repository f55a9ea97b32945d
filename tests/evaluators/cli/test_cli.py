"""Bad input through the real command line: exit code 2, one line, no traceback, nothing written."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import WIKIDATA_MINI
from tests.inprocess import factprobe_cli

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return factprobe_cli(args, cwd=cwd, timeout=120)


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_help_shows_examples():
    for cmd in (["build", "facts"], ["build", "aliases"], ["build", "mc"], ["build", "nobel"]):
        out = run(*cmd, "--help")
        assert out.returncode == 0 and "examples:" in out.stdout


@pytest.mark.parametrize("args,needles", [
    (["build", "facts", "--source", "rdf", "--path", "missing.ttl", "--relations", "P36"],
     ["missing.ttl", "not found"]),
    (["build", "facts", "--source", "rdf", "--relations", "P36"], ["needs --path"]),
    (["build", "facts", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--relations", "P4242"],
     ["P4242", "relations present", "P36"]),
    (["build", "facts", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--relations", "zz:x"],
     ["unknown prefix 'zz'"]),
    (["build", "facts", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--relations", "P36",
      "--lang", "xx"], ["no facts left", "'xx'"]),
    (["build", "facts", "--source", "sparql", "--relations", "all",
      "--endpoint", "http://127.0.0.1:9/q"], ["--relations all"]),
    (["build", "facts", "--source", "trex", "--path", "no/such/dir", "--relations", "all"], []),
    (["build", "facts", "--source", "csv", "--path", "nope.csv", "--relations", "all"],
     ["nope.csv"]),
    (["build", "facts", "--source", "csv", "--path", str(Path(__file__).resolve().parents[2] / "data" / "empty.csv"),
      "--relations", "all"], ["holds no facts"]),
    (["build", "facts", "--source", "nosuch", "--relations", "P1"], ["invalid choice"]),
    (["build", "mc", "--facts", "no/such/folder"], ["the following arguments are required"]),
    (["build", "mc", "--facts", "no/such/folder", "--out", "x"], ["not found"]),
    (["build", "nobel", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--nobel-class",
      "wd:Q1"], ["no award statements matched"]),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needles):
    out = tmp_path / "out"
    if "--out" not in args and args[1] != "mc":
        args = [*args, "--out", str(out)]
    proc = run(*args, "--quiet", cwd=tmp_path)
    assert_user_error(proc, *needles)
    assert not out.exists()
    assert not any(p.name.startswith(".out.tmp") for p in tmp_path.iterdir())


def test_unreachable_endpoint(tmp_path, closed_port_url):
    proc = run("build", "facts", "--source", "sparql", "--endpoint", closed_port_url,
               "--relations", "P36", "--out", str(tmp_path / "o"), "--retries", "1",
               "--cache-dir", str(tmp_path / "c"), "--quiet")
    assert_user_error(proc, "cannot reach", "after 2 attempts")


def test_malformed_csv_line_names_file_and_line(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("subject,relation,object\na,r,b\nc,r\nd,r,e\n")
    proc = run("build", "facts", "--source", "csv", "--path", str(csv), "--relations", "all",
               "--out", str(tmp_path / "o"), "--quiet")
    assert_user_error(proc, "t.csv:3", "--skip-bad")
    ok = run("build", "facts", "--source", "csv", "--path", str(csv), "--relations", "all",
             "--out", str(tmp_path / "o"), "--quiet", "--skip-bad")
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "o" / "facts.parquet").exists()


def test_failed_rebuild_keeps_the_previous_dataset(tmp_path):
    out = tmp_path / "o"
    good = run("build", "facts", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--relations",
               "P36", "--out", str(out), "--quiet")
    assert good.returncode == 0, good.stderr
    before = (out / "facts.parquet").read_bytes()
    bad = run("build", "facts", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--relations",
              "P4242", "--out", str(out), "--quiet")
    assert bad.returncode == 2
    assert (out / "facts.parquet").read_bytes() == before
