"""`factprobe export`'s folders and its refusals, in process (no model: fast)."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
import yaml

from factprobe.core.tables import base_manifest, write_dataset
from factprobe.cli.app import main
from tests.evaluators.exports.test_lm_eval_export import mc_dataset, templates_dir


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("export-cli")
    return mc_dataset(base / "mc"), templates_dir(base / "templates")


def one_line_error(capsys, argv, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    for needle in needles:
        assert needle in err[0], err[0]


def test_lm_eval_folder(data, tmp_path, capsys):
    mc, tpl = data
    out = tmp_path / "task"
    assert main(["export", "lm-eval", str(mc), str(out), "--method", "prompt", "--templates",
                 str(tpl), "--template-id", "m2", "--task", "born_m2"]) == 0
    assert "16 questions on 16 facts" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [
        "born_m2.jsonl", "born_m2.yaml", "factprobe_docs.py", "factprobe_export.json"]
    rows = [json.loads(line) for line in (out / "born_m2.jsonl").read_text().splitlines()]
    first = rows[0]
    assert first["context"] == "So: Person born 6 was born in"
    assert first["choices"][first["label"]] == " " + first["gold"]
    assert all(c.startswith(" ") for r in rows for c in r["choices"])
    # the YAML lm-eval reads (its !function tag aside)
    cfg = yaml.load((out / "born_m2.yaml").read_text().replace("!function ", ""),
                    Loader=yaml.SafeLoader)
    assert cfg["task"] == "born_m2" and cfg["target_delimiter"] == ""
    assert (cfg["output_type"], cfg["doc_to_choice"], cfg["doc_to_target"]) == \
        ("multiple_choice", "choices", "label")
    first_bytes = {p.name: p.read_bytes() for p in out.iterdir()}
    # its own export is replaced, byte for byte the same
    assert main(["export", "lm-eval", str(mc), str(out), "--method", "prompt", "--templates",
                 str(tpl), "--template-id", "m2", "--task", "born_m2"]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first_bytes


def test_the_loader_reads_the_rows_from_any_directory(data, tmp_path, monkeypatch):
    import importlib.util
    mc, _ = data
    out = tmp_path / "task"
    assert main(["export", "lm-eval", str(mc), str(out), "--examples", "3"]) == 0
    monkeypatch.chdir(tmp_path)
    spec = importlib.util.spec_from_file_location("docs", out / "factprobe_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    docs = mod.load(version=1.0)["test"]
    assert len(docs) == 16 and docs[0]["context"].endswith(", Person born 6")
    assert docs.features["label"].dtype == "int64"


def test_lm_pub_quiz_folder(data, tmp_path):
    mc, tpl = data
    out = tmp_path / "bear"
    assert main(["export", "lm-pub-quiz", str(mc), str(out), "--templates", str(tpl),
                 "--limit", "3"]) == 0
    meta = json.loads((out / "metadata_relations.json").read_text())
    assert list(meta) == ["born", "capital"]
    born = meta["born"]
    assert born["templates"] == ["[X] was born in [Y].", "So: [X] was born in [Y]."]
    # the whole answer space (--limit limits the instances, not the answers)
    assert born["answer_space_labels"] == sorted(mc_objects(mc, "born"))
    assert born["answer_space_ids"] == ["o" + y for y in born["answer_space_labels"]]
    rows = [json.loads(line) for line in (out / "born.jsonl").read_text().splitlines()]
    assert len(rows) == 3
    for r in rows:
        k = born["answer_space_ids"].index(r["obj_id"])
        assert born["answer_space_labels"][k] == r["obj_label"]


def mc_objects(mc, relation) -> set[str]:
    facts = pd.read_parquet(mc / "facts.parquet")
    return set(facts.loc[facts["relation_id"] == relation, "object"])


def test_numeric_ids_are_written_so_pandas_keeps_them(tmp_path):
    from factprobe.exports.lm_pub_quiz import file_id
    assert file_id("1922", "jsonl") == "literal:1922"
    rows = [{"fact_id": f"f{i}", "relation_id": "born", "subject_id": f"s{i}",
             "object_id": str(1900 + i), "subject": f"P{i}", "object": str(1900 + i),
             "split": "test"} for i in range(3)]
    folder = tmp_path / "facts"
    write_dataset(folder, {"facts": pa.Table.from_pylist(rows)},
                  base_manifest("facts", "facts", {}, {}, {}))
    tpl = templates_dir(tmp_path / "templates")
    assert main(["export", "lm-pub-quiz", str(folder), str(tmp_path / "q"), "--templates",
                 str(tpl)]) == 0
    got = pd.read_json(tmp_path / "q" / "born.jsonl", lines=True)   # as lm-pub-quiz reads it
    assert got["obj_id"].tolist() == ["literal:1900", "literal:1901", "literal:1902"]


@pytest.mark.parametrize("argv,needles", [
    (["lm-eval", "{missing}", "{out}"], ["not found"]),
    (["lm-eval", "{facts}", "{out}"], ["no choices", "factprobe build mc"]),
    (["lm-eval", "{mc}", "{mine}"], ["OUT", "did not write"]),
    (["lm-eval", "{mc}", "{out}", "--templates", "x"], ["--templates", "--method prompt"]),
    (["lm-eval", "{mc}", "{out}", "--method", "prompt", "--examples", "3"], ["--examples"]),
    (["lm-eval", "{mc}", "{out}", "--examples", "9"], ["fewer than", "--examples"]),
    (["lm-eval", "{mc}", "{out}", "--task", "a b"], ["--task"]),
    (["lm-eval", "{mc}", "{out}", "--relations", "nope"], ["nope"]),
    (["lm-eval", "{mc}", "{mc}"], ["input"]),
    (["lm-pub-quiz", "{missing}", "{out}"], ["not found"]),
    (["lm-pub-quiz", "{mc}", "{out}", "--templates", "{missing}"], ["templates"]),
    (["lm-pub-quiz", "{mc}", "{mine}"], ["did not write"]),
])
def test_bad_input(data, tmp_path, capsys, argv, needles):
    mc, _ = data
    facts = tmp_path / "facts"
    df = pd.read_parquet(mc / "facts.parquet").drop(columns=["choices"])
    write_dataset(facts, {"facts": pa.Table.from_pandas(df, preserve_index=False)},
                  base_manifest("facts", "facts", {}, {}, {}))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    subst = {"{missing}": str(tmp_path / "nope"), "{out}": str(tmp_path / "out"),
             "{facts}": str(facts), "{mc}": str(mc), "{mine}": str(mine)}
    one_line_error(capsys, ["export", *[subst.get(a, a) for a in argv]], *needles)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
