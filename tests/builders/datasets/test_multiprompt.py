"""The multi-prompt dataset: golden statistics on a small graph, the same statistics counted
independently from the written tables, and the materialised prompts."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from factprobe.builders.datasets.multiprompt import MultipromptConfig, build_multiprompt
from factprobe.builders.templates.paraphrase import TemplatesConfig, build_templates
from tests.evaluators.cli.test_cli import assert_user_error, run
from tests.small_graph import write_small_graph, write_templates

ROOT = Path(__file__).resolve().parents[3]

# Worked out by hand from tests/small_graph.py. Names: France 2, Germany 3, Italy 1,
# Switzerland 2, Turkey 2; Paris 2, Rome 2, every other object 1. Templates: capital 2,
# language 3, continent 1.
#   derived: capital 2*(2*2 + 3*1 + 1*2) = 18; language 3*(2+2+2+2+3) = 33;
#            continent 1*(2*1 + 2*1 + 2*1) = 6
#   prompts: capital 2*(2+3+1) = 12; language 3*(2+2+3) = 21; continent 1*(2+2) = 4
GOLDEN = {"templates": 6, "unique_triples": 11, "derived_triples": 57,
          "subject_relation_pairs": 8, "prompts": 37}
GOLDEN_PER_RELATION = {
    "capital": {"templates": 2, "unique_triples": 3, "derived_triples": 18,
                "subject_relation_pairs": 3, "prompts": 12},
    "continent": {"templates": 1, "unique_triples": 3, "derived_triples": 6,
                  "subject_relation_pairs": 2, "prompts": 4},
    "language": {"templates": 3, "unique_triples": 5, "derived_triples": 33,
                 "subject_relation_pairs": 3, "prompts": 21},
}


@pytest.fixture
def sample(sample_datasets) -> Path:
    """The sample graph's facts with aliases (dvc.yaml's stage aliases, built for the session)."""
    return sample_datasets / "sample-aliases"


def independent_count(folder: Path) -> dict:
    """The statistics table recounted from the written tables with pandas, not the builder."""
    facts = pq.read_table(folder / "facts.parquet").to_pandas()
    templates = pq.read_table(folder / "templates.parquet").to_pandas()
    t_per_rel = templates.groupby("relation_id").size()

    def n_names(label, aliases):
        return len({label, *list(aliases)})

    facts["n_subj"] = [n_names(s, a) for s, a in zip(facts["subject"], facts["subject_aliases"])]
    facts["n_obj"] = [n_names(o, a) for o, a in zip(facts["object"], facts["object_aliases"])]
    facts["t"] = facts["relation_id"].map(t_per_rel)
    pairs = facts.drop_duplicates(["relation_id", "subject_id"])
    return {"templates": int(len(templates)),
            "unique_triples": int(len(facts.drop_duplicates(["relation_id", "subject_id",
                                                             "object_id"]))),
            "derived_triples": int((facts["t"] * facts["n_subj"] * facts["n_obj"]).sum()),
            "subject_relation_pairs": int(len(pairs)),
            "prompts": int((pairs["t"] * pairs["n_subj"]).sum())}


def test_golden_statistics_on_a_small_graph(tmp_path):
    facts = write_small_graph(tmp_path / "facts")
    tpl = write_templates(tmp_path / "tpl")
    out = build_multiprompt(MultipromptConfig(facts=str(facts), out=str(tmp_path / "mp"),
                                              templates_dir=str(tpl), materialize=True))
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert counts["statistics"] == GOLDEN
    assert counts["per_relation"] == GOLDEN_PER_RELATION
    assert independent_count(out) == GOLDEN

    prompts = pq.read_table(out / "prompts.parquet").to_pandas()
    assert len(prompts) == GOLDEN["prompts"] and prompts["prompt_id"].is_unique
    germany = prompts[(prompts.relation_id == "capital") & (prompts.subject_id == "germany")]
    assert sorted(germany["prompt"]) == sorted(
        f"{t.replace('[X]', n)}" for t in ("The capital of [X] is [Y].",
                                           "What is the capital of [X]? [Y].")
        for n in ("Germany", "Deutschland", "FRG"))
    swiss = prompts[(prompts.relation_id == "language") & (prompts.subject_id == "switzerland")]
    assert all(list(a) == ["French", "German", "Italian"] for a in swiss["answers"])
    paris = prompts[(prompts.relation_id == "capital") & (prompts.subject_id == "france")]
    assert all(list(a) == ["City of Light", "Paris"] for a in paris["answers"])
    # the relation with templates but no facts is not in the dataset
    assert set(pq.read_table(out / "templates.parquet").column("relation_id").to_pylist()) == {
        "capital", "continent", "language"}


def test_statistics_from_a_templates_dataset_match_an_independent_count(tmp_path, sample):
    templates = build_templates(TemplatesConfig(out=str(tmp_path / "t"), paraphrases=0,
                                                facts=str(sample), progress=False))[0]
    out = build_multiprompt(MultipromptConfig(facts=str(sample), out=str(tmp_path / "mp"),
                                              templates=str(templates)))
    stats = json.loads((out / "dataset.json").read_text())["counts"]["statistics"]
    assert stats == independent_count(out)
    assert stats["unique_triples"] == 1873 and stats["templates"] == 72
    assert not (out / "prompts.parquet").exists()


def test_relations_without_templates_are_dropped_and_counted(tmp_path):
    facts = write_small_graph(tmp_path / "facts")
    tpl = tmp_path / "tpl"
    write_templates(tpl)
    (tpl / "continent.yaml").unlink()
    out = build_multiprompt(MultipromptConfig(facts=str(facts), out=str(tmp_path / "mp"),
                                              templates_dir=str(tpl)))
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    assert counts["dropped_relations"] == {"continent": "no templates"}
    assert set(pd.read_parquet(out / "facts.parquet")["relation_id"]) == {"capital", "language"}


def test_cli(tmp_path, sample):
    ok = run("build", "multiprompt", "--facts", str(sample), "--out", str(tmp_path / "mp"),
             "--quiet", cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    empty = tmp_path / "tpl"
    empty.mkdir()
    (empty / "ex_r.yaml").write_text('relation: "ex:r"\ntemplates:\n'
                                     '  - {id: m1, style: statement, text: "[X] has [Y]."}\n')
    assert_user_error(run("build", "multiprompt", "--facts", str(sample), "--templates-dir",
                          str(empty), "--out", str(tmp_path / "x"), cwd=tmp_path),
                      "no relation of")
    assert not (tmp_path / "x").exists()
