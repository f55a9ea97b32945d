"""The bundled sample graph meets its promises, read with the shipped params.yaml."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from factprobe.builders.datasets.build_facts import FactsConfig, build_facts
from factprobe.builders.datasets.nobel import NobelConfig, NobelModel, build_nobel
from factprobe.builders.sources.iris import WELL_KNOWN
from factprobe.builders.sources.sparql import LocalGraph

ROOT = Path(__file__).resolve().parents[3]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())


@pytest.fixture(scope="module")
def sample_facts(tmp_path_factory):
    p = PARAMS["facts"]
    out = tmp_path_factory.mktemp("sample") / "facts"
    build_facts(FactsConfig(source=p["source"], path=str(ROOT / p["path"]),
                            relations=tuple(p["relations"].split(",")), out=str(out),
                            lang=p["lang"], date_format=p["date_format"], progress=False))
    return pq.read_table(out / "facts.parquet").to_pandas()


def test_size_relations_and_labels(sample_facts):
    assert sample_facts.relation_id.nunique() >= 8
    assert len(sample_facts) >= 800
    assert (sample_facts.subject != "").all() and (sample_facts.object != "").all()


def test_aliases_for_at_least_a_third_of_entities(sample_facts):
    subjects = sample_facts[["subject_id", "subject_aliases"]].set_axis(["id", "aliases"], axis=1)
    objects = sample_facts[["object_id", "object_aliases"]].set_axis(["id", "aliases"], axis=1)
    entities = pd.concat([subjects, objects]).drop_duplicates("id")
    with_alias = entities.aliases.map(len).gt(0).mean()
    assert with_alias >= 1 / 3


def test_multi_answer_pairs(sample_facts):
    multi = sample_facts[sample_facts.answers.map(len) > 1]
    assert multi[["relation_id", "subject_id"]].drop_duplicates().shape[0] >= 10


def test_nobel_part_reads_through_the_params(tmp_path):
    p = PARAMS["nobel"]
    model = NobelModel(award_statement=p["award_statement"], award_value=p["award_value"],
                       award_time=p["award_time"], birth=p["birth_property"],
                       gender=p["gender_property"], nobel_class=p["nobel_class"],
                       instance_of=p["instance_of"], subclass_of=p["subclass_of"])
    graph = LocalGraph(ROOT / p["path"])
    out = build_nobel(graph, NobelConfig(out=str(tmp_path / "nobel"), model=model,
                                         max_year=p["max_year"], progress=False),
                      {**WELL_KNOWN, **graph.prefixes}, "rdf")
    laureates = pq.read_table(out / "laureates.parquet").to_pandas().set_index("name")
    assert len(laureates) >= 80
    curie = laureates.loc["Marie Curie"]
    assert list(curie.award_years) == [1903, 1911] and curie.birth_year == 1867
    assert "Terence Tao" not in laureates.index           # a Fields medal is no Nobel prize
    assert laureates.award_years.map(max).max() <= p["max_year"]
