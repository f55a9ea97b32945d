"""FKTC: importing the MONITOR authors' files (quirks included) and building from facts."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.datasets.fktc import FktcConfig, build_fktc
from factprobe.builders.datasets.fktc_import import FktcImportConfig, import_fktc
from factprobe.builders.templates.files import question_text
from factprobe.builders.templates.filters import bleu_similarity
from tests.evaluators.cli.test_cli import assert_user_error, run

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "fktc"


def _raw_lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()[1:] if ln.strip()]


def test_import_keeps_every_fact_negative_and_distinct_question(tmp_path):
    out = import_fktc(FktcImportConfig(path=str(FIXTURES), out=str(tmp_path / "fktc")))
    facts = pq.read_table(out / "facts.parquet").to_pylist()
    templates = pq.read_table(out / "templates.parquet").to_pylist()
    manifest = json.loads((out / "dataset.json").read_text())

    files = {"P17": FIXTURES / "P17-subclass.json", "P276": FIXTURES / "P276-subclass..json",
             "P101": FIXTURES / "P101-subclass.json"}
    for rid, path in files.items():
        raw = _raw_lines(path)
        mine = [f for f in facts if f["relation_id"] == rid]
        # every line is a fact, in file order, with its negatives exactly as published
        assert [(f["subject"], f["object"], f["negatives"]) for f in mine] == [
            (r["subject"].strip(), r["object"].strip(), r["taxonomy"]) for r in raw]
        assert all(f["source"] == f"fktc:{path.name}" for f in mine)
        listed = json.loads(path.read_text().splitlines()[0])["relations"]
        qs = [t for t in templates if t["relation_id"] == rid]
        assert [question_text(t["template"]) for t in qs] == list(dict.fromkeys(listed))
        assert [t["is_base"] for t in qs] == [True] + [False] * (len(qs) - 1)
        assert question_text(qs[0]["template"]) == listed[0]
        assert all(t["template"].endswith("? [Y].") and t["origin"] == "imported" for t in qs)

    assert len({f["fact_id"] for f in facts}) == len(facts) == 10  # the repeated line too
    zermatt = [f for f in facts if f["subject"] == "Zermatt"]
    assert len(zermatt) == 2 and zermatt[0]["negatives"] != zermatt[1]["negatives"]
    westphalia = [f for f in facts if f["subject"] == "Treaty of Westphalia"]
    assert all(f["answers"] == ["Münster", "Osnabrück"] for f in westphalia)

    counts = manifest["counts"]
    assert counts["per_relation"]["P276"]["questions"] == 6
    assert counts["per_relation"]["P276"]["file"] == "P276-subclass..json"
    assert counts["per_relation"]["P101"]["questions_listed"] == 7
    assert counts["per_relation"]["P101"]["questions"] == 6
    assert counts["quirks"] == {"repeated_questions": 1, "repeated_facts": 1,
                                "facts_without_5_negatives": 0,
                                "negatives_not_an_object_of_the_relation": 47,
                                "negatives_that_are_answers": 3}
    assert counts["relations_with_fewer_than_7_questions"] == ["P101", "P276"]
    # 13 prompts per fact where a relation has 7 questions: R + 1 positive + 5 negatives
    assert counts["prompts"] == 4 * (7 + 1 + 5) + 3 * (6 + 1 + 5) + 3 * (6 + 1 + 5)


def test_import_is_deterministic(tmp_path):
    a = import_fktc(FktcImportConfig(path=str(FIXTURES), out=str(tmp_path / "a")))
    b = import_fktc(FktcImportConfig(path=str(FIXTURES), out=str(tmp_path / "b")))
    for name in ("facts.parquet", "templates.parquet", "relations.parquet"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


@pytest.mark.parametrize("content,needle", [
    ('{"subject": "a"}\n', "first line must be"),
    ('{"relations": ["Where is it?"]}\n', "must hold [X] once"),
    ('{"relations": ["Where is [X]?"]}\nnot json\n', "P9-subclass.json:2: not a JSON line"),
    ('{"relations": ["Where is [X]?"]}\n{"subject": "a", "object": "b", "taxonomy": "c"}\n',
     "'taxonomy' must be a list"),
])
def test_import_bad_files(tmp_path, content, needle):
    (tmp_path / "P9-subclass.json").write_text(content)
    with pytest.raises(UserError, match=None) as err:
        import_fktc(FktcImportConfig(path=str(tmp_path), out=str(tmp_path / "out")))
    assert needle in str(err.value)
    assert not (tmp_path / "out").exists()


def test_build_on_the_sample_offline(tmp_path, sample_datasets):
    out = build_fktc(FktcConfig(facts=str(sample_datasets / "sample-aliases"),
                                out=str(tmp_path / "fktc")))
    facts = pq.read_table(out / "facts.parquet").to_pylist()
    templates = pq.read_table(out / "templates.parquet").to_pylist()
    counts = json.loads((out / "dataset.json").read_text())["counts"]
    by_rel: dict[str, list] = {}
    for t in templates:
        by_rel.setdefault(t["relation_id"], []).append(t)
    assert len(by_rel) == 9
    for rid, qs in by_rel.items():
        assert sum(t["is_base"] for t in qs) == 1 and 4 <= len(qs) <= 7
        assert all(t["style"] == "question" for t in qs)
        texts = [question_text(t["template"]) for t in qs]
        assert all(bleu_similarity(a, b) < 0.7 for i, a in enumerate(texts) for b in texts[i + 1:])
    for f in facts:
        assert not set(f["negatives"]) & set(f["answers"]) and f["object"] not in f["negatives"]
        assert len(set(f["negatives"])) == len(f["negatives"]) <= 5
    full = [f for f in facts if f["relation_id"] == "rel:capital"]
    assert all(len(f["negatives"]) == 5 for f in full)
    assert counts["short_negatives"] == sum(len(f["negatives"]) < 5 for f in facts)
    assert counts["prompts"] == sum(len(by_rel[f["relation_id"]]) + 1 + len(f["negatives"])
                                    for f in facts)


def test_cli_fktc_import_and_bad_input(tmp_path):
    ok = run("build", "fktc", "--import", str(FIXTURES), "--out", str(tmp_path / "o"), "--quiet",
             cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert_user_error(run("build", "fktc", "--import", str(tmp_path / "nope"), "--out",
                          str(tmp_path / "x"), cwd=tmp_path), "is not a folder")
    assert_user_error(run("build", "fktc", "--out", str(tmp_path / "x"), cwd=tmp_path),
                      "needs --facts")
    assert not (tmp_path / "x").exists()
