"""Provenance: every builder's manifest leads back, through every dataset it read, to the source
file's sha256; the dirty flags are real `git status` answers; a rebuild gives the same bytes."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from factprobe.core import provenance as prov
from factprobe.core.tables import file_sha256
from factprobe.cli.app import main
from tests.chain_datasets import TEMPLATES_DIR, build_chain
from tests.conftest import WIKIDATA_MINI

ROOT = Path(__file__).resolve().parents[3]
MINI_SHA = file_sha256(WIKIDATA_MINI)


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> dict[str, Path]:
    return build_chain(tmp_path_factory.mktemp("chain"))


def _prov(folder: Path) -> dict:
    return json.loads((folder / "dataset.json").read_text())["provenance"]


def _source_shas(p: dict) -> set[str]:
    return {s.get("sha256") for s in prov.sources(p)} - {None}


@pytest.mark.parametrize("name", ["facts", "aliases", "mc", "misprimes", "templates",
                                  "multiprompt", "multiprompt-dir", "fktc"])
def test_every_builder_reaches_the_source_file(chain, name):
    p = _prov(chain[name])
    assert MINI_SHA in _source_shas(p), name
    assert prov.facts_root(p)["sha256"] == MINI_SHA
    assert prov.facts_root(p)["path"] == str(WIKIDATA_MINI)
    assert set(p["build"]) == {"factprobe_version", "factprobe_tree", "work_tree"}
    for _, step in prov.walk(p):
        for entry in (step.get("inputs") or {}).values():   # each input names its tables' bytes
            folder = chain[entry["dataset"]]
            assert entry["sha256"] == {f.name: file_sha256(f)
                                       for f in sorted(folder.glob("*.parquet"))}


def test_derived_datasets_record_what_they_read(chain):
    fktc = _prov(chain["fktc"])
    assert set(fktc["inputs"]) == {"facts", "templates"} and "source" not in fktc
    tmpl = fktc["inputs"]["templates"]["provenance"]["source"]
    assert tmpl["files_sha256"]["P36.yaml"] == file_sha256(TEMPLATES_DIR / "P36.yaml")
    from_dir = _prov(chain["multiprompt-dir"])
    assert set(from_dir["inputs"]) == {"facts"}
    assert from_dir["source"]["type"] == "template-files"
    assert sorted(from_dir["source"]["files_sha256"]) == ["P36.yaml", "P37.yaml"]
    aliases = _prov(chain["aliases"])
    assert aliases["source"]["type"] == "aliases" and aliases["source"]["sha256"] == MINI_SHA
    assert set(_prov(chain["misprimes"])["inputs"]) == {"facts", "types"}


def test_nobel_records_its_graph(tmp_path):
    from factprobe.builders.datasets.nobel import NobelConfig, NobelModel, build_nobel
    from factprobe.builders.sources.iris import WELL_KNOWN
    from factprobe.builders.sources.sparql import LocalGraph
    p = yaml.safe_load((ROOT / "params.yaml").read_text())["nobel"]
    model = NobelModel(award_statement=p["award_statement"], award_value=p["award_value"],
                       award_time=p["award_time"], birth=p["birth_property"],
                       gender=p["gender_property"], nobel_class=p["nobel_class"],
                       instance_of=p["instance_of"], subclass_of=p["subclass_of"])
    graph = LocalGraph(ROOT / p["path"])
    out = build_nobel(graph, NobelConfig(out=str(tmp_path / "nobel"), model=model,
                                         max_year=p["max_year"], progress=False),
                      {**WELL_KNOWN, **graph.prefixes}, "rdf")
    assert prov.facts_root(_prov(out))["sha256"] == file_sha256(ROOT / p["path"])


def test_rebuilds_are_byte_identical(chain, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)   # the same working tree as the chain's builds
    _build("fktc", "--facts", str(chain["aliases"]), "--templates", str(chain["templates"]),
           "--out", str(tmp_path / "fktc"))
    for f in ("dataset.json", "facts.parquet", "templates.parquet"):
        assert (tmp_path / "fktc" / f).read_bytes() == (chain["fktc"] / f).read_bytes(), f


def _build(*args: str) -> None:
    assert main(["build", *args, "--quiet"]) == 0, args


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo,
                   check=True, capture_output=True)


def test_dirty_flags_follow_git(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert prov.git_state(repo) == prov.NO_GIT
    _git(repo, "init", "-q")
    for name in ("graph.ttl", "dvc.lock", ".gitignore"):
        (repo / name).write_text("v1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "v1")
    assert prov.git_state(repo) == prov.CLEAN
    (repo / "new.txt").write_text("untracked\n")          # untracked: as git describe --dirty
    assert prov.git_state(repo) == prov.CLEAN
    (repo / "dvc.lock").write_text("v2\n")                # DVC's own bookkeeping
    (repo / ".gitignore").write_text("v2\n")
    assert prov.git_state(repo) == prov.CLEAN
    (repo / "graph.ttl").write_text("v2\n")               # a tracked input changed
    assert prov.git_state(repo) == prov.DIRTY
    assert prov.git_state(repo, ("dvc.lock",)) == prov.CLEAN


def test_a_build_records_the_working_tree_it_ran_in(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    graph = repo / "graph.ttl"
    graph.write_bytes(WIKIDATA_MINI.read_bytes())
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "graph")
    monkeypatch.chdir(repo)
    _build("facts", "--source", "rdf", "--path", "graph.ttl", "--relations", "P36",
           "--out", "clean")
    with graph.open("a") as fh:
        fh.write("# an edit not committed\n")
    _build("facts", "--source", "rdf", "--path", "graph.ttl", "--relations", "P36",
           "--out", "dirty")
    assert _prov(repo / "clean")["build"]["work_tree"] == prov.CLEAN
    assert _prov(repo / "dirty")["build"]["work_tree"] == prov.DIRTY
    assert _prov(repo / "clean")["source"]["path"] == "graph.ttl"
