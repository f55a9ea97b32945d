"""`build aliases` through Wikidata's Action API (a local replay server) and the source graph."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.datasets.aliases import AliasConfig, build_aliases
from factprobe.builders.datasets.build_facts import FactsConfig, build_facts
from tests.conftest import WIKIDATA_MINI
from tests.wbapi_server import FakeWikidataApi


@pytest.fixture
def facts_dir(tmp_path):
    return build_facts(FactsConfig(source="rdf", path=str(WIKIDATA_MINI), relations=("P36",),
                                   out=str(tmp_path / "facts"), progress=False))


@pytest.fixture
def api():
    server = FakeWikidataApi({
        "Q142": {"labels": {"en": "France"}, "aliases": {"en": ["FR", "fr", "French Republic"],
                                                         "de": ["Frankreich"]}},
        "Q90": {"labels": {"en": "Paris"}, "aliases": {"en": ["Paris, France", "Paris"]}},
        "Q17": {"labels": {"en": "Japan"}, "aliases": {"en": ["JP"]}},
    }, {}).start()
    yield server
    server.stop()


def _rows(folder):
    return {r["subject_id"]: r for r in pq.read_table(folder / "facts.parquet").to_pylist()}


def test_via_wikidata_merges_api_aliases(facts_dir, api, tmp_path):
    out = build_aliases(AliasConfig(facts=str(facts_dir), out=str(tmp_path / "al"),
                                    api_url=api.url, cache_dir=str(tmp_path / "cache"),
                                    progress=False))
    rows = _rows(out)
    # graph aliases kept, API aliases added, the label itself and other languages left out
    assert rows["Q142"]["subject_aliases"] == ["FR", "French Republic", "fr"]
    assert rows["Q142"]["object_aliases"] == ["City of Light", "Paris, France"]
    assert rows["Q17"]["subject_aliases"] == ["JP", "Nippon"]
    asked = sorted(i for r in api.requests for i in r.ids)
    assert asked == sorted({r["subject_id"] for r in rows.values()} |
                           {r["object_id"] for r in rows.values()})
    assert all(r.params["maxlag"] == "5" for r in api.requests)
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["source"]["aliases"]["api"] == "wbgetentities"
    assert manifest["params"]["aliases"]["via"] == "wikidata"
    # the other columns are untouched
    before = pq.read_table(facts_dir / "facts.parquet").drop(["subject_aliases", "object_aliases"])
    after = pq.read_table(out / "facts.parquet").drop(["subject_aliases", "object_aliases"])
    assert before.equals(after)


def test_via_graph_reads_altlabels_from_the_recorded_source(tmp_path):
    csv = tmp_path / "t.csv"
    pd.DataFrame({"subject": ["Q142", "Q183"], "relation": ["P36", "P36"],
                  "object": ["Q90", "Q64"], "subject_label": ["France", "Germany"],
                  "object_label": ["Paris", "Berlin"]}).to_csv(csv, index=False)
    facts = build_facts(FactsConfig(source="csv", path=str(csv), relations=None,
                                    out=str(tmp_path / "facts"), progress=False))
    with pytest.raises(UserError, match="--path FILE or --endpoint URL"):
        build_aliases(AliasConfig(facts=str(facts), out=str(tmp_path / "x"), via="graph"))
    out = build_aliases(AliasConfig(facts=str(facts), out=str(tmp_path / "al"), via="graph",
                                    path=str(WIKIDATA_MINI), progress=False))
    rows = _rows(out)
    assert rows["Q183"]["subject_aliases"] == ["FRG", "Federal Republic of Germany"]
    assert rows["Q142"]["object_aliases"] == ["City of Light"]


def test_no_wikidata_ids(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("subject,relation,object\nalpha,knows,beta\n")
    facts = build_facts(FactsConfig(source="csv", path=str(csv), relations=None,
                                    out=str(tmp_path / "facts"), progress=False))
    with pytest.raises(UserError, match="no Wikidata ids"):
        build_aliases(AliasConfig(facts=str(facts), out=str(tmp_path / "al")))
