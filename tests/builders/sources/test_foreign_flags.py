"""A flag one source owns, given to another: one line naming the flag and who reads it, exit 2,
nothing written (it used to be ignored: `--source csv --page-size 5` ran as if never given)."""
from __future__ import annotations

from pathlib import Path

import pytest

from factprobe.cli.app import main

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "kg" / "sample.ttl"


@pytest.fixture
def csv_graph(tmp_path: Path) -> Path:
    path = tmp_path / "g.csv"
    path.write_text("subject,relation,object\nParis,capitalOf,France\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("command, source, flags, needle", [
    ("facts", "csv", ["--page-size", "5"], "--page-size is read by --source wikidata, sparql "
                                           "and rdf only; --source csv does not take it"),
    ("facts", "csv", ["--prefix", "a=http://x/"], "--prefix is read by --source"),
    ("facts", "csv", ["--shard-mb", "8"], "--shard-mb is read by --source wikidata-dump only"),
    ("facts", "rdf", ["--executor", "ray"], "--executor is read by --source wikidata-dump only"),
    ("nobel", "rdf", ["--decompressor", "pigz"], "--decompressor is read by --source "
                                                   "wikidata-dump only; --source rdf"),
])
def test_another_sources_flag_is_refused(tmp_path, capsys, csv_graph, command, source, flags,
                                         needle):
    path = csv_graph if source == "csv" else SAMPLE
    argv = ["build", command, "--source", source, "--path", str(path), "--out",
            str(tmp_path / "out"), *flags]
    if command == "facts":
        argv += ["--relations", "all"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and needle in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_sources_own_flag_and_a_default_value_pass(tmp_path, capsys):
    # rdf reads --page-size's group (it is a graph source): taken
    assert main(["build", "facts", "--source", "rdf", "--path", str(SAMPLE), "--relations",
                 "rel:capital", "--page-size", "5", "--out", str(tmp_path / "a"),
                 "--quiet"]) == 0
    # the dump's flag at its default value changes nothing, so there is nothing to refuse
    assert main(["build", "facts", "--source", "rdf", "--path", str(SAMPLE), "--relations",
                 "rel:capital", "--shard-mb", "1024", "--out", str(tmp_path / "b"),
                 "--quiet"]) == 0
    assert (tmp_path / "a" / "dataset.json").is_file() and (tmp_path / "b" / "dataset.json").is_file()
