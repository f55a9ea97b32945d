"""T-REx reader: LAMA ``P<id>.jsonl`` folders and Hugging Face dataset folders."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256
from factprobe.builders.datasets.facts import assemble_facts
from factprobe.builders.sources import trex
from factprobe.builders.sources.trex import read_trex


def _line(sub, obj, pid=None, sub_label=None, obj_label=None, evidences=None) -> dict:
    rec = {"sub_uri": sub, "sub_label": sub_label or f"label {sub}",
           "obj_uri": obj, "obj_label": obj_label or f"label {obj}"}
    if pid is not None:
        rec["predicate_id"] = pid
    if evidences is not None:
        rec["evidences"] = evidences
    return rec


def _write_jsonl(path: Path, records: list) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def lama(tmp_path) -> Path:
    folder = tmp_path / "trex"
    folder.mkdir()
    _write_jsonl(folder / "P19.jsonl", [
        _line("Q1", "Q90", "P19", "Ada", "Paris"),
        _line("Q2", "Q64", "P19", "Bob", "Berlin"),
        _line("Q3", "Q84", "P19", "Cyd", "London"),
    ])
    # No predicate_id: the relation comes from the file name.
    _write_jsonl(folder / "P20.jsonl", [
        _line("Q1", "Q90", None, "Ada", "Paris"),
        _line("Q2", "Q1490", None, "Bob", "Tokyo"),
    ])
    # LAMA folders carry relation metadata in files that are not triples: never read as such.
    _write_jsonl(folder / "relations.jsonl", [{"relation": "P19", "label": "place of birth"}])
    return folder


def _facts(result) -> pd.DataFrame:
    facts, _, _ = assemble_facts(result)
    return facts.to_pandas()


# ----------------------------------------------------------------------------- LAMA

def test_lama_all_relations_predicate_id_and_file_name(lama):
    result = read_trex(str(lama), None, progress=False)
    assert result.source_tag == "trex"
    facts = _facts(result)
    got = set(zip(facts["relation_id"], facts["subject_id"], facts["object_id"]))
    assert got == {("P19", "Q1", "Q90"), ("P19", "Q2", "Q64"), ("P19", "Q3", "Q84"),
                   ("P20", "Q1", "Q90"), ("P20", "Q2", "Q1490")}
    row = facts[(facts["relation_id"] == "P20") & (facts["subject_id"] == "Q2")].iloc[0]
    assert (row["subject"], row["object"]) == ("Bob", "Tokyo")
    assert set(facts["source"]) == {"trex"}
    assert result.provenance["kind"] == "lama"
    assert result.provenance["relations"] == ["P19", "P20"]
    assert set(result.provenance["files"]) == {"P19.jsonl", "P20.jsonl"}
    assert result.provenance["files"]["P19.jsonl"]["sha256"] == file_sha256(lama / "P19.jsonl")
    assert result.dropped == {"bad_lines": 0}
    # No evidences anywhere: no evidence columns.
    assert "evidence_text" not in facts.columns


def test_lama_single_file(lama):
    result = read_trex(str(lama / "P20.jsonl"), None, progress=False)
    assert sorted(result.triples["relation_id"].unique()) == ["P20"]
    assert len(result.triples) == 2


def test_lama_predicate_id_wins_over_file_name_and_filters_rows(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    _write_jsonl(folder / "P19.jsonl", [_line("Q1", "Q2", "P19"), _line("Q3", "Q4", "P36")])
    assert read_trex(str(folder), ["P19"], progress=False).triples["subject_id"].tolist() == ["Q1"]
    both = read_trex(str(folder), None, progress=False).triples
    assert sorted(zip(both["relation_id"], both["subject_id"])) == [("P19", "Q1"), ("P36", "Q3")]


def test_lama_unrequested_files_are_not_read(lama):
    (lama / "P20.jsonl").write_text("this is not json\n", encoding="utf-8")
    result = read_trex(str(lama), ["P19"], progress=False)
    assert set(result.triples["relation_id"]) == {"P19"}
    assert result.provenance["files_not_read"] == ["P20.jsonl"]
    with pytest.raises(UserError, match=r"P20\.jsonl:1: not valid JSON"):
        read_trex(str(lama), ["P20"], progress=False)


def test_lama_evidences_become_evidence_columns(tmp_path):
    folder = tmp_path / "ev"
    folder.mkdir()
    _write_jsonl(folder / "P19.jsonl", [
        _line("Q1", "Q90", "P19", "Ada", "Paris", evidences=[
            {"sub_surface": "Ada", "obj_surface": "the French capital",
             "masked_sentence": "Ada was born in [MASK] in 1900.", "title": "Ada (person)"},
            {"masked_sentence": "second evidence is ignored [MASK]", "title": "Other"}]),
        # No obj_surface: the object label fills the mask; no title: empty title.
        _line("Q2", "Q64", "P19", "Bob", "Berlin", evidences=[
            {"masked_sentence": "[MASK] is where Bob was born."}]),
        # No masked sentence: plain text is taken.
        _line("Q3", "Q84", "P19", "Cyd", "London", evidences=[
            {"text": "Cyd, born in London.", "title": "Cyd"}]),
        _line("Q4", "Q90", "P19", "Dee", "Paris", evidences=[]),
        _line("Q5", "Q90", "P19", "Eve", "Paris"),
    ])
    facts = _facts(read_trex(str(folder), None, progress=False)).set_index("subject_id")
    assert facts.loc["Q1", "evidence_title"] == "Ada (person)"
    assert facts.loc["Q1", "evidence_text"] == "Ada was born in the French capital in 1900."
    assert facts.loc["Q2", "evidence_title"] == ""
    assert facts.loc["Q2", "evidence_text"] == "Berlin is where Bob was born."
    assert (facts.loc["Q3", "evidence_title"], facts.loc["Q3", "evidence_text"]) == (
        "Cyd", "Cyd, born in London.")
    for qid in ("Q4", "Q5"):
        assert pd.isna(facts.loc[qid, "evidence_title"])
        assert pd.isna(facts.loc[qid, "evidence_text"])


def test_lama_multi_answer_subject(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    _write_jsonl(folder / "P27.jsonl", [
        _line("Q1", "Q30", "P27", "Ada", "United States"),
        _line("Q1", "Q145", "P27", "Ada", "United Kingdom"),
        _line("Q2", "Q142", "P27", "Bob", "France"),
    ])
    facts = _facts(read_trex(str(folder), None, progress=False))
    ada = facts[facts["subject_id"] == "Q1"]
    assert len(ada) == 2
    for answers in ada["answers"]:
        assert list(answers) == ["United Kingdom", "United States"]
    assert list(facts[facts["subject_id"] == "Q2"]["answers"].iloc[0]) == ["France"]


def test_lama_unknown_relation_lists_present(lama):
    with pytest.raises(UserError) as err:
        read_trex(str(lama), ["P19", "P999"], progress=False)
    msg = str(err.value)
    assert msg == f"relation P999 not found in {lama}; relations present: P19, P20"


def test_unknown_relation_list_is_capped_and_naturally_sorted(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(1, 41):
        _write_jsonl(folder / f"P{i}.jsonl", [_line("Q1", "Q2", f"P{i}")])
    with pytest.raises(UserError) as err:
        read_trex(str(folder), ["P999"], progress=False)
    listed = str(err.value).split("relations present: ")[1]
    assert listed.startswith("P1, P2, P3, ")
    assert listed.endswith("P30, ... (10 more)")


@pytest.mark.parametrize("parser", ["default", "stdlib"])
@pytest.mark.parametrize("bad, reason", [
    ('{"sub_uri": "Q9", ', "not valid JSON"),
    ('["a", "list"]', "not a JSON object"),
    ('{"sub_uri": "Q9", "sub_label": "x", "obj_uri": "Q8"}', "missing key(s) obj_label"),
    ('{"sub_uri": " ", "sub_label": "x", "obj_uri": "Q8", "obj_label": "y"}', "empty sub_uri"),
    ('{"sub_uri": "Q9", "sub_label": "x", "obj_uri": null, "obj_label": "y"}', "empty obj_uri"),
])
def test_lama_malformed_line_names_file_and_line(tmp_path, monkeypatch, parser, bad, reason):
    if parser == "stdlib":
        monkeypatch.setattr(trex, "_loads", json.loads)
    folder = tmp_path / "bad"
    folder.mkdir()
    path = _write_jsonl(folder / "P19.jsonl", [_line("Q1", "Q2"), "", bad, _line("Q3", "Q4")])
    with pytest.raises(UserError) as err:
        read_trex(str(folder), None, progress=False)
    msg = str(err.value)
    assert msg.startswith(f"{path}:3: {reason}")
    assert "--skip-bad" in msg
    assert "\n" not in msg


def test_lama_skip_bad_counts(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    _write_jsonl(folder / "P19.jsonl", [_line("Q1", "Q2"), "{oops", _line("Q3", "Q4"),
                                        '{"sub_uri": ""}'])
    _write_jsonl(folder / "P20.jsonl", [_line("Q5", "Q6"), "[1]"])
    result = read_trex(str(folder), None, skip_bad=True, progress=False)
    assert result.dropped["bad_lines"] == 3
    assert result.provenance["files"]["P19.jsonl"]["bad_lines"] == 2
    assert result.provenance["files"]["P20.jsonl"]["bad_lines"] == 1
    assert result.provenance["files"]["P19.jsonl"]["lines"] == 4
    _, _, counts = assemble_facts(result)
    assert counts["dropped"]["bad_lines"] == 3
    assert counts["facts_per_relation"] == {"P19": 2, "P20": 1}


def test_lama_limit_takes_first_rows_per_relation(lama):
    result = read_trex(str(lama), None, limit=2, progress=False)
    t = result.triples
    assert t[t["relation_id"] == "P19"]["subject_id"].tolist() == ["Q1", "Q2"]
    assert t[t["relation_id"] == "P20"]["subject_id"].tolist() == ["Q1", "Q2"]
    assert len(read_trex(str(lama), ["P19"], limit=1, progress=False).triples) == 1


def test_lama_label_null_is_dropped_by_assembly(tmp_path):
    folder = tmp_path / "nl"
    folder.mkdir()
    rec = _line("Q1", "Q2")
    rec["obj_label"] = None
    _write_jsonl(folder / "P19.jsonl", [rec, _line("Q3", "Q4")])
    _, _, counts = assemble_facts(read_trex(str(folder), None, progress=False))
    assert counts["facts"] == 1
    assert counts["dropped"]["rows_without_object_label"] == 1


# ----------------------------------------------------------------------------- Hugging Face

@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """Keep the Arrow cache that load_dataset writes inside the test's folder."""
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def _relbert_folder(root: Path) -> Path:
    """A small local copy in the column layout of relbert/t_rex."""
    root.mkdir()
    splits = {
        "train": [("place of birth", "Ada", "Paris", "Ada", "Ada was born in Paris."),
                  ("place of birth", "Bob", "Berlin", "Bob", "Bob was born in Berlin."),
                  ("country of citizenship", "Ada", "France", "Ada", "Ada is French."),
                  ("country of citizenship", "Ada", "Italy", "Ada", "Ada is Italian.")],
        "validation": [("place of birth", "Cyd", "London", "Cyd", "Cyd, London.")],
        "test": [("place of birth", "Dee", "Rome", None, None)],
    }
    for split, rows in splits.items():
        pd.DataFrame(rows, columns=["relation", "head", "tail", "title", "text"]).to_parquet(
            root / f"{split}.parquet", index=False)
    return root


def test_hf_local_parquet_folder(tmp_path, hf_cache):
    folder = _relbert_folder(tmp_path / "relbert")
    result = read_trex(str(folder), None, progress=False)
    t = result.triples
    # Splits concatenated train, validation, test whatever the file system order.
    assert t[t["relation_id"] == "place of birth"]["subject"].tolist() == ["Ada", "Bob", "Cyd",
                                                                           "Dee"]
    # Without id columns the labels are the ids.
    assert (t["subject_id"] == t["subject"]).all() and (t["object_id"] == t["object"]).all()
    assert result.provenance["kind"] == "hf"
    assert list(result.provenance["splits"]) == ["train", "validation", "test"]
    assert result.provenance["files"]["train.parquet"] == file_sha256(folder / "train.parquet")
    assert result.provenance["splits"]["train"]["fingerprint"]

    facts = _facts(result).set_index(["relation_id", "subject_id", "object_id"])
    ada = facts.loc[("place of birth", "Ada", "Paris")]
    assert (ada["evidence_title"], ada["evidence_text"]) == ("Ada", "Ada was born in Paris.")
    dee = facts.loc[("place of birth", "Dee", "Rome")]
    assert pd.isna(dee["evidence_title"]) and pd.isna(dee["evidence_text"])
    for obj in ("France", "Italy"):
        assert list(facts.loc[("country of citizenship", "Ada", obj), "answers"]) == [
            "France", "Italy"]


def test_hf_relations_limit_and_unknown(tmp_path, hf_cache):
    folder = _relbert_folder(tmp_path / "relbert")
    result = read_trex(str(folder), ["place of birth"], limit=2, progress=False)
    assert result.triples["subject"].tolist() == ["Ada", "Bob"]
    assert result.provenance["relations"] == ["place of birth"]
    with pytest.raises(UserError, match=re.escape(
            "relation P19 not found in " + str(folder)
            + "; relations present: country of citizenship, place of birth")):
        read_trex(str(folder), ["P19"], progress=False)


def test_hf_id_columns_and_synonyms(tmp_path, hf_cache):
    folder = tmp_path / "ids"
    folder.mkdir()
    pd.DataFrame({"predicate_id": ["P19", "P19"], "sub_label": ["Ada", "Bob"],
                  "obj_label": ["Paris", "Berlin"], "sub_uri": ["Q1", "Q2"],
                  "obj_uri": ["Q90", None]}).to_parquet(folder / "train.parquet", index=False)
    t = read_trex(str(folder), None, progress=False).triples
    assert t["subject_id"].tolist() == ["Q1", "Q2"]
    assert t["object_id"].tolist() == ["Q90", "Berlin"]  # missing id: the label stands in
    assert "evidence_text" not in t.columns


def test_hf_folder_of_non_relation_jsonl_is_a_dataset(tmp_path, hf_cache):
    # *.jsonl files not named like relations: a Hugging Face json folder, not LAMA.
    folder = tmp_path / "jsonds"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", [{"relation": "P19", "head": "Ada", "tail": "Paris"}])
    result = read_trex(str(folder), None, progress=False)
    assert result.provenance["kind"] == "hf"
    assert result.triples[["relation_id", "subject", "object"]].values.tolist() == [
        ["P19", "Ada", "Paris"]]


def test_hf_missing_columns(tmp_path, hf_cache):
    folder = tmp_path / "cols"
    folder.mkdir()
    pd.DataFrame({"rel": ["P19"], "head": ["Ada"], "tail": ["Paris"]}).to_parquet(
        folder / "train.parquet", index=False)
    with pytest.raises(UserError, match=r"no column for relation: one of relation, predicate.*"
                                        r"columns found: rel, head, tail"):
        read_trex(str(folder), None, progress=False)


def test_hf_empty_relation_is_bad_row(tmp_path, hf_cache):
    folder = tmp_path / "emptyrel"
    folder.mkdir()
    pd.DataFrame({"relation": ["P19", "", None], "head": ["Ada", "Bob", "Cyd"],
                  "tail": ["Paris", "Berlin", "Rome"]}).to_parquet(folder / "train.parquet",
                                                                   index=False)
    with pytest.raises(UserError, match=r"split train row 2: empty relation.*--skip-bad"):
        read_trex(str(folder), None, progress=False)
    result = read_trex(str(folder), None, skip_bad=True, progress=False)
    assert result.dropped["bad_lines"] == 2
    assert result.triples["subject"].tolist() == ["Ada"]


def test_hf_unreachable_hub_id(monkeypatch, tmp_path, hf_cache):
    import datasets.config
    import huggingface_hub.constants

    before = (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE)
    # Set after datasets was imported: the reader must still honour it (no network retries).
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # so that no local folder of that name can exist
    with pytest.raises(UserError) as err:
        read_trex("relbert/t_rex", ["P19"], progress=False)
    msg = str(err.value)
    assert msg.startswith("could not load Hugging Face dataset 'relbert/t_rex'")
    assert "download it where the Hub is reachable" in msg and "local folder" in msg
    # datasets' own reason: it never tried the network (which would mean minutes of retries).
    assert "OfflineModeIsEnabled" in msg
    assert "\n" not in msg
    # Offline mode was switched on for the call only.
    assert (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE) == before


def test_missing_local_path(tmp_path):
    with pytest.raises(UserError, match=r"not found: pass a folder of P<id>\.jsonl files"):
        read_trex(str(tmp_path / "nowhere" / "trex"), None, progress=False)
