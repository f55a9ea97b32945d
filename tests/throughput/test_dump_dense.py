"""The dump reader on dense extractions: columns built a batch at a time, literal rows formatted
apart from the entity rows, and the same rows as a line-by-line reading."""
from __future__ import annotations

import json

import pyarrow as pa

from factprobe.builders.sources.wikidata_dump.json_lines import EntityReader
from factprobe.builders.sources.wikidata_dump.rows import PieceStats, Rows
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.to_facts import _triples
from tests.wikidata_dump_fixture import entity_json
from tests.wikidata_dump_synthetic import DENSE_RELATIONS, synthetic_entity

XSD = "http://www.w3.org/2001/XMLSchema#"
LANG = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


def test_triples_keep_entity_rows_in_order_and_format_literals():
    table = pa.table({
        "relation_id": ["P1", "P2", "P3", "P3", "P1"],
        "subject_id": ["Q1", "Q1", "Q2", "Q3", "Q4"],
        "object_id": ["Q9", "+1921-05-03T00:00:00Z", "Paris", "Parigi", "Q8"],
        "object_kind": ["iri", "literal", "literal", "literal", "iri"],
        "datatype": [None, XSD + "dateTime", LANG, LANG, None],
        "lang": [None, None, "en", "it", None],
        "subject": ["One", "One", "Two", None, "Four"],
        "object_label": ["Nine", None, None, None, None]})
    df, foreign = _triples(table, "en", "year")
    assert foreign == 1                                    # the Italian text is dropped, counted
    assert df["subject_id"].tolist() == ["Q1", "Q1", "Q2", "Q4"]
    assert df["object_id"].tolist() == ["Q9", "1921", "Paris", "Q8"]
    assert df["object"].tolist()[:3] == ["Nine", "1921", "Paris"]
    # no label: the assembly drops the row
    assert df["object"].isna().tolist() == [False, False, False, True]
    assert df["object_type"].tolist() == ["entity", "xsd:dateTime", LANG, "entity"]
    df, foreign = _triples(table, "it", "date")
    assert foreign == 1 and df["object_id"].tolist()[1:3] == ["1921-05-03", "Parigi"]


def test_triples_of_no_rows():
    empty = pa.table({n: pa.array([], pa.string()) for n in (
        "relation_id", "subject_id", "object_id", "object_kind", "datatype", "lang", "subject",
        "object_label")})
    df, foreign = _triples(empty, "en", "date")
    assert len(df) == 0 and foreign == 0 and "object_type" in df.columns


def test_dense_batch_gives_the_rows_of_reading_each_line_alone():
    import random
    rng = random.Random(5)
    lines = [json.dumps(entity_json(synthetic_entity(i, 400, rng, dense=True))).encode()
             for i in range(1, 401)]
    reader = EntityReader(ExtractSpec("json", "en", DENSE_RELATIONS))
    whole = Rows()
    reader.read(b"[\n" + b",\n".join(lines) + b"\n]\n", whole, PieceStats())
    alone = Rows()
    for line in lines:
        reader.read(line + b"\n", alone, PieceStats())
    assert whole.tables() == alone.tables()
    facts = whole.tables()["statements"]
    assert facts.num_rows >= 3 * 400                       # dense: several facts an entity
    assert len(set(facts["relation_id"].to_pylist())) == 20
