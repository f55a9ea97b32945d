"""The dump source's out-of-core assembly (issue 30) writes the very bytes of the in-memory
assembly it replaced: same rows in the same order, answers, aliases, fact ids, relations and
dropped counts, on dumps built to be awkward (whitespace around labels, labels that are only
space, missing labels, literals that format alike, a literal spelled like an entity id, an entity
with hundreds of statements, text in other languages), in both dump syntaxes, with --limit and
subsets of the relations."""
from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import write_parquet
from factprobe.builders.datasets.facts import assemble_facts
from factprobe.builders.sources.wikidata_dump import DumpOptions
from factprobe.builders.sources.wikidata_dump.to_facts import facts_from_dump, in_memory
from tests import wikidata_dump_fixture as fx
from tests.dump_world import RELATIONS, dump_facts, write_world
from tests.wikidata_dump_fixture import Claim, Entity, item, mono, quantity, string, time

XSD = fx.XSD
ODD = ("P31", "P47", "P1448", "P569", "P1082", "P1813")


def _date(t: str) -> fx.Value:
    return time(t, 11, fx.lit(t.lstrip("+"), dtype=XSD + "dateTime"))


def _odd_world() -> list[Entity]:
    """Entities whose names and values stress each rule of the assembly."""
    props = [fx._prop("P31", "instance of"), fx._prop("P47", "shares border with"),
             fx._prop("P1448", "official name", datatype="monolingualtext"),
             fx._prop("P569", "date of birth", datatype="time"),
             fx._prop("P1082", "population", datatype="quantity"),
             fx._prop("P1813", "short name", datatype="string")]
    ents = [
        Entity("Q1", {"en": "  Padded  ", "de": "Gepolstert"}, aliases={"en": [
            "Padded", "  Padded  ", " ", "pad", "pad", "\u2003"]}),
        Entity("Q2", {"en": "\u2003\u00a0"}),               # only space: no label
        Entity("Q3", {"de": "Nur Deutsch"}),                 # no English label
        Entity("Q4", {"en": "Zeta"}, aliases={"en": ["Q5", "zeta", "Zeta "]}),
        Entity("Q5", {"en": "Five"}, aliases={"en": ["5", "V"], "fr": ["cinq"]}),
        Entity("Q6", {"en": "\tTabbed\n"}),
        Entity("Q7", {"en": "Émile"}, aliases={"en": ["Emile", "Ém"]}),
    ]
    hub = Entity("Q100", {"en": "Hub", "de": "Nabe"}, aliases={"en": ["The Hub"]}, claims=[
        Claim("P47", item(f"Q{1000 + i}")) for i in range(300)] + [
        Claim("P47", item("Q1")), Claim("P47", item("Q2")), Claim("P47", item("Q3")),
        Claim("P31", item("Q5")), Claim("P31", item("Q4")), Claim("P31", item("Q6")),
        Claim("P1813", string("Q5")), Claim("P1813", string(" hub ")),
        Claim("P1813", string("hub")), Claim("P1813", string("\u2003")),
        Claim("P1448", mono("Hub", "en")), Claim("P1448", mono("Nabe", "de")),
        Claim("P1448", mono(" Hub", "en")),
        Claim("P569", _date("+2001-01-01T00:00:00Z")), Claim("P569", _date("+2001-01-01T12:00:00Z")),
        Claim("P569", _date("-0044-03-15T00:00:00Z")), Claim("P569", _date("+2001-05-01T00:00:00Z")),
        Claim("P1082", quantity("+1234", fx.lit("1234", dtype=XSD + "decimal"))),
        Claim("P1082", quantity("+1234.0", fx.lit("1234.0", dtype=XSD + "decimal")))])
    many = [Entity(f"Q{1000 + i}", {"en": f"Place {i % 37}", "de": f" Ort {i % 5}"}
                   if i % 11 else {"fr": "Lieu"},
                   aliases={"en": [f"Place {i % 37}", f"P{i % 5}"]} if i % 3 == 0 else {},
                   claims=[Claim("P47", item(f"Q{1000 + (i * 7) % 300}")),
                           Claim("P31", item(f"Q{1 + i % 7}"))])
            for i in range(300)]
    people = [Entity(f"Q{2000 + i}", {"en": ["Ann", "Bob", " Ann", "Ann\u00a0"][i % 4]}, claims=[
        Claim("P31", item("Q5")), Claim("P569", _date(f"+19{i % 100:02d}-0{1 + i % 9}-01T00:00:00Z")),
        Claim("P47", item(f"Q{2000 + (i + 1) % 40}")), Claim("P47", item("Q100"))])
        for i in range(40)]
    return props + ents + [hub] + many + people


def _bytes(table, path) -> bytes:
    write_parquet(table, path)
    return path.read_bytes()


def both(path, tmp_path, relations=ODD, whole=False, **kw):
    """(in-memory, out-of-core): the Parquet bytes of facts and relations, the counts and the
    number of facts. Out of core, facts.parquet is streamed as ``build facts`` writes it, or
    with ``whole`` assembled into one table first (as ``factprobe init`` reads it)."""
    def opened():
        return facts_from_dump(str(path), relations, progress=False, options=DumpOptions(
            work_root=str(tmp_path / "work"), workers=0), **kw)

    with opened() as result:
        facts, rels, counts = assemble_facts(in_memory(result))
        old = (_bytes(facts, tmp_path / "f.parquet"), _bytes(rels, tmp_path / "r.parquet"),
               json.loads(json.dumps(counts)), facts.num_rows)
    with opened() as result:
        if whole:
            facts, rels, counts = assemble_facts(result)
            data = _bytes(facts, tmp_path / "f.parquet")
        else:
            facts, rels, counts = result.assembly.assemble_streamed()
            facts(tmp_path / "s.parquet")
            data = (tmp_path / "s.parquet").read_bytes()
        new = (data, _bytes(rels, tmp_path / "r.parquet"), json.loads(json.dumps(counts)),
               facts.num_rows)
    return old, new


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    return fx.write(tmp_path_factory.mktemp("odd"), _odd_world())


@pytest.mark.parametrize("form", ["json", "nt"])
@pytest.mark.parametrize("kw", [{}, {"date_format": "year"}, {"limit": 7},
                                {"relations": ("P1813", "P569")}, {"relations": None},
                                {"lang": "de"}])
def test_same_bytes_on_odd_dumps(odd, tmp_path, form, kw):
    kw = dict(kw)
    old, new = both(odd[form], tmp_path, **kw)
    assert old[3] > 0
    assert new[2] == old[2]
    assert new[1] == old[1]
    assert new[0] == old[0]


def test_the_odd_dump_exercises_each_rule(odd, tmp_path):
    (facts, _, counts, n), _ = both(odd["json"], tmp_path)
    dropped = counts["dropped"]
    # each drop rule fires, and duplicates after stripping and formatting are removed
    assert {"rows_without_subject_label", "rows_without_object_label",
            "rows_with_foreign_literal", "duplicate_rows"} <= set(dropped)
    table = pq.read_table(io.BytesIO(facts)).to_pylist()
    hub = [r for r in table if r["subject_id"] == "Q100"]
    assert len([r for r in hub if r["relation_id"] == "P47"]) > 250
    assert {"Padded", "Tabbed"} <= {r["object"] for r in hub}
    q5 = [r for r in hub if r["object_id"] == "Q5"]
    assert {r["object"] for r in q5} == {"Five", "Q5"}     # the entity, and a string "Q5"


def test_same_bytes_on_the_shared_world(tmp_path):
    files = write_world(tmp_path / "files")
    for form in ("json", "nt"):
        old, new = both(files[form], tmp_path, relations=RELATIONS)
        assert new == old


def test_synthetic_dense_same_bytes(tmp_path):
    from tests.wikidata_dump_synthetic import DENSE_RELATIONS, write_synthetic
    path = tmp_path / "dense.json"
    write_synthetic(path, 600, seed=3, relations=DENSE_RELATIONS, dense=True)
    old, new = both(path, tmp_path, relations=DENSE_RELATIONS)
    assert old[3] > 1000
    assert new == old


def test_no_labelled_fact_is_one_line(odd, tmp_path, capsys):
    with pytest.raises(UserError, match="no facts left after dropping"):
        dump_facts(odd["json"], tmp_path / "out", tmp_path / "work", relations=("P47",),
                   lang="ja")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("whole", [False, True])
def test_same_bytes_when_pairs_straddle_batches_and_row_groups(odd, tmp_path, monkeypatch,
                                                                whole):
    """Answers are gathered per batch of whole pairs, and facts.parquet is written a row group
    at a time: with batches of five rows and row groups of 64 (for both writers), the hub's
    300 neighbours and most other pairs are cut by a batch boundary, and the file has many
    row groups."""
    from factprobe.builders.sources.wikidata_dump import assemble
    from factprobe.core import tables
    monkeypatch.setattr(assemble, "BATCH_ROWS", 5)
    monkeypatch.setattr(assemble, "ROW_GROUP_ROWS", 64)
    monkeypatch.setattr(tables, "ROW_GROUP_ROWS", 64)
    old, new = both(odd["json"], tmp_path, whole=whole)
    assert pq.ParquetFile(io.BytesIO(old[0])).metadata.num_row_groups == -(-old[3] // 64) > 5
    assert new == old


def test_whole_table_same_bytes(odd, tmp_path):
    old, new = both(odd["nt"], tmp_path, whole=True)
    assert new == old


def test_pystrip_is_python_strip():
    """DuckDB's strip in the assembly against str.strip: every space character at either end,
    inside, alone, next to combining marks and emoji modifiers."""
    import random

    import duckdb
    import pandas as pd

    from factprobe.builders.sources.wikidata_dump.assemble import WHITESPACE, _py_strip_macro
    rng = random.Random(5)
    alpha = list(WHITESPACE) + list("ab é€😀x") + ["\u0301", "\u200d", "\U0001F3FD", "\ufe0f"]
    samples = ["".join(rng.choice(alpha) for _ in range(rng.randint(0, 6))) for _ in range(20000)]
    samples += [c + "x" + c for c in WHITESPACE] + ["\u200b x \u200b", "\ufeffx"]
    con = duckdb.connect()
    try:
        con.execute(_py_strip_macro())
        frame = pd.DataFrame({"s": samples, "i": range(len(samples))})  # noqa: F841 (scanned)
        got = [r[0] for r in con.execute("SELECT pystrip(s) FROM frame ORDER BY i").fetchall()]
    finally:
        con.close()
    assert got == [s.strip() for s in samples]
    assert got == pd.Series(samples).astype(str).str.strip().tolist()


def test_answers_in_arrow_are_the_pandas_answers():
    """The dump assembly's Arrow answers equal answer_lists' on hostile labels: NUL, the last
    BMP code point beside the first astral one (UTF-16 would order them the other way),
    combining marks beside precomposed letters, quotes, spaces; and empty batches."""
    import random

    import pandas as pd
    import pyarrow as pa

    from factprobe.builders.datasets.facts import answer_lists
    from factprobe.builders.sources.wikidata_dump.assemble import _answers
    rng = random.Random(0)
    alphabet = ["a", "B", "\x00", "\uffff", "\U00010000", "\U0001F600", "e\u0301", "\u00e9",
                " ", "ß", "'", "\\", "\ud7ff"]
    assert _answers(*(pa.array([], pa.string()),) * 3) == (0, pa.array([], pa.list_(
        pa.string())))
    for _ in range(200):
        rows = sorted((rng.choice(["P1", "P10", "P2"]), rng.choice(["Q1", "Q2", "Q10"]),
                       "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))))
                      for _ in range(rng.randint(1, 60)))
        cols = [[row[i] for row in rows] for i in range(3)]
        want = answer_lists(pd.DataFrame(dict(zip(("relation_id", "subject_id", "object"),
                                                  cols))))
        got = _answers(*(pa.array(c, pa.string()) for c in cols))
        assert got[0] == want[0] and got[1].to_pylist() == want[1].to_pylist()
