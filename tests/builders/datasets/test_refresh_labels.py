"""``build refresh`` of a dataset named by labels (a ParaRel import: no entity ids) against the
two Wikidata-shaped snapshots of test_refresh_diff (real Oxigraph servers, and the dump reader):
each (relation, label) is resolved to the one subject of the relation bearing it, the
unresolved, ambiguous and malformed ones counted and listed, and the diff reports the known
changes seen through labels, nothing else. Hostile labels stay data, never query text."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.network import NetworkOptions
from factprobe.cli.app import main
from factprobe.builders.datasets.build_facts import build_facts
from factprobe.builders.datasets.diff_report import DiffConfig, diff_datasets
from factprobe.builders.datasets.refresh import RefreshConfig, build_refresh
from factprobe.builders.sources.config import FactsConfig
from factprobe.builders.sources.wikidata_dump import DumpOptions
from tests import wikidata_dump_fixture as fx
from tests.builders.datasets.test_refresh_diff import later_snapshot
from tests.conftest import oxigraph_serving
from tests.dump_world import sparql_facts, table, write_world

RELATIONS = ("P36", "P37", "P19")
HOSTILE = 'Evil" } ?s ?p ?o . } #\\\nDROP ALL'
LONG = "x" * 401
# (change, relation, subject id, object id, old object id): what the later snapshot changed,
# as a dataset of labels sees it. Berlin merged into another item named Berlin: no change seen;
# Rome renamed: the old name is no name of the new object, so the object changed; the deleted
# person's label names nobody: left out, not gone; Japan is named twice: left out
EXPECTED = [
    ("object_changed", "P36", "Q142", "Q6602", "Paris"),
    ("object_changed", "P36", "Q38", "Q220", "Rome"),
    ("object_added", "P37", "Q29", "Q150", ""),
    ("object_removed", "P37", "Q39", "Romansh", ""),
]


def _later() -> list:
    world = later_snapshot()
    # a second subject of P36 named Japan: the label is ambiguous, never guessed
    world.append(fx.Entity("Q5000010", {"en": "Japan"}, claims=[fx.Claim("P36", fx.item("Q1490"))]))
    return world


def _write_pararel(original, root, extra=()):
    """The facts of ``original`` as ParaRel releases them: labels only, one file a relation."""
    facts = pq.read_table(original / "facts.parquet").to_pylist()
    folder = root / "trex_lms_vocab"
    folder.mkdir(parents=True)
    for rel in RELATIONS:
        lines = [{"sub_label": f["subject"], "obj_label": f["object"], "uuid": f"u{i}"}
                 for i, f in enumerate(facts) if f["relation_id"] == rel]
        lines += [{"sub_label": s, "obj_label": o, "uuid": "x"} for r, s, o in extra if r == rel]
        (folder / f"{rel}.jsonl").write_text(
            "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("labels")
    first = write_world(folder / "first")
    later = write_world(folder / "later", _later())
    with oxigraph_serving(first["rdf"], folder / "db1") as url1, \
            oxigraph_serving(later["rdf"], folder / "db2") as url2:
        original = sparql_facts(url1, folder / "original", folder / "cache", RELATIONS)
        release = _write_pararel(original, folder / "pararel" / "data", [
            ("P36", "Atlantis", "Poseidonis"), ("P36", HOSTILE, "Nowhere"),
            ("P19", LONG, "Ulm")])
        labels = folder / "pr-facts"
        build_facts(FactsConfig(source="pararel", relations=None, out=str(labels),
                                path=str(release), progress=False))
        yield {"folder": folder, "url1": url1, "url2": url2, "later": later,
               "labels": labels, "original": original}


def _refresh(world, out, source="sparql", **kw):
    opts = {"wikidata-dump": DumpOptions(work_root=str(out.parent / "work"), workers=0)} \
        if source == "wikidata-dump" else {}
    facts = FactsConfig(**{"source": source, "relations": None, "out": str(out),
                           "endpoint": world["url2"] if source == "sparql" else None,
                           "path": str(world["later"]["json"]) if source == "wikidata-dump"
                           else None, "lang": "", "date_format": "",
                           "network": NetworkOptions(cache_dir=str(world["folder"] / "cache")),
                           "progress": False, "options": opts, **kw})
    return build_refresh(RefreshConfig(str(world["labels"]), facts))


def test_labels_resolved_counted_and_listed(world, tmp_path):
    out = _refresh(world, tmp_path / "later")
    manifest = json.loads((out / "dataset.json").read_text())
    labels = manifest["counts"]["refresh"]["labels"]
    old = pq.read_table(world["labels"] / "facts.parquet")
    n_labels = len(set(zip(old["relation_id"].to_pylist(), old["subject_id"].to_pylist())))
    assert labels["labels"] == n_labels
    assert labels["unresolved"] == 3 and labels["ambiguous"] == 1 and labels["malformed"] == 1
    assert labels["resolved"] == n_labels - 5 and labels["by_alias"] == 0
    assert sorted(labels["unresolved_labels"]) == sorted(
        ["P19 May Person", "P36 Atlantis", f"P36 {HOSTILE}"])
    assert labels["ambiguous_labels"] == {"P36 Japan": ["Q17", "Q5000010"]}
    assert labels["malformed_labels"] == [f"P19 {LONG}"]
    assert manifest["params"]["subjects_by_label"] is True
    resolved = pq.read_table(out / "resolved.parquet").to_pylist()
    assert {(r["subject"], r["subject_id"]) for r in resolved if r["relation_id"] == "P36"
            and r["status"] == "resolved"} >= {("France", "Q142"), ("Germany", "Q183")}
    facts = pq.read_table(out / "facts.parquet")
    assert all(s.startswith("Q") for s in facts["subject_id"].to_pylist())
    # every resolved pair is refreshed: the labels found subjects of the relation
    assert manifest["counts"]["refresh"]["pairs_gone"] == 0
    assert manifest["provenance"]["inputs"]["refreshed"]["dataset"] == "pr-facts"


def test_diff_reports_the_changes_seen_through_labels(world, tmp_path):
    out = _refresh(world, tmp_path / "later")
    diff, result, summary = diff_datasets(DiffConfig(str(world["labels"]), str(out),
                                                     str(tmp_path / "diff")))
    rows = [(r["change"], r["relation_id"], r["subject_id"], r["object_id"],
             r["old_object_id"]) for r in diff.to_pylist()]
    assert rows == EXPECTED
    assert result["labels"]["pairs_left_out"] == 5
    assert "OLD names its subjects by label" in summary and "left out" in summary
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["counts"]["refresh"]["changes"] == result["counts"]
    written = json.loads((tmp_path / "diff" / "dataset.json").read_text())
    assert written["counts"]["labels"]["ambiguous"] == 1


def test_same_snapshot_no_changes_and_dump_equals_sparql(world, tmp_path):
    same = _refresh(world, tmp_path / "same", endpoint=world["url1"])
    diff, result, _ = diff_datasets(DiffConfig(str(world["labels"]), str(same)))
    assert result["rows"] == 0, diff.to_pylist()
    by_sparql = _refresh(world, tmp_path / "sparql")
    by_dump = _refresh(world, tmp_path / "dump", source="wikidata-dump")
    assert table(by_dump, "facts").equals(table(by_sparql, "facts"))
    assert table(by_dump, "resolved").equals(table(by_sparql, "resolved"))


def test_hostile_labels_are_data_not_query(world, tmp_path):
    """A label that closes the literal and adds query text matches nothing, and the query
    stays one valid query: the endpoint answered (nothing was refused as malformed SPARQL)."""
    out = _refresh(world, tmp_path / "later")
    resolved = {r["subject"]: r for r in pq.read_table(out / "resolved.parquet").to_pylist()}
    assert resolved[HOSTILE]["status"] == "unresolved"
    assert resolved[LONG]["status"] == "malformed"


def test_nothing_resolved_is_one_line_and_writes_nothing(world, tmp_path, capsys):
    root = tmp_path / "odd" / "data"
    (root / "trex_lms_vocab").mkdir(parents=True)
    (root / "trex_lms_vocab" / "P36.jsonl").write_text(
        json.dumps({"sub_label": "Atlantis", "obj_label": "Poseidonis"}) + "\n")
    odd = tmp_path / "odd-facts"
    build_facts(FactsConfig(source="pararel", relations=None, out=str(odd), path=str(root),
                            progress=False))
    out = tmp_path / "out"
    code = main(["build", "refresh", "--dataset", str(odd), "--source", "sparql", "--endpoint",
                 world["url2"], "--cache-dir", str(tmp_path / "c"), "--out", str(out),
                 "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "names its subjects by label" in err and "1 unresolved" in err
    assert not out.exists()
    with pytest.raises(UserError, match="1 unresolved"):
        _refresh({**world, "labels": odd}, tmp_path / "dump", source="wikidata-dump")


def test_command_line_refresh_of_an_import(world, tmp_path, capsys):
    out = tmp_path / "later"
    assert main(["build", "refresh", "--dataset", str(world["labels"]), "--source", "sparql",
                 "--endpoint", world["url2"], "--cache-dir", str(tmp_path / "c"), "--out",
                 str(out)]) == 0
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    counts = json.loads((out / "dataset.json").read_text())["counts"]["refresh"]["labels"]
    assert (f"subjects by label: resolved {counts['resolved']}, unresolved 3, ambiguous 1, "
            f"malformed 1 of {counts['labels']}") in printed


def test_wikidata_source_resolves_as_sparql(world, tmp_path):
    """--source wikidata asks the query service the same label query (here pointed at the
    local server): the same datasets."""
    by_sparql = _refresh(world, tmp_path / "sparql")
    by_wikidata = _refresh(world, tmp_path / "wd", source="wikidata", endpoint=world["url2"])
    assert table(by_wikidata, "facts").equals(table(by_sparql, "facts"))
    assert table(by_wikidata, "resolved").equals(table(by_sparql, "resolved"))


def test_the_authors_fktc_files_are_named_by_label_too(world, tmp_path):
    from pathlib import Path
    from factprobe.builders.datasets.fktc_import import FktcImportConfig, import_fktc
    fktc = import_fktc(FktcImportConfig(
        path=str(Path(__file__).resolve().parents[2] / "data" / "fktc"),
        out=str(tmp_path / "fktc")))
    with pytest.raises(UserError, match="names its subjects by label"):
        _refresh({**world, "labels": fktc}, tmp_path / "out")


def test_refreshed_import_feeds_the_builders_and_its_card(world, tmp_path):
    from factprobe.builders.datasets.mc import MCConfig, build_mc
    from factprobe.builders.publish.card import CardOptions
    from factprobe.builders.publish.export import export_hub_folder
    out = _refresh(world, tmp_path / "later")
    mc = build_mc(MCConfig(facts=str(out), out=str(tmp_path / "mc"), choices=2, min_facts=1,
                           min_objects=2, train=1, test=1))
    assert pq.read_table(mc / "facts.parquet").num_rows > 0
    hub = export_hub_folder(out, tmp_path / "hub", CardOptions(repo_id="me/pr-later"))
    card = (hub / "README.md").read_text()
    assert "`ambiguous`" in card and "resolved" in card
    assert "names its subjects by label" in card and "to several (never guessed)" in card
