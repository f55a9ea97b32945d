"""``build refresh`` and ``diff`` on two Wikidata-shaped snapshots built here, served by real
Oxigraph servers and written as dumps: the later snapshot moves a capital, merges Berlin into
another item, renames Rome, adds an alias to Bern, adds and removes official languages and
deletes a person; refresh + diff must report exactly those changes and nothing else."""
from __future__ import annotations

import copy
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factprobe.core.network import NetworkOptions
from factprobe.cli.app import main
from factprobe.builders.datasets.diff_report import DiffConfig, diff_datasets
from factprobe.builders.datasets.refresh import RefreshConfig, build_refresh
from factprobe.builders.sources.config import FactsConfig
from factprobe.builders.sources.wikidata_dump import DumpOptions
from tests import wikidata_dump_fixture as fx
from tests.conftest import oxigraph_serving
from tests.dump_world import dump_facts, sparql_facts, table, write_world

RELATIONS = ("P36", "P37", "P19", "P569")

# (change, relation, subject, object id, old object id, old value, new value): every change
# the later snapshot makes to the facts of RELATIONS, in the diff's order
EXPECTED = [
    ("subject_gone", "P19", "Q5000003", "Q1726", "", "", ""),
    ("object_changed", "P36", "Q142", "Q6602", "Q90", "", ""),
    ("object_id_changed", "P36", "Q183", "Q64999", "Q64", "", ""),
    ("object_label_changed", "P36", "Q38", "Q220", "", "Rome", "Roma Capitale"),
    ("object_aliases_changed", "P36", "Q39", "Q70", "", '["Berne"]', '["Berne", "Bundesstadt"]'),
    ("object_added", "P37", "Q29", "Q150", "", "", ""),
    ("object_removed", "P37", "Q39", "Q13199", "", "", ""),
    ("subject_gone", "P569", "Q5000003", "1950-05-01", "", "", ""),
]


def _qid(value) -> str | None:
    return ((value.datavalue or {}).get("value") or {}).get("id")


def later_snapshot() -> list:
    """The fixture's knowledge, a while later."""
    world = copy.deepcopy(fx.ENTITIES)
    by_id = {e.id: e for e in world}
    france = by_id["Q142"]
    for claim in france.claims:          # the capital moves to Versailles
        if claim.prop == "P36":
            claim.rank = "deprecated" if _qid(claim.value) == "Q90" else "normal"
    # Berlin merged into another item: the old id is gone (a redirect in Wikidata), facts that
    # pointed at it point at the new one
    world.remove(by_id["Q64"])
    world.append(fx._city("Q64999", "Berlin"))
    for claim in by_id["Q183"].claims:
        if claim.prop == "P36":
            claim.value = fx.item("Q64999")
    by_id["Q220"].labels["en"] = "Roma Capitale"
    by_id["Q70"].aliases["en"].append("Bundesstadt")
    by_id["Q29"].claims.append(fx.Claim("P37", fx.item("Q150")))
    by_id["Q39"].claims = [c for c in by_id["Q39"].claims
                           if not (c.prop == "P37" and _qid(c.value) == "Q13199")]
    world.remove(by_id["Q5000003"])      # a person deleted
    return world


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("snapshots")
    first = write_world(folder / "first")
    later = write_world(folder / "later", later_snapshot())
    with oxigraph_serving(first["rdf"], folder / "db1") as url1, \
            oxigraph_serving(later["rdf"], folder / "db2") as url2:
        original = sparql_facts(url1, folder / "original", folder / "cache", RELATIONS)
        yield {"first": first, "later": later, "url1": url1, "url2": url2, "folder": folder,
               "original": original}


def _refresh(snapshots, out, cache_dir=None, dump=None, **kw):
    cache = cache_dir or str(snapshots["folder"] / "cache")
    facts = FactsConfig(**{"source": "sparql", "relations": None, "out": str(out),
                           "endpoint": snapshots["url2"], "lang": "", "date_format": "",
                           "network": NetworkOptions(cache_dir=cache), "progress": False,
                           **({"options": {"wikidata-dump": dump}} if dump else {}), **kw})
    return build_refresh(RefreshConfig(str(snapshots["original"]), facts))


def _changes(diff):
    return [(r["change"], r["relation_id"], r["subject_id"], r["object_id"], r["old_object_id"],
             r["old_value"], r["new_value"]) for r in diff.to_pylist()]


def test_refresh_then_diff_reports_exactly_the_known_changes(snapshots, tmp_path):
    later = _refresh(snapshots, tmp_path / "later")
    diff, result, summary = diff_datasets(DiffConfig(str(snapshots["original"]), str(later),
                                                     str(tmp_path / "diff")))
    assert _changes(diff) == EXPECTED
    assert result["counts"]["subject_gone"] == 2 and result["rows"] == len(EXPECTED)
    assert result["per_relation"]["P36"]["object_id_changed"] == 1
    assert result["per_relation"]["P37"] == {**dict.fromkeys(result["counts"], 0),
                                             "object_added": 1, "object_removed": 1}
    # both snapshots named: the endpoints they were read from
    assert snapshots["url1"] in summary and snapshots["url2"] in summary
    written = pq.read_table(tmp_path / "diff" / "diff.parquet")
    assert written.equals(diff)
    assert (tmp_path / "diff" / "summary.md").read_text() == summary
    manifest = json.loads((tmp_path / "diff" / "dataset.json").read_text())
    assert manifest["kind"] == "diff" and manifest["counts"]["rows"] == len(EXPECTED)
    assert set(manifest["provenance"]["inputs"]) == {"old", "new"}


def test_refresh_keeps_only_the_datasets_pairs_and_counts_the_gone(snapshots, tmp_path):
    later = _refresh(snapshots, tmp_path / "later")
    manifest = json.loads((later / "dataset.json").read_text())
    refresh = manifest["counts"]["refresh"]
    assert refresh["gone"] == ["P19 Q5000003", "P569 Q5000003"]
    assert refresh["pairs"] == refresh["pairs_found"] + 2
    assert refresh["snapshot"]["endpoint"] == snapshots["url2"]
    assert manifest["provenance"]["inputs"]["refreshed"]["dataset"] == "original"
    facts = pq.read_table(later / "facts.parquet")
    pairs = set(zip(facts["relation_id"].to_pylist(), facts["subject_id"].to_pylist()))
    old = pq.read_table(snapshots["original"] / "facts.parquet")
    old_pairs = set(zip(old["relation_id"].to_pylist(), old["subject_id"].to_pylist()))
    assert pairs == old_pairs - {("P19", "Q5000003"), ("P569", "Q5000003")}
    # Spain's answers now hold both its languages
    spain = facts.filter(pq.ParquetFile(later / "facts.parquet").read().column(
        "subject_id").to_numpy(zero_copy_only=False) == "Q29").to_pylist()
    assert {tuple(r["answers"]) for r in spain if r["relation_id"] == "P37"} == {
        ("French", "Spanish")}


def test_same_snapshot_gives_no_changes_and_dump_equals_sparql(snapshots, tmp_path):
    again = _refresh(snapshots, tmp_path / "again", endpoint=snapshots["url1"])
    assert table(again, "facts").equals(table(snapshots["original"], "facts"))
    _, result, summary = diff_datasets(DiffConfig(str(snapshots["original"]), str(again)))
    assert result["rows"] == 0 and "the facts are the same" in summary
    # the later snapshot from its JSON dump and from SPARQL: the same dataset
    from_sparql = _refresh(snapshots, tmp_path / "sparql")
    opts = DumpOptions(work_root=str(tmp_path / "work"), workers=0)
    from_dump = _refresh(snapshots, tmp_path / "dump", source="wikidata-dump", endpoint=None,
                         path=str(snapshots["later"]["json.bz2"]), dump=opts)
    assert table(from_dump, "facts").equals(table(from_sparql, "facts"))
    assert table(from_dump, "relations").equals(table(from_sparql, "relations"))
    # --source wikidata with its endpoint overridden: Wikidata's ids checked, the same facts
    from_wikidata = _refresh(snapshots, tmp_path / "wikidata", source="wikidata")
    assert table(from_wikidata, "facts").equals(table(from_sparql, "facts"))
    assert pq.read_table(from_wikidata / "facts.parquet")["source"][0].as_py() == "wikidata"
    shot = json.loads((from_dump / "dataset.json").read_text())["counts"]["refresh"]["snapshot"]
    assert shot["path"] == str(snapshots["later"]["json.bz2"])


def test_command_line_refresh_and_diff(snapshots, tmp_path, capsys):
    out = tmp_path / "later"
    assert main(["build", "refresh", "--dataset", str(snapshots["original"]), "--source",
                 "sparql", "--endpoint", snapshots["url2"], "--cache-dir",
                 str(tmp_path / "cache"), "--out", str(out), "--quiet"]) == 0
    assert main(["diff", str(snapshots["original"]), str(out), "--format", "json",
                 "--out", str(tmp_path / "d")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rows"] == len(EXPECTED) and printed["counts"]["object_changed"] == 1
    assert main(["diff", str(snapshots["original"]), str(out)]) == 0
    text = capsys.readouterr().out
    assert "| P36 |" in text and "Roma Capitale" in text


def _fails(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


def test_errors_are_one_line_and_write_nothing(snapshots, tmp_path, capsys, closed_port_url):
    original = str(snapshots["original"])
    out = tmp_path / "out"
    base = ["build", "refresh", "--dataset", original, "--out", str(out), "--cache-dir",
            str(tmp_path / "cache"), "--retries", "0", "--quiet"]
    err = _fails(base + ["--source", "sparql", "--endpoint", closed_port_url], capsys)
    assert "reach" in err or "connection" in err
    # a dataset whose ids are not Wikidata's, refreshed from a Wikidata dump
    odd = tmp_path / "odd"
    t = pq.read_table(snapshots["original"] / "facts.parquet")
    odd.mkdir()
    pq.write_table(t.set_column(t.schema.get_field_index("subject_id"), "subject_id",
                                [["France"] + t["subject_id"].to_pylist()[1:]]),
                   odd / "facts.parquet")
    (odd / "dataset.json").write_text(json.dumps({"name": "odd", "kind": "facts"}))
    err = _fails(["build", "refresh", "--dataset", str(odd), "--out", str(out), "--source",
                  "wikidata-dump", "--path", str(snapshots["later"]["json"]), "--quiet"],
                 capsys)
    assert "'France'" in err and "not Wikidata item ids" in err
    # a dataset without subject ids
    pq.write_table(t.set_column(t.schema.get_field_index("subject_id"), "subject_id",
                                [[""] * t.num_rows]), odd / "facts.parquet")
    err = _fails(base[:2] + ["--dataset", str(odd)] + base[4:] +
                 ["--source", "sparql", "--endpoint", snapshots["url2"]], capsys)
    assert "no subject id" in err
    pq.write_table(t.set_column(t.schema.get_field_index("subject_id"), "subject_id",
                                pa.array([None] * t.num_rows, pa.string())), odd / "facts.parquet")
    err = _fails(base[:2] + ["--dataset", str(odd)] + base[4:] +
                 ["--source", "sparql", "--endpoint", snapshots["url2"]], capsys)
    assert "no subject id" in err
    # a relation the snapshot does not have
    pq.write_table(t.set_column(t.schema.get_field_index("relation_id"), "relation_id",
                                [["P99999"] * t.num_rows]), odd / "facts.parquet")
    err = _fails(base[:2] + ["--dataset", str(odd)] + base[4:] +
                 ["--source", "sparql", "--endpoint", snapshots["url2"]], capsys)
    assert "P99999" in err
    # diff of something that is no dataset
    err = _fails(["diff", original, str(tmp_path / "nowhere")], capsys)
    assert "nowhere" in err
    assert not out.exists()


def test_sparql_refresh_asks_for_the_datasets_subjects_only(snapshots, tmp_path, monkeypatch):
    """Wikidata's query service holds millions of facts of P19: refresh must ask for the
    dataset's subjects, in batches, and batching must not change a byte of the facts."""
    from urllib.parse import parse_qs

    from factprobe.builders.sources import graph
    from tests.conftest import FlakyProxy
    whole = _refresh(snapshots, tmp_path / "whole")
    monkeypatch.setattr(graph, "SUBJECT_BATCH", 2)
    proxy = FlakyProxy(snapshots["url2"])
    try:
        batched = _refresh(snapshots, tmp_path / "batched", endpoint=proxy.url,
                           cache_dir=str(tmp_path / "cache"))
    finally:
        proxy.close()
    assert table(batched, "facts").equals(table(whole, "facts"))
    queries = [parse_qs(r["body"].decode())["query"][0] for r in proxy.requests]
    reads = [q for q in queries if "SELECT ?s ?o" in q or "SELECT ?e ?p ?l" in q]
    assert reads and all("VALUES ?s {" in q for q in reads)
    asked = [q.count("<http://www.wikidata.org/entity/") for q in queries
             if "SELECT ?s ?o" in q]
    assert max(asked) == 2 and len(asked) > len(RELATIONS)


def test_the_refreshed_datasets_card_says_what_changed(snapshots, tmp_path):
    later = _refresh(snapshots, tmp_path / "later")
    changes = json.loads((later / "dataset.json").read_text())["counts"]["refresh"]["changes"]
    wanted = {}
    for change, *_ in EXPECTED:
        wanted[change] = wanted.get(change, 0) + 1
    assert {k: v for k, v in changes.items() if v} == wanted
    assert main(["publish", str(later), "--repo-id", "me/later", "--dry-run",
                 str(tmp_path / "hub"), "--quiet"]) == 0
    card = (tmp_path / "hub" / "README.md").read_text()
    assert "#### Changes since `original`" in card
    assert "| object\\_id\\_changed | 1 |" in card or "| object_id_changed | 1 |" in card
    assert "refreshed dataset `original`" in card


def test_diff_two_revisions_of_one_dvc_output(snapshots, tmp_path, monkeypatch, capsys):
    """``factprobe diff REV1:PATH REV2:PATH`` reads each revision through DVC."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    later = _refresh(snapshots, tmp_path / "later")
    repo = tmp_path / "repo"
    repo.mkdir()
    dvc = str(Path(sys.executable).with_name("dvc"))

    def sh(*argv):
        subprocess.run(argv, cwd=repo, check=True, capture_output=True)
    sh("git", "init", "-q")
    sh("git", "config", "user.email", "t@example.org")
    sh("git", "config", "user.name", "t")
    sh(dvc, "init", "-q")
    for tag, folder in (("v1", snapshots["original"]), ("v2", later)):
        shutil.rmtree(repo / "data" / "x", ignore_errors=True)
        shutil.copytree(folder, repo / "data" / "x")
        sh(dvc, "add", "-q", "data/x")
        sh("git", "add", "-A")
        sh("git", "commit", "-qm", tag)
        sh("git", "tag", tag)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("FACTPROBE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["diff", "v1:data/x", "v2:data/x", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == len(EXPECTED)
    err = _fails(["diff", "v0:data/x", "v2:data/x"], capsys)
    assert "v0" in err
    err = _fails(["diff", "v1:data/y", "v2:data/x"], capsys)
    assert "no folder data/y" in err
