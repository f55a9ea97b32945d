"""The benchmark importers against the releases as published (issue 27's held-back check, done
on what could be found): lines copied unchanged from the released files, the authors' readers'
rules (LAMA's scripts/batch_eval_KB_completion.py, lm-pub-quiz's data/base.py and
data/dataset.py), and the hostile variants one step outside them.

tests/fixtures/benchmarks/lama-release/data/ holds released lines, byte for byte: TREx/P19.jsonl
lines 1, 247 and 680, Google_RE/place_of_death_test.jsonl lines 286, 361 and 687 and
place_of_birth_test.jsonl line 1 of LAMA's data.zip (as copied into the public repository
norakassner/BERT-kNN, data/, whose line counts are LAMA's: T-REx P19 944, Google-RE 2,937, 1,825
and 766), and the P19 and P20 lines of its relations.jsonl.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import read_manifest
from factprobe.builders.datasets.build_facts import build_facts
from factprobe.builders.sources.config import FactsConfig
from factprobe.builders.templates.imported import ImportTemplatesConfig, build_imported_templates

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
LAMA_RELEASE = FIX / "lama-release" / "data"


def _build(fmt: str, path: Path, out: Path, **kw) -> list[dict]:
    build_facts(FactsConfig(source=fmt, relations=None, out=str(out), path=str(path),
                            progress=False, **kw))
    return pq.read_table(out / "facts.parquet").to_pylist()


# ------------------------------------------------------------------ LAMA, released lines

def test_lama_released_lines_keep_wikidata_ids_and_every_verdict(tmp_path):
    """Google-RE lines carry Wikidata ids beside the Freebase ones (``sub_w``, ``obj_w``, null
    where none) and a third verdict, ``skip``, that LAMA's filter counts against the fact
    (``num_no`` is every judgment that is not ``yes``): both are kept."""
    rows = {(r["relation_id"], r["subject"]): r for r in
            _build("lama", LAMA_RELEASE, tmp_path / "f")}
    assert len(rows) == 7
    ord_ = rows[("place_of_death", "Boris Ord")]
    assert (ord_["subject_id"], ord_["object_id"], ord_["object"]) == (
        "/m/01vxt4_", "/m/0978r", "Cambridge")
    assert (ord_["sub_w"], ord_["obj_w"]) == ("Q4945351", "Q350")
    assert (ord_["judgments_yes"], ord_["judgments_no"], ord_["judgments_skip"]) == (3, 0, 2)
    woodsworth = rows[("place_of_death", "James Woodsworth")]
    assert (woodsworth["sub_w"], woodsworth["obj_w"]) == (None, "Q2135")
    assert woodsworth["object_aliases"] == ["Winnipeg, Manitoba"]
    # a released alias spelled as a JSON surrogate pair (the flag of Lebanon) is one character
    lebanon = rows[("place_of_birth", "Khatchig Mouradian")]
    assert "\U0001F1F1\U0001F1E7" in lebanon["object_aliases"]
    assert (lebanon["judgments_yes"], lebanon["judgments_no"]) == (4, 1)
    # T-REx: the first evidence, its mask filled by its own surface form, and their number
    peiper = rows[("P19", "Allan Peiper")]
    assert (peiper["subject_id"], peiper["object_id"], peiper["object"]) == (
        "Q1886736", "Q2643563", "Alexandra")
    assert peiper["evidence_text"].startswith("Allan Peiper (born 26 April 1960 in "
                                              "Alexandra, Victoria, Australia)")
    assert peiper["evidence_count"] == 2 and peiper["relation_type"] == "N-1"
    assert peiper["sub_w"] is None and peiper["judgments_skip"] is None


def test_lama_relation_listed_twice_is_refused(tmp_path):
    """A relation on two lines of relations.jsonl: the later template would silently replace
    the first; the line is named instead, and import-templates does not offer --skip-bad."""
    root = tmp_path / "data"
    shutil.copytree(LAMA_RELEASE, root)
    lines = (root / "relations.jsonl").read_text().splitlines()
    twice = json.loads(lines[0])
    twice["template"] = "[X] came from [Y] ."
    (root / "relations.jsonl").write_text("\n".join(lines + [json.dumps(twice)]) + "\n")
    with pytest.raises(UserError, match=r"relations.jsonl:3: field 'relation' 'P19' is already "
                                        r"on line 1; fix the line \(build import-templates") as e:
        build_imported_templates(ImportTemplatesConfig("lama", str(root), str(tmp_path / "t")))
    assert "--skip-bad" not in str(e.value)
    assert not (tmp_path / "t").exists()


# ------------------------------------------------------------------ lm-pub-quiz's format

def _lm_pub_quiz_folder(root: Path) -> Path:
    """A dataset in lm-pub-quiz's format as its own tests write one (tests/test_data/
    dummy_dataset): relation codes that are no Wikidata ids, lines without answer_idx, one
    relation with its answer space in the metadata and one without, and files that are no
    relations (README.md, metadata.json)."""
    root.mkdir(parents=True)
    (root / "example_1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [
        {"sub_id": "xyz", "sub_label": "the traveler", "obj_id": "zyx",
         "obj_label": "the souvenir"},
        {"sub_id": "abc", "sub_label": "the sports team", "obj_id": "cba",
         "obj_label": "the football"}]))
    (root / "example_2.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [
        {"sub_id": "s1", "sub_label": "the mouse", "obj_id": "o2", "obj_label": "the cat"},
        {"sub_id": "s2", "sub_label": "the fly", "obj_id": "o1", "obj_label": "the frog"}]))
    (root / "metadata_relations.json").write_text(json.dumps({
        "example_1": {"name": "lost", "templates": ["[X] lost [Y]."]},
        "example_2": {"name": "eaten by", "templates": ["[Y] eats [X]."],
                      "answer_space_labels": ["the frog", "the cat", "the owl"],
                      "answer_space_ids": ["o1", "o2", "o3"]}}))
    (root / "metadata.json").write_text('{"version": "1.0"}')
    (root / "README.md").write_text("Not a relation file.\n")
    return root


def test_bear_reads_lm_pub_quiz_relation_codes_and_lines_without_answer_idx(tmp_path):
    """lm-pub-quiz takes every ``*.jsonl`` of the folder as a relation whatever its name
    (Relation.search_path) and places a line without answer_idx by its obj_id in the answer
    space (Relation.load_instance_table): the import reads the same relations and places."""
    root = _lm_pub_quiz_folder(tmp_path / "dummy_dataset")
    rows = {r["subject"]: r for r in _build("bear", root, tmp_path / "f")}
    assert len(rows) == 4
    mouse = rows["the mouse"]
    assert mouse["relation_id"] == "example_2"
    assert mouse["answer_space"] == ["the frog", "the cat", "the owl"]
    assert mouse["answer_idx"] == 1
    # no answer space in the metadata: the relation's objects in the order they first appear
    team = rows["the sports team"]
    assert team["answer_space"] == ["the souvenir", "the football"] and team["answer_idx"] == 1
    src = read_manifest(tmp_path / "f")["source"]
    assert src["relations"] == ["example_1", "example_2"]
    assert src["answer_space_derived"] == ["example_1"]
    assert "relations_without_instance_file" not in src
    assert sorted(src["files"]) == ["example_1.jsonl", "example_2.jsonl",
                                    "metadata_relations.json"]
    out, counts = build_imported_templates(ImportTemplatesConfig("bear", str(root),
                                                                 str(tmp_path / "t")))
    assert counts["templates"] == 2


def test_bear_line_without_answer_idx_outside_the_space_is_named(tmp_path):
    root = _lm_pub_quiz_folder(tmp_path / "d")
    with (root / "example_2.jsonl").open("a") as fh:
        fh.write(json.dumps({"sub_id": "s3", "sub_label": "the seed", "obj_id": "o9",
                             "obj_label": "the bird"}) + "\n")
    with pytest.raises(UserError, match=r"example_2.jsonl:3: field 'obj_id' 'o9' is not in the "
                                        r"relation's answer space, and the line has no "
                                        r"answer_idx"):
        _build("bear", root, tmp_path / "f")
    assert not (tmp_path / "f").exists()


def test_bear_half_an_answer_space_is_worked_out_from_the_instances(tmp_path, capsys):
    """Metadata with answer_space_labels and no answer_space_ids (or the ids alone): lm-pub-quiz
    (RelationBase.answer_space_from_metadata) warns and takes the answer space from the
    instances, the objects in the order their obj_id first appears; the import does the same,
    names the relation in the manifest and says so on its line (before, it was refused)."""
    from factprobe.cli.app import main
    for lone in ("answer_space_ids", "answer_space_labels"):
        root = _lm_pub_quiz_folder(tmp_path / lone / "d")
        meta = json.loads((root / "metadata_relations.json").read_text())
        del meta["example_2"][lone]
        (root / "metadata_relations.json").write_text(json.dumps(meta))
        out = tmp_path / lone / "f"
        assert main(["build", "facts", "--source", "bear", "--path", str(root),
                     "--relations", "all", "--out", str(out)]) == 0
        line = capsys.readouterr().err   # the command's one line goes to stderr
        assert "answer space worked out from the instances" in line and "example_2" in line
        rows = {r["subject"]: r for r in pq.read_table(out / "facts.parquet").to_pylist()}
        assert rows["the mouse"]["answer_space"] == ["the cat", "the frog"]
        assert (rows["the mouse"]["answer_idx"], rows["the fly"]["answer_idx"]) == (0, 1)
        src = read_manifest(out)["source"]
        assert src["answer_space_incomplete"] == ["example_2"]
        assert src["answer_space_derived"] == ["example_1", "example_2"]
    # a whole answer space is still taken from the metadata, and not named
    rows = {r["subject"]: r for r in _build("bear", _lm_pub_quiz_folder(tmp_path / "whole"),
                                            tmp_path / "fw")}
    assert rows["the mouse"]["answer_space"] == ["the frog", "the cat", "the owl"]
    assert "answer_space_incomplete" not in read_manifest(tmp_path / "fw")["source"]


def test_bear_reads_lm_pub_quiz_parquet_instance_tables(tmp_path):
    """lm-pub-quiz saves and loads an instance table as Parquet too (save_instance_table /
    load_instance_table: ``<code>.parquet``, ``<code>.parquet.<compression>``, written by
    pandas): the same folder with its tables in Parquet imports to the same facts, a pandas
    column of answer_idx holding a null (floats, NaN) included; a relation in two files, or a
    file that is no Parquet, is one line."""
    import pandas as pd
    jsonl = _lm_pub_quiz_folder(tmp_path / "j")
    expected = _build("bear", jsonl, tmp_path / "fj")
    root = _lm_pub_quiz_folder(tmp_path / "p")
    one = pd.read_json(root / "example_1.jsonl", lines=True)
    one["sub_aliases"] = [["the tourist"], []]
    one.to_parquet(root / "example_1.parquet")
    two = pd.read_json(root / "example_2.jsonl", lines=True)
    two["answer_idx"] = [1.0, float("nan")]   # the second placed by its obj_id
    two.to_parquet(root / "example_2.parquet.gzip", compression="gzip")
    (root / "example_1.jsonl").unlink(), (root / "example_2.jsonl").unlink()
    rows = _build("bear", root, tmp_path / "fp")
    key = lambda r: (r["relation_id"], r["subject"])   # noqa: E731
    assert [{k: v for k, v in r.items() if k != "subject_aliases"} for r in
            sorted(rows, key=key)] == [{k: v for k, v in r.items() if k != "subject_aliases"}
                                      for r in sorted(expected, key=key)]
    assert {r["subject"]: r["answer_idx"] for r in rows if r["relation_id"] == "example_2"} \
        == {"the mouse": 1, "the fly": 0}
    src = read_manifest(tmp_path / "fp")["source"]
    assert src["relations"] == ["example_1", "example_2"]
    assert src["files"]["example_2.parquet.gzip"]["lines"] == 2
    # sub_aliases, a list column in Parquet, are the subject's aliases as from a JSON line
    assert {r["subject"]: r["subject_aliases"] for r in rows}["the traveler"] == ["the tourist"]
    shutil.copy(jsonl / "example_1.jsonl", root)
    with pytest.raises(UserError, match=r"relation example_1 has two instance files, "
                                        r"example_1.jsonl and example_1.parquet; keep one"):
        _build("bear", root, tmp_path / "f2")
    (root / "example_1.jsonl").unlink()
    (root / "example_1.parquet").write_text("not parquet")
    with pytest.raises(UserError, match=r"example_1.parquet: not a Parquet file") as err:
        _build("bear", root, tmp_path / "f3")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "f2").exists() and not (tmp_path / "f3").exists()


def test_bear_relation_named_twice_or_unprintable_is_refused(tmp_path):
    root = _lm_pub_quiz_folder(tmp_path / "d")
    text = (root / "metadata_relations.json").read_text().rstrip()
    (root / "metadata_relations.json").write_text(
        text[:-1] + ', "example_1": {"templates": ["[X] found [Y]."]}}')
    with pytest.raises(UserError, match=r"metadata_relations.json: the key 'example_1' is "
                                        r"given twice"):
        _build("bear", root, tmp_path / "f")
    shutil.rmtree(root)
    root = _lm_pub_quiz_folder(tmp_path / "d")
    shutil.copy(root / "example_1.jsonl", root / "bad\tname.jsonl")
    with pytest.raises(UserError, match=r"the file 'bad\\tname.jsonl': relation code "
                                        r"'bad\\tname' is empty, holds a control character"):
        _build("bear", root, tmp_path / "f")
    assert not (tmp_path / "f").exists()


# ------------------------------------------------------------------ EntityQuestions

def _eq(root: Path, ext: str = "json") -> Path:
    """Questions in the release's two layouts; "Where was Ada Lovelace born?" is in train and
    in test, as some hundreds of the release's questions are."""
    qs = {"train": [("Ada Lovelace", ["London"]), ("Alan Turing", ["Maida Vale"])],
          "test": [("Immanuel Kant", ["Königsberg", "Kaliningrad"]),
                   ("Ada Lovelace", ["London"])]}
    for split, items in qs.items():
        (root / split).mkdir(parents=True)
        data = [{"question": f"Where was {s} born?", "answers": a} for s, a in items]
        f = root / split / f"P19.{split}.{ext}"
        if ext == "json":
            f.write_text(json.dumps(data, indent=4, ensure_ascii=False), encoding="utf-8")
        else:
            f.write_text("".join(json.dumps(x) + "\n" for x in data), encoding="utf-8")
    return root


def test_entityquestions_keeps_a_fact_of_two_splits_in_test_and_counts_it(tmp_path):
    rows = _build("entityquestions", _eq(tmp_path / "dataset"), tmp_path / "f")
    split = {r["subject"]: r["split"] for r in rows}
    assert split == {"Ada Lovelace": "test", "Immanuel Kant": "test", "Alan Turing": "train"}
    manifest = read_manifest(tmp_path / "f")
    assert manifest["source"]["facts_in_several_splits"] == {"test+train": 1}
    assert manifest["counts"]["dropped"]["duplicate_rows"] == 1


def test_entityquestions_jsonl_layout_reads_as_the_json_one(tmp_path):
    """The authors' README names dataset/test/P19.test.jsonl (the repository's layout before
    dataset.zip, and what their utils/jsonl_to_json.py converts from): the same facts."""
    a = _build("entityquestions", _eq(tmp_path / "a"), tmp_path / "fa")
    b = _build("entityquestions", _eq(tmp_path / "b", "jsonl"), tmp_path / "fb")
    assert a == b and len(a) == 3
    # both beside each other: the .json is read, the .jsonl named as not read
    shutil.copy(tmp_path / "b" / "test" / "P19.test.jsonl", tmp_path / "a" / "test")
    assert _build("entityquestions", tmp_path / "a", tmp_path / "fc") == a
    assert read_manifest(tmp_path / "fc")["source"]["files_not_read"] == [
        "test/P19.test.jsonl"]
    (tmp_path / "b" / "test" / "P19.test.jsonl").write_text('{"question": "Where was X?"}\n')
    with pytest.raises(UserError, match=r"P19.test.jsonl:1: field 'answers' missing"):
        _build("entityquestions", tmp_path / "b", tmp_path / "fd")


# ------------------------------------------------------------------ every format

def test_a_line_with_two_bad_fields_is_one_bad_line(tmp_path):
    root = tmp_path / "data"
    shutil.copytree(FIX / "pararel" / "data", root)
    f = root / "trex_lms_vocab" / "P19.jsonl"
    f.write_text('{"uuid": "x"}\n' + f.read_text())
    rows = _build("pararel", root, tmp_path / "f", skip_bad=True)
    assert len(rows) == 8
    assert read_manifest(tmp_path / "f")["counts"]["dropped"]["bad_lines"] == 1


def test_popqa_relation_name_with_a_newline_is_a_bad_line(tmp_path):
    lines = (FIX / "popqa" / "popQA.tsv").read_text(encoding="utf-8").splitlines()
    fields = lines[1].split("\t")
    fields[2] = '"occu\npation"'          # a quoted TSV field may hold a newline
    lines[1] = "\t".join(fields)
    f = tmp_path / "popQA.tsv"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # named by the line the record starts on (2), not the one it ends on
    with pytest.raises(UserError, match=r"popQA.tsv:2: field 'prop' is 'occu\\npation'"):
        _build("popqa", f, tmp_path / "o")
    rows = _build("popqa", f, tmp_path / "o", skip_bad=True)
    assert len(rows) == 7 and {r["relation_id"] for r in rows} == {"P106", "P36"}


def test_popqa_empty_file_says_so(tmp_path):
    (tmp_path / "popQA.tsv").write_text("")
    with pytest.raises(UserError, match=r"popQA.tsv: an empty file"):
        _build("popqa", tmp_path / "popQA.tsv", tmp_path / "o")


def test_template_imports_do_not_offer_skip_bad(tmp_path):
    root = tmp_path / "data"
    shutil.copytree(FIX / "pararel" / "data", root)
    (root / "pattern_data" / "graphs_json" / "P19.jsonl").write_text('{"lemma": "born"}\n')
    with pytest.raises(UserError, match=r"P19.jsonl:1: field 'pattern' missing; fix the line "
                                        r"\(build import-templates reads every") as e:
        build_imported_templates(ImportTemplatesConfig("pararel", str(root), str(tmp_path / "t")))
    assert "--skip-bad" not in str(e.value)
