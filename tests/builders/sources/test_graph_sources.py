"""Facts and Nobel laureates from a real Oxigraph server over HTTP and from an RDF file."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.retry import RetryPolicy
from factprobe.builders.datasets.build_facts import FactsConfig, build_facts
from factprobe.builders.datasets.nobel import NobelConfig, build_nobel
from factprobe.builders.sources.iris import WELL_KNOWN
from factprobe.builders.sources.graph_flags import GraphOptions
from factprobe.core.network import NetworkOptions
from factprobe.builders.sources.sparql import HttpEndpoint, LocalGraph
from tests.conftest import WIKIDATA_MINI


def _facts(folder: Path) -> list[dict]:
    return pq.read_table(folder / "facts.parquet").to_pylist()


def _sparql_cfg(url, tmp_path, contact=None, **kw):
    base = dict(source="sparql", endpoint=url, relations=("P36", "P37"), out=str(tmp_path / "out"),
                network=NetworkOptions(cache_dir=str(tmp_path / "cache"), retries=2,
                                       contact=contact),
                progress=False)
    base.update(kw)
    return FactsConfig(**base)


def test_sparql_facts_labels_aliases_answers(oxigraph_url, tmp_path):
    out = build_facts(_sparql_cfg(oxigraph_url, tmp_path))
    rows = {(r["relation_id"], r["subject_id"], r["object_id"]): r for r in _facts(out)}
    # 6 capitals with English labels + 9 official languages; Sri Lanka's capital has no
    # English label and is dropped.
    assert len(rows) == 15
    assert ("P36", "Q854", "Q41963") not in rows
    paris = rows[("P36", "Q142", "Q90")]
    assert (paris["subject"], paris["object"]) == ("France", "Paris")
    assert paris["subject_aliases"] == ["French Republic"]   # the French altLabel is not English
    assert paris["object_aliases"] == ["City of Light"]
    swiss = rows[("P37", "Q39", "Q13199")]
    assert swiss["answers"] == ["French", "German", "Italian", "Romansh"]
    germany = rows[("P36", "Q183", "Q64")]
    assert germany["subject_aliases"] == ["FRG", "Federal Republic of Germany"]
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["counts"]["dropped"] == {"rows_without_object_label": 1,
                                             "objects_without_label": 1}
    assert manifest["source"]["endpoint"] == oxigraph_url
    assert set(manifest["source"]["query_sha256"]) == {"P36", "P37"}
    assert len(manifest["source"]["retrieved"]) == 1
    rel = pq.read_table(out / "relations.parquet").to_pylist()
    assert rel[0]["label"] == "capital"
    assert rel[0]["description"] == "seat of government of a country"


def test_rdf_file_gives_the_same_facts_as_the_server(oxigraph_url, tmp_path):
    http_out = build_facts(_sparql_cfg(oxigraph_url, tmp_path / "a"))
    rdf_out = build_facts(FactsConfig(source="rdf", path=str(WIKIDATA_MINI),
                                      relations=("P36", "P37"), out=str(tmp_path / "b"),
                                      progress=False))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "source"} for r in rows]  # noqa
    assert strip(_facts(http_out)) == strip(_facts(rdf_out))


def test_rebuild_is_byte_identical_and_served_from_cache(flaky_proxy, tmp_path):
    cfg = _sparql_cfg(flaky_proxy.url, tmp_path, out=str(tmp_path / "one"))
    build_facts(cfg)
    first_requests = len(flaky_proxy.requests)
    assert first_requests > 0
    build_facts(_sparql_cfg(flaky_proxy.url, tmp_path, out=str(tmp_path / "two")))
    assert len(flaky_proxy.requests) == first_requests  # nothing asked twice
    for name in ("facts.parquet", "relations.parquet"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    one = json.loads((tmp_path / "one" / "dataset.json").read_text())
    two = json.loads((tmp_path / "two" / "dataset.json").read_text())
    one.pop("name"), two.pop("name")
    assert one == two


def test_user_agent_and_429_retry_after(flaky_proxy, tmp_path):
    flaky_proxy.script = [(429, {"Retry-After": "1"}), (503, {})]
    start = time.monotonic()
    build_facts(_sparql_cfg(flaky_proxy.url, tmp_path, relations=("P36",), contact="me@lab.org"))
    first, second, third = flaky_proxy.requests[:3]
    assert second["time"] - first["time"] >= 0.95       # waited as Retry-After said
    assert third["time"] - second["time"] >= 0.9        # then backed off after the 503
    assert time.monotonic() - start < 15
    agent = first["headers"]["User-Agent"]
    assert agent.startswith("factprobe/") and "me@lab.org" in agent


def test_failing_endpoint_gives_up_after_bounded_retries(flaky_proxy, tmp_path):
    flaky_proxy.script = [(500, {})] * 10
    with pytest.raises(UserError, match="failed after 3 attempts"):
        build_facts(_sparql_cfg(flaky_proxy.url, tmp_path, relations=("P36",)))
    assert len(flaky_proxy.requests) == 3
    assert not (tmp_path / "out").exists()
    assert not any((tmp_path / "cache").rglob("*.json"))


def test_retry_after_longer_than_allowed_is_reported(flaky_proxy, tmp_path):
    flaky_proxy.script = [(429, {"Retry-After": "3600"})]
    endpoint = HttpEndpoint(flaky_proxy.url, cache_dir=None, policy=RetryPolicy(retries=2))
    with pytest.raises(UserError, match="Retry-After"):
        endpoint.select("SELECT * WHERE { ?s ?p ?o } LIMIT 1")


def test_unreachable_endpoint_is_quick_and_clear(closed_port_url, tmp_path):
    start = time.monotonic()
    with pytest.raises(UserError, match="cannot reach"):
        build_facts(_sparql_cfg(closed_port_url, tmp_path))
    assert time.monotonic() - start < 20


def test_unknown_relation_names_the_present_ones(oxigraph_url, tmp_path):
    with pytest.raises(UserError) as err:
        build_facts(_sparql_cfg(oxigraph_url, tmp_path, relations=("P36", "P999")))
    assert "P999" in str(err.value) and "P37" in str(err.value)


def test_limit_caps_facts_per_relation(oxigraph_url, tmp_path):
    out = build_facts(_sparql_cfg(oxigraph_url, tmp_path, relations=("P37",), limit=4,
                                  options={"graph": GraphOptions(page_size=3)}))
    assert len(_facts(out)) == 4


def test_nobel_over_http(oxigraph_url, tmp_path):
    endpoint = HttpEndpoint(oxigraph_url, cache_dir=str(tmp_path / "cache"))
    out = build_nobel(endpoint, NobelConfig(out=str(tmp_path / "nobel"), progress=False),
                      dict(WELL_KNOWN), "sparql")
    laureates = pq.read_table(out / "laureates.parquet").to_pylist()
    assert [(d["name"], d["birth_year"], d["award_years"]) for d in laureates] == [
        ("Marie Curie", 1867, [1903, 1911]),
        ("Albert Einstein", 1879, [1921]),
        ("Linus Pauling", 1901, [1954, 1962]),
    ]
    assert laureates[0]["fields"] == ["Nobel Prize in Chemistry", "Nobel Prize in Physics"]
    assert laureates[0]["gender"] == "female"
    facts = pq.read_table(out / "facts.parquet").to_pylist()
    assert [(f["subject"], f["object"], f["relation_id"]) for f in facts] == [
        ("Marie Curie", "1867", "P569"), ("Albert Einstein", "1879", "P569"),
        ("Linus Pauling", "1901", "P569")]
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    # the Red Cross has no birth date; the 2031 laureate is past max_year; Tao has no Nobel
    assert counts["dropped"]["no_birth_year"] == 1
    assert counts["dropped"]["no_award_up_to_max_year"] == 1
    assert counts["dropped"]["several_birth_years"] == 1


def test_malformed_rdf_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix ex: <http://ex.org/> .\nex:a ex:b \n")
    with pytest.raises(UserError, match="bad.ttl"):
        LocalGraph(bad)


def test_relation_names_cannot_inject_sparql(tmp_path):
    with pytest.raises(UserError, match="not a usable IRI"):
        build_facts(FactsConfig(source="rdf", path=str(WIKIDATA_MINI),
                                relations=("<http://x.org/a> } ",), out=str(tmp_path / "o"),
                                progress=False))


def test_wikidata_source_with_a_mirror_endpoint(oxigraph_url, tmp_path):
    out = build_facts(_sparql_cfg(oxigraph_url, tmp_path, source="wikidata", relations=("P36",)))
    facts = _facts(out)
    assert {f["source"] for f in facts} == {"wikidata"} and len(facts) == 6
    with pytest.raises(UserError, match="not Wikidata property ids"):
        build_facts(_sparql_cfg(oxigraph_url, tmp_path, source="wikidata",
                                relations=("P36", "rel:capital"),
                                options={"graph": GraphOptions(prefixes={"rel": "http://x/"})}))


def test_literal_objects_in_date_and_year_form(oxigraph_url, tmp_path):
    day = _facts(build_facts(_sparql_cfg(oxigraph_url, tmp_path / "d", relations=("P569",))))
    year = _facts(build_facts(_sparql_cfg(oxigraph_url, tmp_path / "y", relations=("P569",),
                                          date_format="year")))
    einstein = [f for f in day if f["subject_id"] == "Q937"][0]
    assert einstein["object"] == "1879-03-14"
    assert [f for f in year if f["subject_id"] == "Q937"][0]["object"] == "1879"
    rel = pq.read_table(tmp_path / "d" / "out" / "relations.parquet").to_pylist()[0]
    assert rel["object_type"] == "xsd:dateTime"
