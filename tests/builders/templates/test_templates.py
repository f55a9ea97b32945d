"""The hand-written template files, their validation, and bad input to the template commands
through the real command line (exit 2, one line, nothing written, the cache untouched)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.templates.files import (
    STYLES,
    load_template_dir,
    parse_relation_file,
    question_problem,
    question_text,
)
from factprobe.builders.templates.filters import diverse
from tests.evaluators.cli.test_cli import assert_user_error, run
from tests.llm_server import ScriptedChat

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "data" / "templates"
SAMPLE_RELATIONS = ["rel:capital", "rel:continent", "rel:officialLanguage", "rel:currency",
                    "rel:country", "rel:birthYear", "rel:awardReceived", "rel:fieldOfWork",
                    "rel:sexOrGender"]
LAMA_41 = ("P17 P19 P20 P27 P30 P31 P36 P37 P39 P47 P101 P103 P106 P108 P127 P131 P136 P138 "
           "P140 P159 P176 P178 P190 P264 P276 P279 P361 P364 P407 P413 P449 P463 P495 P527 "
           "P530 P740 P937 P1001 P1303 P1376 P1412").split()

GOOD = """relation: "ex:r"
templates:
  - {id: m1, style: statement, text: "[X] is related to [Y]."}
  - {id: m2, style: question, text: "What is [X] related to? [Y]."}
"""


def test_shipped_templates_cover_the_sample_and_the_41_lama_relations():
    files = load_template_dir(TEMPLATES)
    assert set(files) == set(SAMPLE_RELATIONS) | set(LAMA_41)
    for rid, rel in files.items():
        styles = Counter(t.style for t in rel.templates)
        assert rel.label and rel.description and rel.subject_category and rel.object_category
        assert styles["check"] >= 1 and styles["question"] >= 1 and styles["statement"] >= 2, rid
        assert styles["statement"] + styles["question"] >= 5, rid
        if rid in SAMPLE_RELATIONS:
            # FKTC on the sample needs a base question and at least 3 diverse paraphrases
            qs = [question_text(t.template) for t in rel.templates if t.style == "question"]
            assert len(diverse(qs, 0.7)) >= 4, rid
        for t in rel.templates:
            assert t.template_id.startswith(rid + "/")
            if t.style == "question":
                assert question_problem(t.template) is None


@pytest.mark.parametrize("text,needle", [
    ('relation: "ex:r"\ntemplates:\n  - {id: m1, style: statement, text: "[X] is big."}\n',
     "template 'm1': [X] appears 1 times and [Y] 0 times"),
    ('relation: "ex:r"\ntemplates:\n  - {id: m1, style: statement, text: "[X] is [Z] of [Y]."}\n',
     "unknown placeholder [Z]"),
    (GOOD + "  - {id: m1, style: statement, text: \"[Y] relates to [X].\"}\n", "duplicate id"),
    (GOOD + "  - {id: m3, style: cloze, text: \"[Y] relates to [X].\"}\n", "style 'cloze'"),
    (GOOD + "  - {id: m3, style: statement, text: \"[Y] relates to [X].\", lang: en}\n",
     "unknown keys ['lang']"),
    (GOOD.replace("relation:", "colour: red\nrelation:"), "unknown keys ['colour']"),
    (GOOD + "  - {id: m3, style: question, text: \"[X] is related to [Y]?\"}\n",
     "a question template is"),
    (GOOD + "  - {id: m3, style: statement, text: \"[X]  IS related to [Y]\"}\n",
     "same text as template 'm1'"),
    ('relation: "ex:other"\ntemplates: []\n', "must be named 'ex_other.yaml'"),
    ("relation: [unclosed\n", "not valid YAML"),
])
def test_bad_template_files(tmp_path, text, needle):
    path = tmp_path / "ex_r.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        parse_relation_file(path)
    assert needle in str(err.value) and "ex_r.yaml" in str(err.value)


def test_good_file_parses(tmp_path):
    path = tmp_path / "ex_r.yaml"
    path.write_text(GOOD)
    rel = parse_relation_file(path)
    assert [t.template_id for t in rel.templates] == ["ex:r/m1", "ex:r/m2"]
    assert {t.style for t in rel.templates} <= set(STYLES)


def _one_relation(tmp_path) -> Path:
    d = tmp_path / "tpl"
    d.mkdir(exist_ok=True)
    (d / "ex_r.yaml").write_text(GOOD)
    return d


def _templates_cli(tmp_path, *args):
    return run("build", "templates", "--templates-dir", str(_one_relation(tmp_path)),
               "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
               "--quiet", *args, cwd=tmp_path)


def _nothing_written(tmp_path):
    assert not (tmp_path / "out").exists()
    assert not any(p.name.startswith(".out.") for p in tmp_path.iterdir())
    assert not list((tmp_path / "cache").rglob("*.json")) if (tmp_path / "cache").exists() \
        else True


def test_cli_cache_miss_without_endpoint(tmp_path):
    proc = _templates_cli(tmp_path, "--llm-model", "m", "--paraphrases", "2")
    assert_user_error(proc, "no cached answer for ex:r/m1", "--llm-base-url")
    _nothing_written(tmp_path)


def test_cli_paraphrases_without_model(tmp_path):
    assert_user_error(_templates_cli(tmp_path, "--paraphrases", "2"), "needs --llm-model")
    _nothing_written(tmp_path)


def test_cli_failing_endpoint(tmp_path):
    with ScriptedChat(default=lambda req: ("status", 500, {}, "boom")) as server:
        proc = _templates_cli(tmp_path, "--llm-model", "m", "--llm-base-url", server.url,
                              "--retries", "0")
    assert_user_error(proc, "failed after 1 attempt:", "HTTP 500")
    _nothing_written(tmp_path)


def test_cli_endpoint_timeout(tmp_path):
    with ScriptedChat(default=lambda req: ("sleep", 3, "[]")) as server:
        proc = _templates_cli(tmp_path, "--llm-model", "m", "--llm-base-url", server.url,
                              "--retries", "0", "--timeout", "0.5")
    assert_user_error(proc, "no answer within 0.5 s")
    _nothing_written(tmp_path)


def test_cli_unreachable_endpoint(tmp_path, closed_port_url):
    base = closed_port_url.rsplit("/", 1)[0] + "/v1"
    proc = _templates_cli(tmp_path, "--llm-model", "m", "--llm-base-url", base, "--retries", "0")
    assert_user_error(proc, "cannot reach the endpoint")
    _nothing_written(tmp_path)


def test_cli_answers_that_are_never_a_list_give_a_reported_shortfall(tmp_path):
    with ScriptedChat(default=lambda req: "Here are some paraphrases: none.") as server:
        proc = run("build", "templates", "--templates-dir", str(_one_relation(tmp_path)),
                   "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
                   "--llm-model", "m", "--llm-base-url", server.url, "--paraphrases", "2",
                   "--max-requests", "2", cwd=tmp_path)
        assert len(server.requests) == 4
    assert proc.returncode == 0, proc.stderr
    assert "2 hand-written templates are short of paraphrases, 4 missing" in proc.stderr
    counts = json.loads((tmp_path / "out" / "dataset.json").read_text())["counts"]
    assert counts["not_a_list"] == 4 and counts["missing"] == 4
    assert pq.read_table(tmp_path / "out" / "templates.parquet").num_rows == 2


def test_cli_unknown_relation(tmp_path):
    proc = _templates_cli(tmp_path, "--relations", "P4242", "--paraphrases", "0")
    assert_user_error(proc, "no template file for P4242")
    _nothing_written(tmp_path)


def test_cli_relation_not_in_facts(tmp_path, sample_datasets):
    proc = run("build", "templates", "--facts", str(sample_datasets / "sample-aliases"),
               "--relations", "P36", "--paraphrases", "0", "--out", str(tmp_path / "out"),
               "--quiet", cwd=tmp_path)
    assert_user_error(proc, "P36, not a relation of")
    _nothing_written(tmp_path)


def test_cli_template_without_placeholders(tmp_path):
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "ex_r.yaml").write_text(GOOD.replace("[X] is related to [Y].", "It is related."))
    proc = run("build", "templates", "--templates-dir", str(d), "--paraphrases", "0",
               "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert_user_error(proc, "ex_r.yaml", "template 'm1'", "[X] appears 0 times")
    _nothing_written(tmp_path)


def test_cli_review_naming_unknown_templates(tmp_path):
    review = tmp_path / "review.csv"
    review.write_text("decision,template_id\nkeep,ex:r/m1\ndrop,ex:r/m9\n")
    proc = _templates_cli(tmp_path, "--paraphrases", "0", "--review-in", str(review))
    assert_user_error(proc, "names 1 templates this build does not have (ex:r/m9)")
    _nothing_written(tmp_path)
    review.write_text("decision,template_id\nmaybe,ex:r/m1\n")
    assert_user_error(_templates_cli(tmp_path, "--paraphrases", "0", "--review-in", str(review)),
                      "review.csv:2", "'keep' or 'drop'")


def test_cli_manual_only_build_is_deterministic(tmp_path, sample_datasets):
    outs = []
    for name in ("a", "b"):
        proc = run("build", "templates", "--paraphrases", "0", "--facts",
                   str(sample_datasets / "sample-aliases"), "--out", str(tmp_path / name),
                   "--quiet", cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        outs.append({p.name: p.read_bytes() for p in (tmp_path / name).iterdir()})
    assert outs[0]["templates.parquet"] == outs[1]["templates.parquet"]
    t = pq.read_table(tmp_path / "a" / "templates.parquet").to_pylist()
    assert len(t) == 72 and {r["relation_id"] for r in t} == set(SAMPLE_RELATIONS)
    assert [r["template_id"] for r in t] == sorted(r["template_id"] for r in t)


@pytest.mark.parametrize("cmd", ["templates", "misprimes", "multiprompt", "fktc"])
def test_help_shows_examples(cmd):
    out = run("build", cmd, "--help")
    assert out.returncode == 0 and "examples:" in out.stdout
