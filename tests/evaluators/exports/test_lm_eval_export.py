"""`factprobe export lm-eval` run through lm-evaluation-harness's own Python API on tiny local
models: its acc equals `factprobe eval`'s MC accuracy on the same questions, question by
question (the argmax and the log-probabilities), for ZP-LKE and the prompt baselines, with a
tokenizer that adds no BOS (GPT-2 style) and one that does (Llama style)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from factprobe.core.tables import base_manifest, write_dataset

RELATIONS = {"born": ("[X] was born in [Y].", ["1879", "1885", "1867", "1858", "1939", "1901",
                                               "1925", "1910", "1948", "1907"]),
             "capital": ("The capital of [X] is [Y].", ["Paris", "Tokyo", "Lima", "Rome",
                                                        "Madrid", "Berlin", "Oslo", "Bern"])}


def cli(*args: str) -> int:
    from factprobe.cli.app import main
    return main([*args, "--quiet"])


def mc_dataset(folder: Path) -> Path:
    """Two relations, 6 train facts (the examples) and 8 test facts each, 4 to 6 choices per
    test fact (the gold among them), drawn with a fixed seed."""
    rng = np.random.default_rng(7)
    rows = []
    for rel, (_, objects) in RELATIONS.items():
        for i in range(14):
            obj = objects[i % len(objects)]
            test = i >= 6
            k = 4 + i % 3
            choices = [obj] + [o for o in rng.permutation(objects).tolist() if o != obj][:k - 1]
            rows.append({"fact_id": f"{rel}{i}", "relation_id": rel, "subject_id": f"s{rel}{i}",
                         "object_id": f"o{obj}", "subject": f"Person {rel} {i}", "object": obj,
                         "subject_aliases": [], "object_aliases": [], "answers": [obj],
                         "split": "test" if test else "train",
                         "choices": rng.permutation(choices).tolist() if test else []})
    df = pd.DataFrame(rows)
    write_dataset(folder, {"facts": pa.Table.from_pandas(df, preserve_index=False)},
                  base_manifest("mc", "mc", {}, {}, {}))
    return folder


def templates_dir(folder: Path) -> Path:
    folder.mkdir()
    for rel, (text, _) in RELATIONS.items():
        (folder / f"{rel}.yaml").write_text(
            f'relation: "{rel}"\nlabel: "{rel}"\ntemplates:\n'
            f'  - {{id: m1, style: statement, text: "{text}"}}\n'
            f'  - {{id: m2, style: statement, text: "So: {text}"}}\n', encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("export")
    return mc_dataset(base / "mc"), templates_dir(base / "templates")


def lm_eval_samples(task_dir: Path, model: Path) -> tuple[float, list[dict]]:
    import lm_eval
    from lm_eval.tasks import TaskManager
    task = json.loads((task_dir / "factprobe_export.json").read_text())["task"]
    res = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={model},dtype=float32,device=cpu",
        tasks=[task], task_manager=TaskManager(include_path=str(task_dir)), batch_size=4,
        log_samples=True, random_seed=0, numpy_random_seed=0, torch_random_seed=0,
        fewshot_random_seed=0)
    return res["results"][task]["acc,none"], res["samples"][task]


def factprobe_run(run: Path) -> tuple[float, pd.DataFrame]:
    metrics = json.loads((run / "metrics.json").read_text())
    out = pd.read_parquet(run / "outputs.parquet")
    return metrics["mc_accuracy"]["value"], out[out["stage"] == "mc"]


CASES = {
    "zp-lke": (["--examples", "4", "--seed", "1"], ["--examples", "4", "--seeds", "1"]),
    "prompt": (["--templates", "{tpl}", "--template-count", "2"],
               ["--templates", "{tpl}", "--template-count", "2"]),
    "fs-lke": (["--templates", "{tpl}", "--template-id", "m2", "--fs-examples", "3"],
               ["--templates", "{tpl}", "--template-id", "m2", "--fs-examples", "3"]),
}


@pytest.mark.parametrize("model_fixture", ["tiny_causal_dir", "tiny_llama_dir"])
@pytest.mark.parametrize("case", list(CASES))
def test_lm_eval_acc_equals_factprobe(case, model_fixture, data, tmp_path, request):
    pytest.importorskip("lm_eval")
    model = request.getfixturevalue(model_fixture)
    mc, tpl = data
    method = "zp-lke" if case == "zp-lke" else "prompt"
    export_args, eval_args = ([a.replace("{tpl}", str(tpl)) for a in args]
                              for args in CASES[case])
    task_dir = tmp_path / "task"
    assert cli("export", "lm-eval", str(mc), str(task_dir), "--method", method,
               *export_args) == 0
    assert cli("eval", method, "--dataset", str(mc), "--model", str(model), "--out",
               str(tmp_path / "run"), "--response-tokens", "0", "--dtype", "float32",
               "--device", "cpu", *eval_args) == 0
    ours_acc, ours = factprobe_run(tmp_path / "run")
    theirs_acc, samples = lm_eval_samples(task_dir, Path(model))

    keys = ["fact_id"] + (["template_id"] if method == "prompt" else [])
    per_q = {}
    for (key, g) in ours.groupby(keys):
        g = g.sort_values("option")
        lp = g["logprob"].to_numpy()
        per_q[key if isinstance(key, tuple) else (key,)] = (int(np.argmax(lp)), lp,
                                                           int(np.flatnonzero(g["is_gold"])[0]))
    assert len(samples) == len(per_q) == (16 if case != "prompt" else 32)
    for s in samples:
        key = tuple(s["doc"][k] for k in keys)
        pred, lp, gold = per_q[(key[0],) if len(key) == 1 else key]
        theirs = np.array([r[0] for r in s["filtered_resps"]], dtype=float)
        assert s["doc"]["label"] == gold
        assert int(np.argmax(theirs)) == pred, key
        assert np.abs(theirs - lp).max() < 1e-4, key
    assert round(theirs_acc, 4) == ours_acc
    # the same number unrounded: the share of questions whose argmax is the gold
    assert theirs_acc == np.mean([p == g for p, _, g in per_q.values()])
