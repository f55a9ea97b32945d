"""``build refresh`` of LAMA's Google-RE facts by the Wikidata ids the release gives beside the
Freebase ones (``sub_w``, ``obj_w``), against the two Wikidata-shaped snapshots of
test_refresh_diff (real Oxigraph servers): the Freebase-named pairs are read as (P19 / P569,
sub_w), the refreshed facts keep Google-RE's relation ids, a pair without sub_w is counted as
unresolved, and the diff reports exactly the known change (a person deleted), nothing else.
Before, Google-RE's relations were refused (by the Wikidata sources as no property ids, through
SPARQL as no IRI), and its Freebase ids are in no Wikidata snapshot anyway."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.network import NetworkOptions
from factprobe.builders.datasets.build_facts import build_facts
from factprobe.builders.datasets.diff_report import DiffConfig, diff_datasets
from factprobe.builders.datasets.refresh import RefreshConfig, build_refresh
from factprobe.builders.sources.config import FactsConfig
from tests.builders.datasets.test_refresh_diff import later_snapshot
from tests.conftest import oxigraph_serving
from tests.dump_world import write_world

# (relation, sub, sub_label, sub_w, obj, obj_label, obj_w): Google-RE lines in the release's
# fields; the people are the fixture world's (May Person is deleted in the later snapshot), the
# last of each relation has no Wikidata id, as most of the release's subjects
LINES = {
    "place_of_birth": [
        ("/m/0jcx", "Albert Einstein", "Q937", "/m/0g4bt", "Ulm", "Q3012"),
        ("/m/0282x", "Douglas Adams", "Q42", "/m/0w2r", "Cambridge", "Q350"),
        ("/m/0may", "May Person", "Q5000003", "/m/02h6fbs", "Munich", "Q1726"),
        ("/m/047fprg", "Khatchig Mouradian", None, "/m/04hqz", "Lebanon", "Q822")],
    "date_of_birth": [
        ("/m/0jcx", "Albert Einstein", "Q937", "1879", "1879", None),
        ("/m/0282x", "Douglas Adams", "Q42", "1952", "1952", None),
        ("/m/0may", "May Person", "Q5000003", "1950", "1950", None),
        ("/m/01j465d", "Juan Serrano", None, "1935", "1935", None)],
}


def _release(root):
    folder = root / "Google_RE"
    folder.mkdir(parents=True)
    for rel, lines in LINES.items():
        rows = [{"pred": f"/people/person/{rel}", "sub": sub, "obj": obj, "evidences": [],
                 "judgments": [{"rater": "1", "judgment": "yes"}], "sub_w": sub_w,
                 "sub_label": label, "sub_aliases": [], "obj_w": obj_w, "obj_label": obj_label,
                 "obj_aliases": [], "uuid": f"{rel}-{i}",
                 "masked_sentences": [f"{label} was born in [MASK] ."]}
                for i, (sub, label, sub_w, obj, obj_label, obj_w) in enumerate(lines)]
        (folder / f"{rel}_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("google-re")
    first = write_world(folder / "first")
    later = write_world(folder / "later", later_snapshot())
    with oxigraph_serving(first["rdf"], folder / "db1") as url1, \
            oxigraph_serving(later["rdf"], folder / "db2") as url2:
        dataset = folder / "gre-facts"
        build_facts(FactsConfig(source="lama", relations=None, out=str(dataset),
                                path=str(_release(folder / "lama" / "data")), progress=False))
        yield {"folder": folder, "url1": url1, "url2": url2, "dataset": dataset}


def _refresh(world, out, endpoint):
    facts = FactsConfig(source="sparql", relations=None, out=str(out), endpoint=endpoint,
                        lang="", date_format="", progress=False,
                        network=NetworkOptions(cache_dir=str(world["folder"] / "cache")))
    return build_refresh(RefreshConfig(str(world["dataset"]), facts))


def test_google_re_is_refreshed_by_the_release_wikidata_ids(world, tmp_path):
    out = _refresh(world, tmp_path / "later", world["url2"])
    manifest = json.loads((out / "dataset.json").read_text())
    refresh = manifest["counts"]["refresh"]
    assert refresh["wikidata_properties"] == {"date_of_birth": "P569", "place_of_birth": "P19"}
    assert refresh["labels"]["resolved"] == 6 and refresh["labels"]["unresolved"] == 2
    assert sorted(refresh["labels"]["unresolved_labels"]) == [
        "date_of_birth /m/01j465d", "place_of_birth /m/047fprg"]
    assert refresh["pairs"] == 6 and refresh["pairs_gone"] == 2
    assert sorted(refresh["gone"]) == ["date_of_birth Q5000003", "place_of_birth Q5000003"]
    assert manifest["params"]["subjects_by_wikidata_ids"] == "sub_w"
    facts = {(r["relation_id"], r["subject_id"]): r for r in
             pq.read_table(out / "facts.parquet").to_pylist()}
    # Google-RE's relation ids kept (its templates still apply), Wikidata's entity ids, the
    # birth dates as years, as the release gives them
    assert {k: facts[k]["object_id"] for k in facts} == {
        ("place_of_birth", "Q937"): "Q3012", ("place_of_birth", "Q42"): "Q350",
        ("date_of_birth", "Q937"): "1879", ("date_of_birth", "Q42"): "1952"}
    from factprobe.core.tables import fact_id
    assert all(r["fact_id"] == fact_id(r["relation_id"], r["subject_id"], r["object_id"])
               for r in facts.values())
    relations = pq.read_table(out / "relations.parquet")["relation_id"].to_pylist()
    assert sorted(relations) == ["date_of_birth", "place_of_birth"]


def test_diff_reports_only_the_known_change(world, tmp_path):
    same = _refresh(world, tmp_path / "same", world["url1"])
    diff, result, _ = diff_datasets(DiffConfig(str(world["dataset"]), str(same)))
    assert result["rows"] == 0, diff.to_pylist()
    later = _refresh(world, tmp_path / "later", world["url2"])
    diff, result, summary = diff_datasets(DiffConfig(str(world["dataset"]), str(later)))
    rows = sorted((r["change"], r["relation_id"], r["subject_id"], r["object_id"])
                  for r in diff.to_pylist())
    assert rows == [("subject_gone", "date_of_birth", "Q5000003", "1950"),
                    ("subject_gone", "place_of_birth", "Q5000003", "Q1726")]
    assert result["labels"]["pairs_left_out"] == 2
    assert "Google-RE, named by Freebase ids" in summary
    manifest = json.loads((later / "dataset.json").read_text())
    assert manifest["counts"]["refresh"]["changes"] == result["counts"]


def test_google_re_without_any_wikidata_id_is_one_line(world, tmp_path):
    release = tmp_path / "lama" / "data" / "Google_RE"
    release.mkdir(parents=True)
    src = world["folder"] / "lama" / "data" / "Google_RE" / "date_of_birth_test.jsonl"
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    (release / "date_of_birth_test.jsonl").write_text(
        "".join(json.dumps({**x, "sub_w": None}) + "\n" for x in lines))
    dataset = tmp_path / "none"
    build_facts(FactsConfig(source="lama", relations=None, out=str(dataset),
                            path=str(release.parent), progress=False))
    facts = FactsConfig(source="sparql", relations=None, out=str(tmp_path / "r"),
                        endpoint=world["url1"], lang="", date_format="", progress=False,
                        network=NetworkOptions(cache_dir=str(world["folder"] / "cache")))
    with pytest.raises(UserError, match=r"none of its 4 Google-RE \(relation, subject\) pairs "
                                        r"has a Wikidata id \(sub_w\)") as err:
        build_refresh(RefreshConfig(str(dataset), facts))
    assert "\n" not in str(err.value) and not (tmp_path / "r").exists()
