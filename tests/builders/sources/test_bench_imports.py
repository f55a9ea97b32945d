"""The benchmark importers (issue 27, part 1): LAMA (T-REx and Google-RE), PopQA,
EntityQuestions, BEAR and ParaRel read from small fixtures in their published formats
(tests/fixtures/benchmarks/: BEAR's and ParaRel's rows are lines of the released files; LAMA's,
PopQA's and EntityQuestions' are written in the released files' fields), with golden counts per
relation, the kept ids, splits and extra columns, the provenance (file hashes, release), a
malformed variant of each refused in one line naming file, line and field with nothing written,
and the existing builders (mc, multiprompt) run on each import unchanged."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256, read_manifest
from factprobe.builders.datasets.build_facts import build_facts
from factprobe.builders.datasets.mc import MCConfig, build_mc
from factprobe.builders.datasets.multiprompt import MultipromptConfig, build_multiprompt
from factprobe.builders.sources.config import FactsConfig
from factprobe.builders.templates.imported import ImportTemplatesConfig, build_imported_templates

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
PATHS = {"lama": FIX / "lama" / "data", "popqa": FIX / "popqa" / "popQA.tsv",
         "entityquestions": FIX / "entityquestions" / "dataset", "bear": FIX / "bear" / "BEAR",
         "pararel": FIX / "pararel" / "data"}
GOLDEN = {  # facts per relation, read off the fixture files
    "lama": {"P19": 4, "P36": 4, "date_of_birth": 2, "place_of_birth": 3},
    "popqa": {"P106": 4, "P36": 4},
    "entityquestions": {"P19": 5, "P40": 4},
    "bear": {"P19": 4, "P36": 4},
    "pararel": {"P19": 4, "P36": 4},
}


def _build(fmt: str, out: Path, path: Path | None = None, **kw) -> dict:
    build_facts(FactsConfig(source=fmt, relations=None, out=str(out),
                            path=str(path or PATHS[fmt]), progress=False, **kw))
    return pq.read_table(out / "facts.parquet").to_pylist()


@pytest.mark.parametrize("fmt", sorted(GOLDEN))
def test_golden_counts_and_provenance(fmt, tmp_path):
    rows = _build(fmt, tmp_path / "f")
    per = {}
    for r in rows:
        per[r["relation_id"]] = per.get(r["relation_id"], 0) + 1
    assert per == GOLDEN[fmt]
    assert {r["source"] for r in rows} == {fmt}
    manifest = read_manifest(tmp_path / "f")
    src = manifest["source"]
    assert src["type"] == fmt and src["release"] and src["bad_lines"] == 0
    # every file read is recorded with its hash
    root = PATHS[fmt] if PATHS[fmt].is_dir() else PATHS[fmt].parent
    for name, info in src["files"].items():
        where = root / name if (root / name).is_file() else root.parent / Path(name).name
        assert info["sha256"] == file_sha256(where), name
    assert manifest["counts"]["facts"] == sum(GOLDEN[fmt].values())


def test_same_inputs_same_bytes(tmp_path):
    for fmt in ("popqa", "bear"):
        _build(fmt, tmp_path / "a")
        _build(fmt, tmp_path / "b")
        assert (tmp_path / "a" / "facts.parquet").read_bytes() == \
            (tmp_path / "b" / "facts.parquet").read_bytes()
        shutil.rmtree(tmp_path / "a"), shutil.rmtree(tmp_path / "b")


def test_lama_keeps_ids_evidence_judgments_and_types(tmp_path):
    rows = {(r["relation_id"], r["subject"]): r for r in _build("lama", tmp_path / "f")}
    paris = rows[("P36", "France")]
    assert (paris["subject_id"], paris["object_id"], paris["object"]) == ("Q142", "Q90", "Paris")
    assert paris["uuid"] == "0a6c1c4a-0f6b-4b8e-9e34-1c1a1d6b2c01"
    assert paris["evidence_text"] == "The capital of France is Paris ."
    assert paris["relation_type"] == "1-1" and paris["split"] == "test"
    martin = rows[("place_of_birth", "Peter F. Martin")]
    assert (martin["subject_id"], martin["object_id"]) == ("/m/09gb0bw", "/m/0dbdy")
    assert (martin["judgments_yes"], martin["judgments_no"]) == (4, 1)
    assert martin["evidence_text"] == "He is a Providence native and a Vietnam veteran ."
    assert rows[("place_of_birth", "Anna Müller")]["subject_aliases"] == ["Anna Mueller"]
    assert rows[("place_of_birth", "Jean Dupont")]["object_aliases"] == ["City of Light"]
    assert rows[("date_of_birth", "Peter F. Martin")]["object"] == "1941"
    rel = {r["relation_id"]: r for r in pq.read_table(tmp_path / "f" / "relations.parquet")
           .to_pylist()}
    assert rel["P19"]["label"] == "place of birth" and rel["place_of_birth"]["label"] == \
        "place of birth"


def test_lama_trex_folder_alone(tmp_path):
    rows = _build("lama", tmp_path / "f", PATHS["lama"] / "TREx")
    assert {r["relation_id"] for r in rows} == {"P19", "P36"}


def test_popqa_keeps_popularity_ids_and_possible_answers(tmp_path):
    rows = {r["subject"]: r for r in _build("popqa", tmp_path / "f")}
    r = rows["George Rankin"]
    assert (r["relation_id"], r["subject_id"], r["object_id"]) == ("P106", "Q5543720", "Q82955")
    assert (r["s_pop"], r["o_pop"], r["popqa_id"], r["popqa_prop_id"]) == (142, 25692,
                                                                           4222362, 22)
    assert r["question"] == "What is George Rankin's occupation?"
    assert r["subject_aliases"] == ["George James Rankin"]
    # possible_answers (and o_aliases) are the object's other names; the label is not repeated
    assert r["object_aliases"] == sorted(["political leader", "political figure", "polit.",
                                          "pol"])
    assert pq.read_table(tmp_path / "f" / "facts.parquet").schema.field("s_pop").type == "int64"


def test_entityquestions_templates_subjects_and_splits(tmp_path):
    rows = _build("entityquestions", tmp_path / "f")
    by = {r["question"]: r for r in rows}
    assert by["Who is Abraham Lincoln's child?"]["subject"] == "Abraham Lincoln"
    kant = by["Where was Immanuel Kant born?"]
    assert (kant["subject"], kant["object"], kant["split"], kant["source_index"]) == (
        "Immanuel Kant", "Königsberg", "test", 0)
    assert kant["object_aliases"] == ["Kaliningrad"]
    assert {r["split"] for r in rows} == {"train", "dev", "test"}
    src = read_manifest(tmp_path / "f")["source"]
    assert src["templates"] == {"P19": "Where was [X] born?", "P40": "Who is [X]'s child?"}
    assert src["templates_not_as_published"] == []   # both as in relation_query_templates.json
    # P36 has a single question: its template cannot be seen, the row is counted, not lost
    assert src["skipped"] == {"template_not_recoverable": 1}
    assert read_manifest(tmp_path / "f")["counts"]["dropped"][
        "skipped_template_not_recoverable"] == 1


def test_bear_answer_space_and_aliases(tmp_path):
    rows = _build("bear", tmp_path / "f")
    meta = json.loads((PATHS["bear"] / "metadata_relations.json").read_text())
    for r in rows:
        space = meta[r["relation_id"]]
        assert r["answer_space"] == space["answer_space_labels"]
        assert space["answer_space_ids"][r["answer_idx"]] == r["object_id"]
        assert r["domains"]
    morocco = next(r for r in rows if r["subject"] == "Morocco")
    assert "Kingdom of Morocco" in morocco["subject_aliases"]


def test_relations_and_limit(tmp_path):
    build_facts(FactsConfig(source="popqa", relations=("P36",), limit=2, out=str(tmp_path / "f"),
                            path=str(PATHS["popqa"]), progress=False))
    rows = pq.read_table(tmp_path / "f" / "facts.parquet").to_pylist()
    assert [r["subject"] for r in rows] == ["Ghana", "Nepal"]
    with pytest.raises(UserError, match="P999 not found"):
        build_facts(FactsConfig(source="bear", relations=("P999",), out=str(tmp_path / "g"),
                                path=str(PATHS["bear"]), progress=False))


# ------------------------------------------------------------------ malformed files

def _copy(fmt: str, tmp: Path) -> Path:
    src = PATHS[fmt]
    if src.is_file():
        dest = tmp / src.name
        shutil.copy(src, dest)
        return dest
    dest = tmp / "in" / src.parent.name / src.name
    shutil.copytree(src.parent, dest.parent)
    return dest


def _replace_line(path: Path, n: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[n - 1] = text + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def _corrupt_lama(root):
    f = root / "TREx" / "P36.jsonl"
    row = json.loads(f.read_text().splitlines()[1])
    row["obj_label"] = ["Berlin"]
    _replace_line(f, 2, json.dumps(row))
    return f"{f}:2: field 'obj_label' not a non-empty text (list)"


def _corrupt_google(root):
    f = root / "Google_RE" / "place_of_birth_test.jsonl"
    _replace_line(f, 3, '{"sub": "/m/0c3x9k", "sub_label": "Jean Dupont"')
    return f"{f}:3: not a JSON line"


def _corrupt_popqa(path):
    _replace_line(path, 3, path.read_text().splitlines()[2].replace("\t63\t", "\tmany\t"))
    return f"{path}:3: field 's_pop' is 'many', not an integer"


def _corrupt_eq(root):
    f = root / "test" / "P40.test.json"
    data = json.loads(f.read_text())
    data[1]["answers"] = "Carl Philipp Emanuel Bach"
    f.write_text(json.dumps(data))
    return f"{f}: item 1: field 'answers' is not a list of texts"


def _corrupt_bear(root):
    f = root / "P19.jsonl"
    row = json.loads(f.read_text().splitlines()[0])
    row["answer_idx"] = 99
    _replace_line(f, 1, json.dumps(row))
    return f"{f}:1: field 'answer_idx' is 99, not a place in the answer space of 5"


def _corrupt_pararel(root):
    f = root / "trex_lms_vocab" / "P19.jsonl"
    _replace_line(f, 4, '{"sub_label": ["Paris"], "obj_label": "Paris"}')
    return f"{f}:4: field 'sub_label' not a non-empty text (list)"


CORRUPT = {"lama": _corrupt_lama, "lama-google": _corrupt_google, "popqa": _corrupt_popqa,
           "entityquestions": _corrupt_eq, "bear": _corrupt_bear, "pararel": _corrupt_pararel}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_malformed_refused_in_one_line_nothing_written(case, tmp_path):
    fmt = case.split("-")[0]
    path = _copy(fmt, tmp_path)
    expected = CORRUPT[case](path)
    out = tmp_path / "out"
    with pytest.raises(UserError) as err:
        _build(fmt, out, path)
    message = str(err.value)
    assert message.startswith(expected), message
    assert "\n" not in message and "--skip-bad" in message
    assert not out.exists()
    # --skip-bad imports the rest and counts the line
    rows = _build(fmt, out, path, skip_bad=True)
    assert len(rows) == sum(GOLDEN[fmt].values()) - 1
    assert read_manifest(out)["counts"]["dropped"]["bad_lines"] == 1


def test_popqa_record_spanning_lines_is_named_by_its_first_line(tmp_path):
    """A quoted field may hold a newline (csv reads it as one field), so a record can span
    lines; a bad record is named by the line it starts on, and the records after it by theirs
    (csv's line_num is the record's last line: 4, not 3, before)."""
    path = _copy("popqa", tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    fields = lines[2].split("\t")
    fields[15] = '"What is\nJohn Mayne\'s occupation?"'   # question, lines 3-4 now
    fields[13] = "many"                                    # s_pop
    _replace_line(path, 3, "\t".join(fields))
    with pytest.raises(UserError, match=r"popQA.tsv:3: field 's_pop' is 'many'"):
        _build("popqa", tmp_path / "out", path)
    # the same record valid: the next one (file line 5, the fixture's line 4) is named so
    fields[13] = "63"
    lines[2] = "\t".join(fields)
    lines[3] = lines[3].replace("\thttp://www.wikidata.org/entity/Q5718860", "\tQ5718860")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"popQA.tsv:5: field 's_uri' is 'Q5718860'"):
        _build("popqa", tmp_path / "out", path)
    rows = _build("popqa", tmp_path / "out", path, skip_bad=True)
    mayne = [r for r in rows if r["subject"] == "John Mayne"]
    assert mayne and mayne[0]["question"] == "What is\nJohn Mayne's occupation?"


def test_wrong_inputs_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    for fmt, path, text in [
            ("lama", tmp_path / "empty", "holds neither TREx"),
            ("popqa", tmp_path / "nothing.tsv", "is not a file"),
            ("entityquestions", tmp_path / "empty", "holds no P<id>"),
            ("bear", tmp_path / "empty", "has no metadata_relations.json"),
            ("pararel", tmp_path / "empty", "holds neither trex_lms_vocab")]:
        with pytest.raises(UserError, match=text):
            _build(fmt, tmp_path / "out", path)
    header_only = tmp_path / "popQA.tsv"
    header_only.write_text("id\tsubj\n")
    with pytest.raises(UserError, match=r"popQA.tsv:1: the header lacks prop, obj"):
        _build("popqa", tmp_path / "out", header_only)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ templates and builders

def test_imported_templates_are_the_published_texts(tmp_path):
    expect = {"lama": {"P19/lama": "[X] was born in [Y] .",
                       "place_of_birth/lama": "[X] was born in [Y] .",
                       "date_of_birth/lama": "[X] (born [Y])."},
              "entityquestions": {"P19/eq": "Where was [X] born? [Y].",
                                  "P40/eq": "Who is [X]'s child? [Y]."},
              "bear": {"P36/b1": "The capital of [X] is [Y]."},
              "pararel": {"P19/pr01": "[X] was born in [Y]."}}
    counts = {"lama": 5, "entityquestions": 2, "bear": 6, "pararel": 19}
    for fmt, texts in expect.items():
        out, c = build_imported_templates(ImportTemplatesConfig(fmt, str(PATHS[fmt]),
                                                                str(tmp_path / fmt)))
        rows = {r["template_id"]: r for r in pq.read_table(out / "templates.parquet").to_pylist()}
        assert c["templates"] == len(rows) == counts[fmt]
        for tid, text in texts.items():
            assert rows[tid]["template"] == text and rows[tid]["origin"] == "imported"
    style = {r["template_id"]: r["style"] for r in
             pq.read_table(tmp_path / "entityquestions" / "templates.parquet").to_pylist()}
    assert style["P19/eq"] == "question"


def test_pararel_pattern_missing_field_named(tmp_path):
    root = _copy("pararel", tmp_path)
    f = root / "pattern_data" / "graphs_json" / "P19.jsonl"
    _replace_line(f, 2, '{"lemma": "from"}')
    with pytest.raises(UserError, match=rf"^{f}:2: field 'pattern' missing"):
        build_imported_templates(ImportTemplatesConfig("pararel", str(root), str(tmp_path / "t")))
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("fmt", sorted(GOLDEN))
def test_mc_builds_from_each_import(fmt, tmp_path):
    _build(fmt, tmp_path / "f")
    build_mc(MCConfig(facts=str(tmp_path / "f"), out=str(tmp_path / "mc"), choices=3,
                      min_facts=1, min_objects=3, train=1, test=2, progress=False))
    mc = pq.read_table(tmp_path / "mc" / "facts.parquet")
    per = {}
    for r in mc.to_pylist():
        assert r["object"] in r["choices"] and len(r["choices"]) == 3
        per[r["relation_id"]] = per.get(r["relation_id"], 0) + 1
    # every relation with 3 distinct objects and 3 pairs gives 1 train + 2 test rows
    assert set(per.values()) == {3}
    # the import's extra columns ride along into the MC rows
    facts_cols = set(pq.read_schema(tmp_path / "f" / "facts.parquet").names)
    assert facts_cols <= set(mc.schema.names)
    if fmt == "bear":   # BEAR's distractors come from its answer space
        assert all(set(r["choices"]) <= set(r["answer_space"]) for r in mc.to_pylist())


@pytest.mark.parametrize("fmt", ["pararel", "lama", "bear"])
def test_multiprompt_from_imported_templates(fmt, tmp_path):
    _build(fmt, tmp_path / "f")
    build_imported_templates(ImportTemplatesConfig(fmt, str(PATHS[fmt]), str(tmp_path / "t")))
    build_multiprompt(MultipromptConfig(facts=str(tmp_path / "f"), templates=str(tmp_path / "t"),
                                        out=str(tmp_path / "mp"), progress=False))
    stats = read_manifest(tmp_path / "mp")["counts"]["statistics"]
    templates = pq.read_table(tmp_path / "t" / "templates.parquet").to_pylist()
    per_rel = {}
    for t in templates:
        per_rel[t["relation_id"]] = per_rel.get(t["relation_id"], 0) + 1
    kept = [r for r in GOLDEN[fmt] if r in per_rel]
    assert stats["templates"] == sum(per_rel[r] for r in kept)
    assert stats["unique_triples"] == sum(GOLDEN[fmt][r] for r in kept)
    assert stats["derived_triples"] >= sum(GOLDEN[fmt][r] * per_rel[r] for r in kept)


# ------------------------------------------------------------------ the command line

def test_cli_prints_counts_and_refuses_in_one_line(tmp_path, capsys):
    from factprobe.cli.app import main
    assert main(["build", "facts", "--source", "entityquestions", "--path",
                 str(PATHS["entityquestions"]), "--relations", "all",
                 "--out", str(tmp_path / "eq")]) == 0
    out = capsys.readouterr().err   # the command's one line of news goes to stderr
    assert out.strip() == (f"wrote {tmp_path / 'eq'}: 9 facts of 2 relations; not imported: "
                           f"skipped_template_not_recoverable 1")
    assert main(["build", "import-templates", "--format", "pararel", "--path",
                 str(PATHS["pararel"]), "--out", str(tmp_path / "t")]) == 0
    assert capsys.readouterr().err.strip() == f"wrote {tmp_path / 't'}: 19 templates of 2 relations"
    path = _copy("popqa", tmp_path)
    expected = _corrupt_popqa(path)
    assert main(["build", "facts", "--source", "popqa", "--path", str(path), "--relations",
                 "all", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err
    assert not (tmp_path / "bad").exists()
    # an --endpoint is refused for a file source, naming what it reads
    assert main(["build", "facts", "--source", "bear", "--endpoint", "http://127.0.0.1:9/q",
                 "--relations", "all", "--out", str(tmp_path / "x")]) == 2
    assert "--source bear reads --path" in capsys.readouterr().err


@pytest.mark.slow
def test_every_method_runs_on_the_imports(tmp_path):
    """docs/benchmarks-in.md's chains, on the fixtures with the fake backend and MC settings
    that fit them: import -> mc -> zp-lke and prompt; -> multiprompt -> belief and belief-icl;
    -> fktc -> monitor; -> one report of them all."""
    from factprobe.cli.app import main

    def run(*args):
        assert main([*args, "--quiet"]) == 0, args

    def fake(method, dataset, out, *more):
        run("eval", method, "--dataset", str(tmp_path / dataset), "--backend", "fake",
            "--model", "fake", "--out", str(tmp_path / "runs" / out), *more)

    small = ["--choices", "3", "--min-facts", "1", "--min-objects", "3", "--train", "1",
             "--test", "2"]
    for fmt in ("popqa", "bear", "pararel", "entityquestions"):
        run("build", "facts", "--source", fmt, "--path", str(PATHS[fmt]), "--relations", "all",
            "--out", str(tmp_path / fmt))
        run("build", "mc", "--facts", str(tmp_path / fmt), "--out", str(tmp_path / f"{fmt}-mc"),
            *small)
    for fmt in ("bear", "pararel", "entityquestions"):
        run("build", "import-templates", "--format", fmt, "--path", str(PATHS[fmt]),
            "--out", str(tmp_path / f"{fmt}-t"))
    fake("zp-lke", "popqa-mc", "zp", "--examples", "1")
    fake("prompt", "bear-mc", "prompt", "--templates", str(tmp_path / "bear-t"))
    run("build", "multiprompt", "--facts", str(tmp_path / "pararel"), "--templates",
        str(tmp_path / "pararel-t"), "--out", str(tmp_path / "pararel-mp"))
    fake("belief", "pararel-mp", "belief")
    fake("belief-icl", "pararel-mp", "icl")
    run("build", "fktc", "--facts", str(tmp_path / "entityquestions"), "--templates",
        str(tmp_path / "entityquestions-t"), "--questions", "1",
        "--out", str(tmp_path / "eq-fktc"))
    fake("monitor", "eq-fktc", "monitor")
    run("report", "--results", str(tmp_path / "runs"), "--out", str(tmp_path / "report"),
        "--bootstrap", "20", "--samplings", "20", "--no-plots")
    report = (tmp_path / "report" / "report.md").read_text()
    for method in ("zp-lke", "prompt", "belief", "belief-icl", "monitor"):
        assert method in report


def test_hostile_files_one_line(tmp_path):
    """What a broken or hostile release brings: a number past int64, JSON nested 200,000 deep,
    a line of 17 MB, answer-space lists of different lengths: each one line, nothing written."""
    big = _copy("popqa", tmp_path)
    _replace_line(big, 2, big.read_text().splitlines()[1].replace("\t142\t", "\t" + "9" * 25 + "\t"))
    eq = tmp_path / "eq" / "test"
    eq.mkdir(parents=True)
    (eq / "P19.test.json").write_text("[" * 200_000)
    lama = tmp_path / "lama" / "TREx"
    lama.mkdir(parents=True)
    (lama / "P1.jsonl").write_text('{"sub_uri": "' + "x" * (17 << 20) + '"}\n')
    bear = tmp_path / "bear"
    shutil.copytree(PATHS["bear"], bear)
    (bear / "metadata_relations.json").write_text(json.dumps({"P19": {
        "templates": ["[X] x [Y]"], "answer_space_labels": ["a"],
        "answer_space_ids": ["Q1", "Q2"]}}))
    for fmt, path, text in [
            ("popqa", big, r"popQA.tsv:2: field 's_pop' is '9999"),
            ("entityquestions", tmp_path / "eq", r"P19.test.json: not a JSON file"),
            ("lama", tmp_path / "lama", r"P1.jsonl:1: a line longer than 16 MB"),
            ("bear", bear, r"relation P19: answer_space_labels has 1 entries, answer_space_ids 2")]:
        with pytest.raises(UserError, match=text) as err:
            _build(fmt, tmp_path / "out", path)
        assert "\n" not in str(err.value)
        assert not (tmp_path / "out").exists()


def test_bear_mc_poses_the_whole_answer_space(tmp_path):
    """build mc --choices-from answer_space: each row's options are its relation's published
    answer space (lm-pub-quiz's posing), every instance kept when train + test exceed them."""
    rows = _build("bear", tmp_path / "f")
    build_mc(MCConfig(facts=str(tmp_path / "f"), out=str(tmp_path / "mc"), min_facts=1,
                      min_objects=1, train=0, test=1000, choices_from="answer_space",
                      progress=False))
    mc = pq.read_table(tmp_path / "mc" / "facts.parquet").to_pylist()
    assert len(mc) == len(rows)
    for r in mc:
        assert r["choices"] == r["answer_space"] and r["object"] in r["choices"]
        assert r["split"] == "test"
    manifest = read_manifest(tmp_path / "mc")
    assert manifest["params"]["choices_from"] == "answer_space"
    assert manifest["counts"]["chance"] == pytest.approx(1 / 5)
    assert manifest["counts"]["per_relation"]["P19"]["test"] == 4
    with pytest.raises(UserError, match="--choices-from uuid: .* no such column; its option "
                                        "lists: answer_space, domains"):
        build_mc(MCConfig(facts=str(tmp_path / "f"), out=str(tmp_path / "x"),
                          choices_from="uuid", progress=False))
    with pytest.raises(UserError, match="--choices-from answer_idx: the column is int32"):
        build_mc(MCConfig(facts=str(tmp_path / "f"), out=str(tmp_path / "x"),
                          choices_from="answer_idx", progress=False))
    assert not (tmp_path / "x").exists()


def test_choices_from_keeps_the_gold_and_drops_other_answers():
    import pyarrow as pa
    from factprobe.builders.datasets.mc_options import published_options
    base = pa.table({"fact_id": ["f1"], "space": [["Paris", "Lyon", "Nice"]]})
    arr, _ = published_options(base, "space", ["Paris"], [["Lyon", "Paris"]])
    assert arr.to_pylist() == [["Paris", "Nice"]]
    with pytest.raises(UserError, match=r"fact f1 \(gold 'Rome'\) is not among its space"):
        published_options(base, "space", ["Rome"], [["Rome"]])


def test_bear_big_derives_the_answer_space(tmp_path):
    """BEAR-big's metadata holds templates only and its lines no answer_idx: the answer space is
    the relation's distinct objects in file order, recorded as derived."""
    rows = _build("bear", tmp_path / "f", FIX / "bear" / "BEAR-big")
    lines = [json.loads(x) for x in (FIX / "bear" / "BEAR-big" / "P36.jsonl").read_text()
             .splitlines()]
    space = list(dict.fromkeys(x["obj_label"] for x in lines))
    assert len(rows) == len(lines) == 4
    for r in rows:
        assert r["answer_space"] == space and space[r["answer_idx"]] == r["object"]
    src = read_manifest(tmp_path / "f")["source"]
    assert src["answer_space_derived"] == ["P36"] and "BEAR-big" in src["release"]
    out, counts = build_imported_templates(ImportTemplatesConfig(
        "bear", str(FIX / "bear" / "BEAR-big"), str(tmp_path / "t")))
    assert counts["templates"] == 3


def test_bear_names_only_the_relations_asked(tmp_path):
    """With --relations, the manifest's lists and the 'not imported' counts are of the relations
    asked: BEAR-big's P414 (named, no instance file) is no fact left out of a P36 import, and a
    relation not asked is not 'derived' (before, every relation of the folder was listed)."""
    root = tmp_path / "BEAR-big"
    shutil.copytree(FIX / "bear" / "BEAR-big", root)
    meta = json.loads((root / "metadata_relations.json").read_text())
    meta["P414"] = {"templates": ["[X] is traded on the [Y]."]}
    meta["P19"] = {"templates": ["[X] was born in [Y]."]}
    (root / "metadata_relations.json").write_text(json.dumps(meta))
    shutil.copy(FIX / "bear" / "BEAR" / "P19.jsonl", root / "P19.jsonl")
    build_facts(FactsConfig(source="bear", relations=("P36",), out=str(tmp_path / "f"),
                            path=str(root), progress=False))
    manifest = read_manifest(tmp_path / "f")
    assert manifest["source"]["answer_space_derived"] == ["P36"]
    assert "relations_without_instance_file" not in manifest["source"]
    assert "skipped_relations_without_instance_file" not in manifest["counts"]["dropped"]
    build_facts(FactsConfig(source="bear", relations=("P36", "P414"), out=str(tmp_path / "g"),
                            path=str(root), progress=False))
    assert read_manifest(tmp_path / "g")["source"]["relations_without_instance_file"] == ["P414"]


def test_card_describes_the_import(tmp_path):
    """The dataset card (publish --dry-run) names the benchmark, its release, each file read
    with its sha256, the columns the import keeps, and the terms the authors state."""
    from factprobe.cli.app import main
    for fmt, license in (("lama", "cc-by-nc-4.0"), ("entityquestions", "mit"),
                         ("popqa", "cc-by-4.0")):
        _build(fmt, tmp_path / fmt)
        assert main(["publish", str(tmp_path / fmt), "--repo-id", f"me/{fmt}", "--dry-run",
                     str(tmp_path / f"hub-{fmt}"), "--quiet"]) == 0
        card = (tmp_path / f"hub-{fmt}" / "README.md").read_text()
        assert f"license: {license}" in card
        src = read_manifest(tmp_path / fmt)["source"]
        assert src["release"].split(" (")[0] in card
        for info in src["files"].values():
            assert info["sha256"] in card
    assert "PopQA: the subject's popularity (monthly Wikipedia page views)" in card
    assert "check that its terms allow CC BY 4.0" in card


def test_a_label_left_empty_is_a_fact_without_label_counted(tmp_path):
    """A label present but empty or null (not a malformed line) is dropped by assembly and
    counted, as for every source; a missing key is a malformed line."""
    root = _copy("lama", tmp_path)
    f = root / "TREx" / "P36.jsonl"
    row = json.loads(f.read_text().splitlines()[0])
    row["sub_label"] = None
    _replace_line(f, 1, json.dumps(row))
    rows = _build("lama", tmp_path / "out", root)
    assert len(rows) == sum(GOLDEN["lama"].values()) - 1
    dropped = read_manifest(tmp_path / "out")["counts"]["dropped"]
    assert dropped["rows_without_subject_label"] == 1 and dropped["bad_lines"] == 0
    del row["sub_label"]
    _replace_line(f, 1, json.dumps(row))
    with pytest.raises(UserError, match=rf"^{f}:1: field 'sub_label' missing"):
        _build("lama", tmp_path / "out2", root)


def test_a_relation_with_nothing_importable_says_why(tmp_path):
    with pytest.raises(UserError, match=r"holds no facts for the relations asked \(P36\) "
                                        r"\(left out: skipped_template_not_recoverable 1\)"):
        build_facts(FactsConfig(source="entityquestions", relations=("P36",),
                                out=str(tmp_path / "f"), path=str(PATHS["entityquestions"]),
                                progress=False))


def test_bear_relation_without_file_or_metadata_is_named_not_refused(tmp_path):
    """The released BEAR-big names P414 in its metadata and ships no P414.jsonl: counted and
    named; a P<id>.jsonl the metadata does not name is imported with its objects' answer space."""
    root = tmp_path / "BEAR-big"
    shutil.copytree(FIX / "bear" / "BEAR-big", root)
    meta = json.loads((root / "metadata_relations.json").read_text())
    meta["P414"] = {"templates": ["[X] is traded on the [Y]."]}
    (root / "metadata_relations.json").write_text(json.dumps(meta))
    shutil.copy(FIX / "bear" / "BEAR" / "P19.jsonl", root / "P19.jsonl")
    rows = _build("bear", tmp_path / "f", root)
    assert {r["relation_id"] for r in rows} == {"P19", "P36"}
    src = read_manifest(tmp_path / "f")["source"]
    assert src["relations_without_instance_file"] == ["P414"]
    assert src["relations_without_metadata"] == ["P19"]
    assert read_manifest(tmp_path / "f")["counts"]["dropped"][
        "skipped_relations_without_instance_file"] == 1
