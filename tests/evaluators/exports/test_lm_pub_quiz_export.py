"""`factprobe export lm-pub-quiz` loaded and run by the lm-pub-quiz package itself on a tiny
local model: every relation, template, answer space and instance arrives as exported."""
from __future__ import annotations

import json

import numpy as np
import pytest

from factprobe.cli.app import main
from tests.evaluators.exports.test_lm_eval_export import mc_dataset, templates_dir


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_lm_pub_quiz_loads_and_evaluates_the_export(fmt, tiny_causal_dir, tmp_path):
    lpq = pytest.importorskip("lm_pub_quiz")
    mc, tpl = mc_dataset(tmp_path / "mc"), templates_dir(tmp_path / "templates")
    out = tmp_path / "bear"
    assert main(["export", "lm-pub-quiz", str(mc), str(out), "--templates", str(tpl),
                 "--format", fmt]) == 0
    meta = json.loads((out / "metadata_relations.json").read_text())

    dataset = lpq.Dataset.from_path(out, lazy=False)
    assert list(dataset.relation_codes) == ["born", "capital"]
    for rel in dataset:
        want = meta[rel.relation_code]
        assert rel.templates == want["templates"]
        assert rel.answer_space.tolist() == want["answer_space_labels"]
        table = rel.instance_table
        assert len(table) == 8 and not table["answer_idx"].isna().any()
        # each instance's answer index points at its own object in the answer space
        assert [want["answer_space_labels"][i] for i in table["answer_idx"]] == \
            [str(o) for o in table["obj_label"]]

    evaluator = lpq.Evaluator.from_model(str(tiny_causal_dir), model_type="CLM", device="cpu")
    results = evaluator.evaluate_dataset(dataset, template_index=1, batch_size=8)
    assert [r.relation_code for r in results] == ["born", "capital"]
    for rel, res in zip(dataset, results):
        table = res.instance_table
        assert len(table) == 8
        # every answer of the space was scored in the template's sentence
        assert all(len(s) == len(rel.answer_space) for s in table["pll_scores"])
        acc = np.mean([np.argmax(s) == a for s, a in zip(table["pll_scores"],
                                                           table["answer_idx"])])
        assert acc == pytest.approx(res.get_metric("accuracy"))
