"""Misprimes: golden negatives on a small graph, and invariants on the sample."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from factprobe.core.tables import read_table
from factprobe.builders.datasets.misprimes import MisprimeConfig, build_misprimes, draw_negatives
from tests.evaluators.cli.test_cli import assert_user_error, run
from tests.small_graph import write_small_graph

# (relation, subject, gold) -> negatives, for --negatives 2 --seed 0 on the small graph
GOLDEN = {
    ("capital", "France", "Paris"): ["Rome", "Berlin"],
    ("capital", "Germany", "Berlin"): ["Rome", "Paris"],
    ("capital", "Italy", "Rome"): ["Berlin", "Paris"],
    ("continent", "France", "Europe"): ["Asia"],
    ("continent", "Turkey", "Asia"): [],          # both continents are Turkey's answers
    ("continent", "Turkey", "Europe"): [],
    ("language", "France", "French"): ["Italian", "German"],
    ("language", "Germany", "German"): ["French", "Italian"],
    ("language", "Switzerland", "French"): [],    # every language of the graph is Swiss
    ("language", "Switzerland", "German"): [],
    ("language", "Switzerland", "Italian"): [],
}


@pytest.fixture
def sample(sample_datasets) -> Path:
    """The sample graph's facts with aliases (dvc.yaml's stage aliases, built for the session)."""
    return sample_datasets / "sample-aliases"


def _rows(folder: Path) -> dict:
    t = pq.read_table(folder / "facts.parquet").to_pylist()
    return {(r["relation_id"], r["subject"], r["object"]): r for r in t}


def test_golden_negatives_on_a_small_graph(tmp_path):
    facts = write_small_graph(tmp_path / "facts")
    out = build_misprimes(MisprimeConfig(facts=str(facts), out=str(tmp_path / "m"), negatives=2,
                                         seed=0))
    rows = _rows(out)
    assert {k: v["negatives"] for k, v in rows.items()} == GOLDEN
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert counts["short"] == 6
    assert counts["per_relation"]["continent"] == {"facts": 3, "objects": 2, "short": 3}
    # the facts columns are untouched
    src = read_table(facts, "facts")
    assert pq.read_table(out / "facts.parquet").drop(["negatives"]).equals(src)


def test_same_type_negatives(tmp_path):
    facts = write_small_graph(tmp_path / "facts", with_types=True)
    out = build_misprimes(MisprimeConfig(facts=str(facts), out=str(tmp_path / "m"),
                                         type_relation="instanceOf"))
    rows = _rows(out)
    # Lyon is a city, the others capital cities: never a negative for a capital-city gold
    assert rows[("twinTown", "Berlin", "Paris")]["negatives"] == ["Berlin", "Rome"]
    assert rows[("twinTown", "Rome", "Berlin")]["negatives"] == ["Rome", "Paris"]
    assert rows[("twinTown", "Paris", "Lyon")]["negatives"] == []
    plain = build_misprimes(MisprimeConfig(facts=str(facts), out=str(tmp_path / "p")))
    assert "Lyon" in _rows(plain)[("twinTown", "Berlin", "Paris")]["negatives"]
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert counts["per_relation"]["capital"]["gold_untyped"] == 0
    assert counts["per_relation"]["language"]["gold_untyped"] == 5


def test_invariants_on_the_sample(tmp_path, sample):
    facts = read_table(sample, "facts")
    lists, counts = draw_negatives(facts, 5, 0)
    objects: dict[str, set] = {}
    for r, o in zip(facts["relation_id"].to_pylist(), facts["object"].to_pylist()):
        objects.setdefault(r, set()).add(o)
    pair_answers: dict = {}
    for r, s, a in zip(facts["relation_id"].to_pylist(), facts["subject_id"].to_pylist(),
                       facts["answers"].to_pylist()):
        pair_answers.setdefault((r, s), set()).update(a)
    for r, s, neg in zip(facts["relation_id"].to_pylist(), facts["subject_id"].to_pylist(),
                         lists):
        assert len(set(neg)) == len(neg)
        assert set(neg) <= objects[r] and not set(neg) & pair_answers[(r, s)]
        assert len(neg) == min(5, len(objects[r] - pair_answers[(r, s)]))
    assert counts["per_relation"]["rel:sexOrGender"]["short"] == 242  # two genders: one negative
    # seeded per relation: the same draws for a relation whatever else is in the table
    one = facts.filter(pc.equal(facts["relation_id"], "rel:currency"))
    alone, _ = draw_negatives(one, 5, 0)
    mask = [r == "rel:currency" for r in facts["relation_id"].to_pylist()]
    assert alone == [neg for neg, m in zip(lists, mask) if m]
    other, _ = draw_negatives(facts, 5, 1)
    assert other != lists


def test_cli(tmp_path, sample):
    out = tmp_path / "m"
    ok = run("build", "misprimes", "--facts", str(sample), "--out", str(out), "--quiet",
             cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    again = run("build", "misprimes", "--facts", str(sample), "--out", str(tmp_path / "m2"),
                "--quiet", cwd=tmp_path)
    assert again.returncode == 0
    assert (out / "facts.parquet").read_bytes() == (tmp_path / "m2" / "facts.parquet").read_bytes()
    assert pq.read_schema(out / "facts.parquet").field("negatives").type == pa.list_(pa.string())
    assert_user_error(run("build", "misprimes", "--facts", str(sample), "--out",
                          str(tmp_path / "x"), "--negatives", "0", cwd=tmp_path),
                      "--negatives", "must be >= 1")
    assert_user_error(run("build", "misprimes", "--facts", str(sample), "--out",
                          str(tmp_path / "x"), "--type-relation", "P31", cwd=tmp_path),
                      "no P31 facts")
    assert not (tmp_path / "x").exists()
