"""CSV/TSV triple reader."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256
from factprobe.builders.datasets.facts import assemble_facts
from factprobe.builders.sources.csv_triples import read_csv


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _facts(result) -> pd.DataFrame:
    facts, _, _ = assemble_facts(result)
    return facts.to_pandas()


LABELLED = (
    "subject,relation,object,subject_label,object_label,relation_label,subject_aliases,"
    "object_aliases\n"
    "Q1,P36,Q90,France,Paris,capital,French Republic| République française |,City of Light\n"
    "Q2,P36,Q64,Germany,Berlin,,Deutschland|Germany,\n"
    "Q1,P37,Q150,France,French,official language,,\n"
)


def test_labels_aliases_and_relation_labels(tmp_path):
    path = _write(tmp_path / "kg.csv", LABELLED)
    result = read_csv(str(path), None, progress=False)
    assert result.source_tag == "csv"
    facts, relations, counts = assemble_facts(result)
    f = facts.to_pandas().set_index(["relation_id", "subject_id"])
    assert (f.loc[("P36", "Q1"), "subject"], f.loc[("P36", "Q1"), "object"]) == (
        "France", "Paris")
    assert list(f.loc[("P36", "Q1"), "subject_aliases"]) == ["French Republic",
                                                             "République française"]
    assert list(f.loc[("P36", "Q1"), "object_aliases"]) == ["City of Light"]
    # An alias equal to the entity's own label is not an alias.
    assert list(f.loc[("P36", "Q2"), "subject_aliases"]) == ["Deutschland"]
    assert list(f.loc[("P37", "Q1"), "object_aliases"]) == []
    # Aliases of Q1 from any row reach every fact about Q1.
    assert list(f.loc[("P37", "Q1"), "subject_aliases"]) == ["French Republic",
                                                             "République française"]
    rel = relations.to_pandas().set_index("relation_id")["label"].to_dict()
    assert rel == {"P36": "capital", "P37": "official language"}
    assert counts["facts"] == 3
    assert set(facts.column("source").to_pylist()) == {"csv"}
    assert result.provenance["sha256"] == file_sha256(path)
    assert result.provenance["delimiter"] == ","
    assert result.provenance["bad_lines"] == 0


def test_without_label_columns_ids_are_labels(tmp_path):
    path = _write(tmp_path / "ids.csv", "subject,relation,object\nParis,capital of,France\n")
    f = _facts(read_csv(str(path), None, progress=False))
    assert f[["subject_id", "subject", "object_id", "object"]].values.tolist() == [
        ["Paris", "Paris", "France", "France"]]
    rel = assemble_facts(read_csv(str(path), None, progress=False))[1].to_pylist()
    assert rel[0]["label"] == "capital of"  # no relation_label column: the id


def test_empty_label_cell_means_no_label(tmp_path):
    path = _write(tmp_path / "kg.csv", "subject,relation,object,subject_label,object_label\n"
                                       "Q1,P36,Q90,France,Paris\n"
                                       "Q2,P36,Q64,,Berlin\n"
                                       "Q3,P36,Q65,Spain,\n")
    _, _, counts = assemble_facts(read_csv(str(path), None, progress=False))
    assert counts["facts"] == 1
    assert counts["dropped"]["rows_without_subject_label"] == 1
    assert counts["dropped"]["rows_without_object_label"] == 1


def test_multi_answer(tmp_path):
    path = _write(tmp_path / "kg.csv", "subject,relation,object\nAda,citizen of,France\n"
                                       "Ada,citizen of,Italy\nBob,citizen of,Spain\n")
    f = _facts(read_csv(str(path), None, progress=False))
    ada = f[f["subject_id"] == "Ada"]
    assert [list(a) for a in ada["answers"]] == [["France", "Italy"], ["France", "Italy"]]


def test_tsv_by_extension(tmp_path):
    path = _write(tmp_path / "kg.tsv", "subject\trelation\tobject\tobject_label\n"
                                       "Q1\tP1\tQ2\tParis, France\n")
    result = read_csv(str(path), None, progress=False)
    assert result.provenance["delimiter"] == "\t"
    assert _facts(result)["object"].tolist() == ["Paris, France"]
    # The same content read as comma-separated has no usable header.
    copy = _write(tmp_path / "kg.csv", path.read_text(encoding="utf-8"))
    with pytest.raises(UserError, match="missing required column"):
        read_csv(str(copy), None, progress=False)


@pytest.mark.parametrize("delimiter, expected", [("\t", "\t"), ("tab", "\t"), (";", ";")])
def test_delimiter_override(tmp_path, delimiter, expected):
    sep = expected
    path = _write(tmp_path / "kg.txt", f"subject{sep}relation{sep}object\nQ1{sep}P1{sep}Q2\n")
    result = read_csv(str(path), None, delimiter=delimiter, progress=False)
    assert result.provenance["delimiter"] == expected
    assert result.triples[["subject_id", "relation_id", "object_id"]].values.tolist() == [
        ["Q1", "P1", "Q2"]]


BAD = ("subject,relation,object,object_label\n"      # line 1
       'Q1,P1,Q2,"a label\nover two lines"\n'         # lines 2-3
       "\n"                                           # line 4 (blank, ignored)
       "Q3,P1,Q4\n"                                   # line 5: 3 fields
       "Q5,,Q6,x\n"                                   # line 6: empty relation
       "Q7,P1,Q8,y\n")                                # line 7


def test_bad_row_reports_physical_line(tmp_path):
    path = _write(tmp_path / "bad.csv", BAD)
    with pytest.raises(UserError) as err:
        read_csv(str(path), None, progress=False)
    msg = str(err.value)
    assert msg.startswith(f"{path}:5: 3 fields, the header has 4")
    assert "--skip-bad" in msg and "\n" not in msg
    fixed = _write(tmp_path / "bad2.csv", BAD.replace("Q3,P1,Q4\n", "Q3,P1,Q4,z\n"))
    with pytest.raises(UserError, match=rf"^{tmp_path / 'bad2.csv'}:6: empty relation"):
        read_csv(str(fixed), None, progress=False)


def test_skip_bad_counts(tmp_path):
    path = _write(tmp_path / "bad.csv", BAD)
    result = read_csv(str(path), None, skip_bad=True, progress=False)
    assert result.dropped["bad_lines"] == 2
    assert result.provenance["bad_lines"] == 2
    facts, _, counts = assemble_facts(result)
    assert sorted(facts.column("subject_id").to_pylist()) == ["Q1", "Q7"]
    assert counts["dropped"]["bad_lines"] == 2
    assert facts.to_pandas().set_index("subject_id").loc["Q1", "object"] == (
        "a label\nover two lines")


def test_missing_required_column(tmp_path):
    path = _write(tmp_path / "kg.csv", "subject,predicate,value\nQ1,P1,Q2\n")
    with pytest.raises(UserError) as err:
        read_csv(str(path), None, progress=False)
    msg = str(err.value)
    assert "missing required column(s) relation, object" in msg
    assert "header found: subject, predicate, value" in msg


def test_empty_file(tmp_path):
    path = _write(tmp_path / "kg.csv", "")
    with pytest.raises(UserError, match="is empty"):
        read_csv(str(path), None, progress=False)


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match=r"nope\.csv not found"):
        read_csv(str(tmp_path / "nope.csv"), None, progress=False)


def test_relations_filter_unknown_and_limit(tmp_path):
    rows = "".join(f"S{i},P{1 + i % 2},O{i}\n" for i in range(10))
    path = _write(tmp_path / "kg.csv", "subject,relation,object\n" + rows)
    only = read_csv(str(path), ["P2"], progress=False).triples
    assert set(only["relation_id"]) == {"P2"} and len(only) == 5
    limited = read_csv(str(path), None, limit=2, progress=False).triples
    assert limited.groupby("relation_id")["subject_id"].apply(list).to_dict() == {
        "P1": ["S0", "S2"], "P2": ["S1", "S3"]}
    with pytest.raises(UserError) as err:
        read_csv(str(path), ["P2", "P10"], progress=False)
    assert str(err.value) == f"relation P10 not found in {path}; relations present: P1, P2"


def test_header_is_case_and_space_insensitive_with_bom(tmp_path):
    path = tmp_path / "kg.csv"
    path.write_bytes("\ufeffSubject , Relation,OBJECT\nQ1,P1,Q2\n".encode("utf-8"))
    t = read_csv(str(path), None, progress=False).triples
    assert t[["subject_id", "relation_id", "object_id"]].values.tolist() == [["Q1", "P1", "Q2"]]
