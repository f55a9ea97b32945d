"""``factprobe report --by COLUMN`` (issue 27, part 2): each slice's headline metrics equal
those of a run that had only the slice's facts (its outputs rows cut to them, reported on their
own), for a numeric column bucketed by powers of ten (PopQA's s_pop) and a text one (split of
an EntityQuestions import); a report without --by keeps its bytes; a bad column is one line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from factprobe.cli.app import main

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"


def _run(*args):
    assert main([*args, "--quiet"]) == 0, args


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A zp-lke run on a PopQA import and a MONITOR run on an EntityQuestions import (fake
    backend), made in their folder so run.json's relative dataset paths resolve there."""
    import os
    base = tmp_path_factory.mktemp("by")
    here = os.getcwd()
    os.chdir(base)
    try:
        _run("build", "facts", "--source", "popqa", "--path", str(FIX / "popqa" / "popQA.tsv"),
             "--relations", "all", "--out", "popqa")
        _run("build", "mc", "--facts", "popqa", "--out", "popqa-mc", "--choices", "3",
             "--min-facts", "1", "--min-objects", "3", "--train", "1", "--test", "3")
        _run("eval", "zp-lke", "--dataset", "popqa-mc", "--backend", "fake", "--model", "fake",
             "--examples", "1", "--out", "runs/zp")
        eq = str(FIX / "entityquestions" / "dataset")
        _run("build", "facts", "--source", "entityquestions", "--path", eq, "--relations",
             "all", "--out", "eq")
        _run("build", "import-templates", "--format", "entityquestions", "--path", eq,
             "--out", "eq-t")
        _run("build", "fktc", "--facts", "eq", "--templates", "eq-t", "--questions", "1",
             "--out", "eq-fktc")
        _run("eval", "monitor", "--dataset", "eq-fktc", "--backend", "fake", "--model", "fake",
             "--out", "runs/monitor")
        yield base
    finally:
        os.chdir(here)


def _report(base: Path, results: list[str], out: str, *more: str) -> Path:
    import os
    here = os.getcwd()
    os.chdir(base)
    try:
        _run("report", "--results", *results, "--out", out, "--bootstrap", "100", "--no-plots",
             *more)
    finally:
        os.chdir(here)
    return base / out


def _facts_of(base: Path, dataset: str, column: str) -> pd.Series:
    return pd.read_parquet(base / dataset / "facts.parquet").set_index("fact_id")[column]


@pytest.mark.parametrize("run, dataset, column", [("zp", "popqa-mc", "s_pop"),
                                                  ("monitor", "eq-fktc", "split"),
                                                  ("zp", "popqa-mc", "object_aliases")])
def test_each_slice_is_the_run_on_its_facts_alone(runs, run, dataset, column):
    rep = _report(runs, [f"runs/{run}"], f"rep-{run}", "--by", column)
    by = pd.read_csv(rep / "tables" / f"by_{column}.csv", keep_default_na=False)
    assert len(by["slice"].unique()) >= 2
    outputs = pd.read_parquet(runs / "runs" / run / "outputs.parquet")
    values = _facts_of(runs, dataset, column)
    from factprobe.evaluators.report.slices import NONE, bucket
    if column == "s_pop":
        members = values.map(lambda v: {bucket(v)})
    elif column == "object_aliases":   # a list column: a fact is in the slice of each value
        members = values.map(lambda v: set(v) if len(v) else {NONE})
    else:
        members = values.map(lambda v: {v or NONE})
    for name in by["slice"].unique():
        # the run cut to this slice's facts, reported on its own
        cut = runs / "cuts" / f"{run}-{name}".replace(" ", "").replace(",", "_")
        cut.mkdir(parents=True)
        shutil.copy(runs / "runs" / run / "run.json", cut / "run.json")
        keep = outputs["fact_id"].map(lambda f: name in members[f])
        outputs[keep.to_numpy()].reset_index(drop=True).to_parquet(cut / "outputs.parquet")
        alone = _report(runs, [str(cut)], f"alone-{cut.name}")
        board = pd.read_csv(alone / "tables" / "leaderboard.csv", keep_default_na=False)
        mine = by[by["slice"] == name]
        assert int(mine["facts"].iat[0]) == outputs[keep.to_numpy()]["fact_id"].nunique()
        merged = mine.merge(board, on=["setting", "metric"], suffixes=("", "_alone"))
        assert len(merged) == len(board) > 0
        for col in ("value", "ci_low", "ci_high", "n"):
            assert merged[col].astype(str).tolist() == merged[f"{col}_alone"].astype(str).tolist()


def test_without_by_the_report_is_unchanged_and_by_adds_a_section(runs):
    plain = _report(runs, ["runs/zp"], "plain")
    assert not list((plain / "tables").glob("by_*"))
    sliced = _report(runs, ["runs/zp"], "sliced", "--by", "s_pop")
    text, sliced_text = (plain / "report.md").read_text(), (sliced / "report.md").read_text()
    assert sliced_text.startswith(text.rstrip("\n")) and "## By s_pop" in sliced_text
    assert "[100000, 1000000)" in sliced_text   # the capitals: every s_pop of them is 1e5+
    assert json.loads((plain / "metrics.json").read_text()) == \
        json.loads((sliced / "metrics.json").read_text())


def test_bad_column_one_line(runs, capsys):
    import os
    here = os.getcwd()
    os.chdir(runs)
    try:
        for column, text in (("nope", "--by nope: popqa-mc/facts.parquet has no such column"),):
            assert main(["report", "--results", "runs/zp", "--out", "bad", "--by", column]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and text in err
            assert not Path("bad").exists()
    finally:
        os.chdir(here)
