"""A small workspace for the contract tests: real datasets built by the real command line from
the bundled sample graph, a tiny model, a finished run, and some files of the user's own."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import WIKIDATA_MINI
from tests.contract.harness import run
from tests.shared_cache import built_once, digest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "kg" / "sample.ttl"
TEMPLATES = ROOT / "data" / "templates"
RELATIONS = "rel:capital,rel:officialLanguage,rel:continent"

# name -> the command that builds it inside the workspace (order matters)
BUILD = [
    ("facts", ["build", "facts", "--source", "rdf", "--path", str(SAMPLE), "--relations",
               RELATIONS, "--date-format", "year"]),
    ("aliases", ["build", "aliases", "--facts", "facts", "--via", "graph"]),
    ("mc", ["build", "mc", "--facts", "aliases", "--choices", "5", "--min-facts", "10",
            "--min-objects", "5", "--train", "5", "--test", "6", "--seed", "0"]),
    ("templates", ["build", "templates", "--facts", "aliases", "--templates-dir",
                   str(TEMPLATES), "--paraphrases", "0"]),
    ("misprimes", ["build", "misprimes", "--facts", "aliases"]),
    ("multiprompt", ["build", "multiprompt", "--facts", "aliases", "--templates", "templates"]),
    ("fktc", ["build", "fktc", "--facts", "aliases", "--templates", "templates"]),
]


@pytest.fixture(scope="session")
def workspace_template(tmp_path_factory, tiny_causal_dir, tiny_masked_dir) -> Path:
    """Built once for every xdist worker of the run (tests/shared_cache.py): tests read it or
    copy it (``workspace``), never change it."""
    key = digest(BUILD, files=[SAMPLE, TEMPLATES, tiny_causal_dir, tiny_masked_dir])
    return built_once(tmp_path_factory, "contract-ws", key,
                      lambda ws: _build_workspace(ws, tiny_causal_dir, tiny_masked_dir))


def _build_workspace(ws: Path, tiny_causal_dir: Path, tiny_masked_dir: Path) -> Path:
    for name, argv in BUILD:
        proc = run([*argv, "--out", name, "--quiet"], cwd=ws)
        assert proc.returncode == 0, f"building {name}: {proc.stderr}"
    shutil.copytree(tiny_causal_dir, ws / "model")
    shutil.copytree(tiny_masked_dir, ws / "mlm")
    proc = run(["eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "2",
                "--response-tokens", "0", "--out", "run", "--quiet"], cwd=ws)
    assert proc.returncode == 0, f"eval: {proc.stderr}"
    proc = run(["eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "2",
                "--response-tokens", "0", "--shard", "0/1", "--out", "shard", "--quiet"], cwd=ws)
    assert proc.returncode == 0, f"eval --shard: {proc.stderr}"
    user = ws / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("a user's own notes\n")
    (ws / "userfile.txt").write_text("a user's own file\n")
    return ws


@pytest.fixture
def workspace(workspace_template, tmp_path) -> Path:
    """A fresh copy per test: a case may only ever damage its own copy."""
    ws = tmp_path / "ws"
    shutil.copytree(workspace_template, ws, symlinks=True)
    return ws


@pytest.fixture(scope="session")
def wd_facts(tmp_path_factory) -> Path:
    """A facts dataset with Wikidata ids (from the Wikidata-shaped test graph), built once for
    every contract module that needs one."""
    out = tmp_path_factory.mktemp("wd") / "wdfacts"
    proc = run(["build", "facts", "--source", "rdf", "--path", str(WIKIDATA_MINI), "--relations",
                "P36,P37", "--out", str(out), "--quiet"], cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    return out
