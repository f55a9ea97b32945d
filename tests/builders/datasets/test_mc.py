"""Invariants of the T-REx-MC construction on generated facts."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import base_manifest, write_dataset
from factprobe.builders.datasets.facts import SourceResult, assemble_facts
from factprobe.builders.datasets.mc import MCConfig, build_mc


def make_facts(folder, seed=0):
    """Three relations: R_ok qualifies; R_few has too few facts; R_narrow too few objects.
    R_ok subjects often have several answers, and some objects come as "X language" and "X"."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(700):
        subject = f"s{i}"
        for k in range(1 + (i % 3 == 0) + (i % 7 == 0)):
            obj = int(rng.integers(0, 160))
            rows.append(("R_ok", subject, f"o{obj}", subject.upper(), f"Obj{obj}"))
    rows.append(("R_ok", "s0", "lang1", "S0", "Obj1 language"))  # normalised to "Obj1"
    for i in range(300):
        rows.append(("R_few", f"s{i}", f"o{i % 150}", f"S{i}", f"Obj{i % 150}"))
    for i in range(800):
        rows.append(("R_narrow", f"s{i}", f"o{i % 40}", f"S{i}", f"Obj{i % 40}"))
    df = pd.DataFrame(rows, columns=["relation_id", "subject_id", "object_id", "subject",
                                     "object"])
    facts, relations, counts = assemble_facts(SourceResult(triples=df, source_tag="test"))
    write_dataset(folder, {"facts": facts, "relations": relations},
                  base_manifest("gen", "facts", {"type": "test"}, {}, counts))
    return df


@pytest.fixture
def facts_dir(tmp_path):
    make_facts(tmp_path / "facts")
    return tmp_path / "facts"


def _mc(facts_dir, out, **kw):
    return build_mc(MCConfig(facts=str(facts_dir), out=str(out), progress=False, **kw))


def test_mc_invariants(facts_dir, tmp_path):
    out = _mc(facts_dir, tmp_path / "mc")
    table = pq.read_table(out / "facts.parquet").to_pylist()
    manifest = json.loads((out / "dataset.json").read_text())
    assert set(manifest["counts"]["dropped_relations"]) == {"R_few", "R_narrow"}
    assert "min_facts" in manifest["counts"]["dropped_relations"]["R_few"]
    assert "min_objects" in manifest["counts"]["dropped_relations"]["R_narrow"]

    # every answer of every subject, from the source facts, after normalisation
    src = pq.read_table(facts_dir / "facts.parquet").to_pandas()
    src["object"] = src["object"].str.replace(" language", "", regex=False)
    truth = src.groupby(["relation_id", "subject_id"])["object"].apply(set).to_dict()
    objects = set(src.loc[src.relation_id == "R_ok", "object"])

    splits = defaultdict(int)
    subjects = set()
    for row in table:
        assert row["relation_id"] == "R_ok"
        splits[row["split"]] += 1
        choices = row["choices"]
        assert len(choices) == 100 and len(set(choices)) == 100
        assert choices.count(row["object"]) == 1
        answers = truth[(row["relation_id"], row["subject_id"])]
        assert set(row["answers"]) == answers and row["object"] in answers
        assert not (set(choices) - {row["object"]}) & answers   # no other answer as distractor
        assert set(choices) <= objects
        assert row["subject_id"] not in subjects                 # one question per subject
        subjects.add(row["subject_id"])
    assert dict(splits) == {"train": 100, "test": 400}
    assert manifest["counts"]["objects_normalised"] == 1
    assert all("language" not in c for row in table for c in row["choices"])


def test_mc_is_deterministic_and_seeded(facts_dir, tmp_path):
    a = _mc(facts_dir, tmp_path / "a")
    b = _mc(facts_dir, tmp_path / "b")
    c = _mc(facts_dir, tmp_path / "c", seed=1)
    assert (a / "facts.parquet").read_bytes() == (b / "facts.parquet").read_bytes()
    assert (a / "facts.parquet").read_bytes() != (c / "facts.parquet").read_bytes()


def test_gold_position_is_not_fixed(facts_dir, tmp_path):
    table = pq.read_table(_mc(facts_dir, tmp_path / "mc") / "facts.parquet").to_pylist()
    positions = {row["choices"].index(row["object"]) for row in table}
    assert len(positions) > 50


def test_thresholds_that_keep_nothing_explain_why(facts_dir, tmp_path):
    with pytest.raises(UserError, match="R_ok: .*min_facts"):
        _mc(facts_dir, tmp_path / "mc", min_facts=10_000)
    assert not (tmp_path / "mc").exists()


def test_too_few_pairs_drops_the_relation(facts_dir, tmp_path):
    with pytest.raises(UserError, match="train \\+ test 1000"):
        _mc(facts_dir, tmp_path / "mc", train=500, test=500)


def test_small_settings(facts_dir, tmp_path):
    out = _mc(facts_dir, tmp_path / "mc", choices=10, min_facts=100, min_objects=30, train=5,
              test=20)
    table = pq.read_table(out / "facts.parquet").to_pandas()
    assert table.groupby(["relation_id", "split"]).size().to_dict() == {
        (r, s): n for r in ("R_few", "R_narrow", "R_ok") for s, n in (("test", 20), ("train", 5))}
    assert table.choices.map(len).eq(10).all()
