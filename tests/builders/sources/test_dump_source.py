"""``--source wikidata-dump`` against ``--source sparql`` on the same knowledge in a real Oxigraph
server: both dump formats, every compression, truthy semantics, literals, labels, aliases,
answers, relation metadata, dropped counts, Nobel laureates, and ``build aliases``."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.datasets.aliases import AliasConfig, build_aliases
from factprobe.builders.datasets.nobel import NobelConfig, build_nobel
from factprobe.builders.sources.iris import WELL_KNOWN
from factprobe.builders.sources.sparql import HttpEndpoint
from factprobe.builders.sources.wikidata_dump import DumpOptions
from factprobe.builders.sources.wikidata_dump.to_nobel import nobel_from_dump
from tests.conftest import oxigraph_serving
from tests.dump_world import RELATIONS, dump_facts, sparql_facts, table, write_world

FORMS = ["json", "json.bz2", "json.gz", "nt", "nt.bz2", "nt.gz"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("world")
    files = write_world(folder / "files")
    with oxigraph_serving(files["rdf"], folder / "db") as url:
        yield {"files": files, "url": url, "cache": folder / "cache"}


@pytest.fixture(scope="module")
def sparql_built(world, tmp_path_factory):
    out = tmp_path_factory.mktemp("sparql")
    return {fmt: sparql_facts(world["url"], out / fmt, world["cache"], date_format=fmt)
            for fmt in ("date", "year")}


def _manifest(folder):
    return json.loads((folder / "dataset.json").read_text())


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("date_format", ["date", "year"])
def test_dump_equals_sparql(world, sparql_built, tmp_path, form, date_format):
    ref = sparql_built[date_format]
    out = dump_facts(world["files"][form], tmp_path / "out", tmp_path / "work",
                     date_format=date_format)
    assert table(out, "facts").equals(table(ref, "facts"))
    # relations.parquet has no source column: the very same bytes
    assert (out / "relations.parquet").read_bytes() == (ref / "relations.parquet").read_bytes()
    mine, theirs = _manifest(out), _manifest(ref)
    assert mine["counts"] == theirs["counts"]
    assert {r["source"] for r in pq.read_table(out / "facts.parquet").to_pylist()} == {
        "wikidata-dump"}
    src = mine["source"]
    assert src["type"] == "wikidata-dump" and src["dump_date"] == "2024-01-01"
    assert src["format"] == ("Wikidata JSON dump" if form.startswith("json")
                             else "truthy N-Triples dump")
    assert len(src["sha256"]) == 64
    assert not list((tmp_path / "work").iterdir())       # the scratch shards are gone


def test_truthy_semantics_by_hand(world, tmp_path):
    """The rules of Wikidata's truthy triples, checked on rows written down by hand."""
    out = dump_facts(world["files"]["json.bz2"], tmp_path / "out", tmp_path / "work",
                     relations=("P36", "P37", "P19", "P569", "P31"))
    rows = {(r["relation_id"], r["subject_id"]): [] for r in
            pq.read_table(out / "facts.parquet").to_pylist()}
    for r in pq.read_table(out / "facts.parquet").to_pylist():
        rows[(r["relation_id"], r["subject_id"])].append(r["object"])
    assert rows[("P37", "Q142")] == ["French"]            # the preferred one only
    assert rows[("P36", "Q142")] == ["Paris"]             # the deprecated capital is gone
    assert rows[("P37", "Q29")] == ["Spanish"]            # "unknown value" is no fact
    assert ("P37", "Q17") not in rows                     # preferred "no value" wins
    assert rows[("P36", "Q17")] == ["Tokyo"]
    assert ("P19", "Q935") not in rows                    # only a deprecated statement
    assert rows[("P569", "Q935")] == ["1643-01-04"]       # Julian = Gregorian: one value
    assert rows[("P569", "Q859")] == ["-0427-01-01"]      # 428 BCE in XSD 1.1
    assert rows[("P569", "Q5000003")] == ["1950-05-01"]   # month precision
    assert rows[("P19", "Q42")] == ["Cambridge"]
    assert not [k for k in rows if k[1].startswith("P")]  # property entities: no subjects
    counts = _manifest(out)["counts"]["dropped"]
    assert counts["subjects_without_label"] == 1          # Q5000002 has only a German label
    assert counts["objects_without_label"] >= 1           # Sri Lanka's capital


def test_nobel_from_the_json_dump_equals_sparql(world, tmp_path):
    cfg = NobelConfig(out=str(tmp_path / "sparql"), progress=False)
    ref = build_nobel(HttpEndpoint(world["url"], cache_dir=str(world["cache"])), cfg,
                      dict(WELL_KNOWN), "sparql")
    out = nobel_from_dump(str(world["files"]["json.bz2"]),
                          NobelConfig(out=str(tmp_path / "dump"), progress=False),
                          DumpOptions(work_root=str(tmp_path / "work")))
    for name in ("laureates", "facts", "relations"):
        assert table(out, name).equals(table(ref, name)), name
    laureates = pq.read_table(out / "laureates.parquet").to_pylist()
    assert [(d["name"], d["birth_year"], d["award_years"]) for d in laureates] == [
        ("Marie Curie", 1867, [1903, 1911]), ("Albert Einstein", 1879, [1921]),
        ("Linus Pauling", 1901, [1954, 1962])]
    assert _manifest(out)["counts"] == _manifest(ref)["counts"]
    with pytest.raises(UserError, match="no qualifiers"):
        nobel_from_dump(str(world["files"]["nt.bz2"]),
                        NobelConfig(out=str(tmp_path / "nt"), progress=False),
                        DumpOptions(work_root=str(tmp_path / "work")))
    assert not (tmp_path / "nt").exists()


def test_build_aliases_reads_the_dump_not_the_network(world, tmp_path):
    facts = dump_facts(world["files"]["json.gz"], tmp_path / "facts", tmp_path / "work")
    # --lang fr: French names from the dump, the same as the graph's French altLabels/labels
    from_dump = build_aliases(AliasConfig(facts=str(facts), out=str(tmp_path / "a"),
                                          via="graph", lang="fr", cache_dir=str(tmp_path / "c"),
                                          progress=False))
    from_graph = build_aliases(AliasConfig(facts=str(facts), out=str(tmp_path / "b"),
                                           via="graph", endpoint=world["url"], lang="fr",
                                           cache_dir=str(tmp_path / "c"), progress=False))
    assert table(from_dump, "facts").equals(table(from_graph, "facts"))
    rows = {r["subject_id"]: r for r in pq.read_table(from_dump / "facts.parquet").to_pylist()}
    assert "République française" in rows["Q142"]["subject_aliases"]
    src = _manifest(from_dump)["source"]["aliases"]
    assert src["type"] == "wikidata-dump" and src["retrieved"] == []
    assert not (tmp_path / "c" / "wikidata-dump").exists() or not list(
        (tmp_path / "c" / "wikidata-dump").iterdir())


def test_relations_all(world, sparql_built, tmp_path):
    one = dump_facts(world["files"]["json"], tmp_path / "j", tmp_path / "w", relations=None)
    two = dump_facts(world["files"]["nt.gz"], tmp_path / "n", tmp_path / "w", relations=None)
    assert table(one, "facts").equals(table(two, "facts"))
    present = sorted({r["relation_id"] for r in pq.read_table(one / "facts.parquet")
                      .to_pylist()})
    assert set(RELATIONS) - {"P856", "P6254"} <= set(present)   # IRI objects have no label
    assert {"P31", "P166", "P279", "P21"} <= set(present)
    ref = sparql_facts(world["url"], tmp_path / "s", world["cache"], relations=tuple(present))
    assert table(one, "facts").equals(table(ref, "facts"))


def test_limit_keeps_the_first_facts_per_relation(world, tmp_path):
    out = dump_facts(world["files"]["json.bz2"], tmp_path / "o", tmp_path / "w",
                     relations=("P37",), limit=3)
    rows = pq.read_table(out / "facts.parquet").to_pylist()
    # the first three triples by subject then object: Q142 (France), Q183, Q29
    assert [(r["subject_id"], r["object_id"]) for r in rows] == [
        ("Q142", "Q150"), ("Q183", "Q188"), ("Q29", "Q1321")]


def test_unknown_relation_and_language(world, tmp_path):
    with pytest.raises(UserError, match="P999"):
        dump_facts(world["files"]["json.bz2"], tmp_path / "o", tmp_path / "w",
                   relations=("P36", "P999"))
    with pytest.raises(UserError, match="not a Wikidata property id"):
        dump_facts(world["files"]["json.bz2"], tmp_path / "o", tmp_path / "w",
                   relations=("rel:capital",))
    assert not (tmp_path / "o").exists()
    assert not list((tmp_path / "w").iterdir())


def test_card_names_the_dump_and_its_date(world, tmp_path):
    from factprobe.builders.publish.card import default_license
    from factprobe.builders.publish.card_sections import source_lines
    out = dump_facts(world["files"]["json.bz2"], tmp_path / "o", tmp_path / "w")
    manifest = _manifest(out)
    lines = "\n".join(source_lines(manifest["source"]))
    assert "Wikidata dump" in lines and "dated 2024-01-01" in lines
    assert manifest["source"]["sha256"] in lines
    assert "Wikidata" in default_license(manifest)[1]


def test_command_line_reads_dumps(world, tmp_path):
    import os
    import subprocess
    import sys
    env = {**os.environ, "FACTPROBE_CACHE_DIR": str(tmp_path / "cache")}

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "factprobe.cli.app", *args, "--quiet"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr

    dump = str(world["files"]["json.bz2"])
    cli("build", "facts", "--source", "wikidata-dump", "--path", dump, "--relations",
        "P36,P37", "--workers", "1", "--shard-mb", "1", "--out", str(tmp_path / "f"))
    cli("build", "aliases", "--facts", str(tmp_path / "f"), "--via", "graph", "--out",
        str(tmp_path / "a"))
    cli("build", "nobel", "--path", dump, "--out", str(tmp_path / "n"))   # a dump: detected
    assert _manifest(tmp_path / "n")["source"]["type"] == "wikidata-dump"
    assert table(tmp_path / "a", "facts").equals(table(tmp_path / "f", "facts"))
    # only the Ray block index may stay in the cache, and no build here used Ray
    assert not list((tmp_path / "cache" / "wikidata-dump").iterdir())
