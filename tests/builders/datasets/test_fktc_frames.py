"""MONITOR's prompt frames from ParaRel's patterns: ``build fktc --frame statement`` on the small
ParaRel fixture (tests/fixtures/benchmarks/pararel), its golden counts and prompts, and a run of
``eval monitor`` on it (the fake backend: the prompts are the point, not the numbers)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.datasets.build_facts import build_facts
from factprobe.builders.datasets.fktc import FktcConfig, build_fktc
from factprobe.builders.sources.config import FactsConfig
from factprobe.builders.templates.imported import ImportTemplatesConfig, build_imported_templates
from factprobe.core.tables import file_sha256

PARAREL = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks" / "pararel" / "data"


@pytest.fixture
def pararel(tmp_path):
    facts, templates = tmp_path / "pararel-facts", tmp_path / "pararel-templates"
    build_facts(FactsConfig(source="pararel", relations=None, out=str(facts),
                            path=str(PARAREL), progress=False))
    build_imported_templates(ImportTemplatesConfig("pararel", str(PARAREL), str(templates)))
    return facts, templates


def _fktc(pararel, out: Path, **kw) -> Path:
    facts, templates = pararel
    return build_fktc(FktcConfig(facts=str(facts), templates=str(templates), out=str(out),
                                 progress=False, **kw))


def test_statement_frames_golden(pararel, tmp_path):
    out = _fktc(pararel, tmp_path / "fktc", frame="statement")
    templates = pq.read_table(out / "templates.parquet").to_pylist()
    manifest = json.loads((out / "dataset.json").read_text())
    by_rel: dict[str, list] = {}
    for t in templates:
        by_rel.setdefault(t["relation_id"], []).append(t)
    # P19: its 5 patterns, all with [Y] last; P36: 14 patterns, 6 with [Y] first ("[Y] is the
    # capital of [X].") cannot be completed, 8 can, BLEU drops "[X], which has the capital
    # city [Y]." (too close to pr13)
    assert [t["template_id"] for t in by_rel["P19"]] == [f"P19/pr0{i}" for i in range(1, 6)]
    assert [t["template_id"] for t in by_rel["P36"]] == [
        "P36/pr01", "P36/pr02", "P36/pr05", "P36/pr06", "P36/pr07", "P36/pr08", "P36/pr13"]
    # the patterns' own wording, the first of each file the base frame
    assert by_rel["P36"][0]["template"] == "The capital of [X] is [Y] ."
    assert all(t["style"] == "statement" and t["frame"] == "statement" for t in templates)
    assert [t["is_base"] for t in by_rel["P19"]] == [True, False, False, False, False]
    counts = manifest["counts"]
    assert counts["facts"] == 8 and counts["relations"] == 2
    assert counts["per_relation"]["P19"]["questions"] == 5
    assert counts["per_relation"]["P36"]["questions"] == 7
    assert counts["per_relation"]["P36"]["frames_y_not_last"] == 6
    assert counts["per_relation"]["P36"]["questions_dropped_bleu"] == 1
    # 3 negatives a fact (a relation of 4 objects): 4 x (5 + 1 + 3) + 4 x (7 + 1 + 3)
    assert counts["prompts"] == 80
    assert manifest["params"]["frame"] == "statement"
    source = manifest["source"]
    assert source["templates_sha256"] == file_sha256(pararel[1] / "templates.parquet")
    # the chain reaches ParaRel's files: the templates input carries their sha256
    templates_input = manifest["provenance"]["inputs"]["templates"]
    assert "pattern_data/graphs_json/P36.jsonl" in json.dumps(templates_input)


def test_question_frames_unchanged_and_statements_refused_with_a_hint(pararel, tmp_path):
    with pytest.raises(UserError, match="pass --frame statement"):
        _fktc(pararel, tmp_path / "q")
    assert not (tmp_path / "q").exists()
    with pytest.raises(UserError, match="--frame 'cloze'"):
        _fktc(pararel, tmp_path / "c", frame="cloze")


def test_same_inputs_same_bytes(pararel, tmp_path):
    a = _fktc(pararel, tmp_path / "a", frame="statement")
    b = _fktc(pararel, tmp_path / "b", frame="statement")
    for name in ("facts.parquet", "templates.parquet"):
        assert file_sha256(a / name) == file_sha256(b / name)


@pytest.mark.slow
def test_monitor_poses_the_patterns(pararel, tmp_path):
    """import -> fktc --frame statement -> eval monitor -> report, from the command line."""
    from factprobe.cli.app import main
    facts, templates = pararel
    fktc = tmp_path / "pararel-fktc"
    assert main(["build", "fktc", "--facts", str(facts), "--templates", str(templates),
                 "--frame", "statement", "--out", str(fktc), "--quiet"]) == 0
    run = tmp_path / "runs" / "monitor"
    assert main(["eval", "monitor", "--dataset", str(fktc), "--backend", "fake", "--model",
                 "fake", "--out", str(run), "--quiet"]) == 0
    prompts = {r["prompt_id"]: r["text"]
               for r in pq.read_table(run / "prompts.parquet").to_pylist()}
    out = pq.read_table(run / "outputs.parquet").to_pylist()
    anchors = {r["fact_id"]: prompts[r["prompt_id"]] for r in out if r["stage"] == "anchor"}
    fact = next(f for f in pq.read_table(fktc / "facts.parquet").to_pylist()
                if f["subject"] == "Moe Koffman")
    # the positive prompt: the gold, then the base pattern cut before [Y]
    assert anchors[fact["fact_id"]] == "Toronto. Moe Koffman was born in"
    combos = sorted(prompts[r["prompt_id"]] for r in out
                    if r["stage"] == "frames" and r["fact_id"] == fact["fact_id"])
    assert f"{fact['negatives'][0]}. Moe Koffman is native to" in combos
    # R x M frame-context combinations: P19 4 x 5 x 3, P36 4 x 7 x 3
    assert len(anchors) == 8 and sum(r["stage"] == "frames" for r in out) == 144
    assert main(["report", "--results", str(tmp_path / "runs"), "--out",
                 str(tmp_path / "report"), "--bootstrap", "20", "--no-plots", "--quiet"]) == 0
    assert "monitor" in (tmp_path / "report" / "report.md").read_text()


def test_card_says_statements_and_describes_the_frame_column(pararel, tmp_path):
    from factprobe.builders.publish.card import CardOptions
    from factprobe.builders.publish.export import export_hub_folder
    from factprobe.cli.publish import card_methods
    out = _fktc(pararel, tmp_path / "fktc", frame="statement")
    hub = export_hub_folder(out, tmp_path / "hub", CardOptions(repo_id="me/pararel-fktc",
                                                               methods=card_methods()))
    card = (hub / "README.md").read_text()
    assert "on cloze statements" in card and "word-prediction frame" in card
    assert "a cloze statement posed cut before `[Y]`" in card


def test_cli_refuses_statement_frames_for_the_authors_files(tmp_path, capsys):
    from factprobe.cli.app import main
    fktc = Path(__file__).resolve().parents[2] / "data" / "fktc"
    assert main(["build", "fktc", "--import", str(fktc), "--frame", "statement", "--out",
                 str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the authors' files hold questions" in err
    assert not (tmp_path / "x").exists()


def test_a_relation_whose_patterns_all_put_y_first_is_left_out_and_named(tmp_path):
    from factprobe.builders.templates.files import Template
    from factprobe.builders.datasets.fktc import pick_questions, y_not_last
    ts = [Template("P36/pr03", "P36", "[Y] is the capital of [X].", "statement", "imported")]
    assert pick_questions(ts, 7, 0.7, "statement") == ([], 0) and y_not_last(ts) == 1
