"""docs/extending.md, "Adding a method" and "Adding a metric": the ```python blocks between
the method markers run in order, in one namespace, in a temporary folder, and do what the
prose says they do."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.docs import EXTENDING as DOC
from tests.docs import python_blocks


def blocks() -> list[str]:
    return python_blocks("method")


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    import os
    import sys
    import types
    # A real module for the namespace: dataclasses look their module up in sys.modules.
    module = types.ModuleType("extending_example")
    sys.modules[module.__name__] = module
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("extending"))
    try:
        for i, code in enumerate(blocks()):
            exec(compile(code, f"{DOC.name}[python block {i + 1}]", "exec"), module.__dict__)
        yield Path.cwd(), module.__dict__
    finally:
        os.chdir(here)
        del sys.modules[module.__name__]


def test_the_section_has_the_worked_examples():
    assert len(blocks()) >= 5


def _gold_logprob(model_dir: Path, context: str, continuation: str) -> float:
    """log P(continuation | context), summed over its tokens, straight from transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ctx, cont = tok(context)["input_ids"], tok(continuation)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ctx + cont])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return float(sum(logp[len(ctx) - 1 + i, t] for i, t in enumerate(cont)))


def test_new_method_runs_end_to_end(ran):
    folder, ns = ran
    from factprobe.evaluators.methods import METHODS
    assert "gold-prob" not in METHODS            # the example patched a copy, then restored it
    metrics = json.loads((folder / "run" / "metrics.json").read_text())
    by_hand = [_gold_logprob(folder / "model", s, " " + o) for s, o in ns["pairs"]]
    assert metrics["method"] == "gold-prob" and metrics["facts"] == 3
    assert metrics["mean_logprob"]["value"] == pytest.approx(sum(by_hand) / 3, abs=2e-4)
    assert metrics["mean_logprob"]["per_relation"] == {
        "P36": {"value": metrics["mean_logprob"]["value"]}}
    board = (folder / "report" / "tables" / "leaderboard.md").read_text()
    assert "### gold-prob on capitals" in board and "mean gold log-prob" in board
    assert "gold-prob" in (folder / "report" / "report.md").read_text()


def test_new_metric_is_reported(ran):
    folder, ns = ran
    summary = json.loads((folder / "mc-report" / "metrics.json").read_text())
    got = summary["capitals-mc"]["zp-lke"]["mc-run"]
    assert got["top2_accuracy"] == {"value": 0.6667}              # 2 of 3 golds in the top 2
    assert got["mc_accuracy"]["value"] == pytest.approx(1 / 3, abs=1e-4)
    from factprobe.evaluators.methods import METHODS
    assert "top2_accuracy" not in METHODS["zp-lke"].metrics.headlines
