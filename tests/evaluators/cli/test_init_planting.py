"""A user's own graph, as a new user brings it: three small graphs of different shapes (4
relations, 100-300 facts each, names never seen), `factprobe init` and `dvc repro` with no
edit give converged planted models and validity AUROC >= 0.9 for every method (issue #28;
slow: three whole pipelines)."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from factprobe.evaluators.methods import METHODS
from tests.evaluators.cli.planting_graphs import GRAPHS, facts, write_graph, write_templates
from tests.evaluators.cli.pipeline_run import BIN, ok

# every method with a DVC stage whose metrics have a validity block (the table's)
VALIDATED = [f"{n}/" for n, m in METHODS.items()
             if m.probe.pipeline is not None and m.metrics.validity_blocks]


# Graphs known to fall short, with why (a strict xfail, so a case fails loudly once it holds).
# None now: `people` fell short at init's earlier target_accuracy 0.9 (MONITOR 0.881: the
# stopping rule's three-frame mean let the question frame stop at 0.7; docs/planting.md).
KNOWN_SHORT: dict[str, str] = {}


def test_the_graphs_have_the_asked_shapes():
    for name, _, rels in GRAPHS:
        rows = facts(name)
        assert 100 <= len(rows) <= 300 and len({r[2] for r in rows}) == 4 == len(rels)
        for rel, k in rels.items():
            assert len({r[4] for r in rows if r[2] == rel}) == k     # every object used


@pytest.mark.slow
@pytest.mark.parametrize("graph", [
    pytest.param(g[0], marks=pytest.mark.xfail(strict=True, reason=KNOWN_SHORT[g[0]]))
    if g[0] in KNOWN_SHORT else g[0] for g in GRAPHS])
def test_init_and_repro_plant_a_model_that_learned_its_facts(tmp_path, graph):
    if shutil.which("dvc", path=str(BIN)) is None:
        pytest.fail("dvc is missing: pip install 'factprobe[pipeline]'")
    repo = tmp_path / graph
    repo.mkdir()
    ok(repo, "git", "init", "-q")
    ok(repo, "dvc", "init", "-q")
    write_graph(repo / f"{graph}.ttl", graph)
    write_templates(repo / "templates", graph)
    ok(repo, sys.executable, "-m", "factprobe.cli", "init", ".", "--path", f"{graph}.ttl")
    ok(repo, "dvc", "repro")
    for model in ("planted", "planted-mlm"):
        meta = json.loads((repo / "data/models" / model / "planted.json").read_text())
        assert meta["converged"], (model, meta["planted_accuracy"][-5:])
    head = json.loads((repo / f"reports/{graph}/headline.json").read_text())
    validity = {k: v for k, v in head.items() if k.endswith("/validity_auroc")}
    for method in VALIDATED:
        assert any(k.startswith(method) for k in validity), (method, head)
    assert all(v >= 0.9 for v in validity.values()), validity
