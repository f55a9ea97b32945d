"""MONITOR on cloze statements (``build fktc --frame statement``, the frames ParaRel's patterns
give) on the planted model: it was taught the hand-written statements, so its planted facts'
anchors match the gold where held-out ones do not, and MONITOR, PFD and IRD come out."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.planted.conftest import assert_valid, cli, evaluate, validity_of


@pytest.fixture(scope="module")
def statement_run(world, causal_model, tmp_path_factory):
    t = tmp_path_factory.mktemp("monitor-statements")
    cli("build", "fktc", "--facts", str(world["subset"]), "--templates", str(world["templates"]),
        "--frame", "statement", "--out", str(t / "fktc"))
    return t / "fktc", evaluate("monitor", t / "fktc", causal_model, t / "run")


def test_statements_are_posed_and_the_planted_facts_score_above_held_out(statement_run):
    fktc, run = statement_run
    templates = pq.read_table(fktc / "templates.parquet").to_pylist()
    assert templates and all(t["style"] == "statement" and t["frame"] == "statement"
                             for t in templates)
    assert_valid(validity_of(run))
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["facts_with_anchor"] > 0
    assert metrics["monitor"]["value"] is not None and metrics["pfd"]["value"] is not None
