"""Every method through the real command line on a model split over CPU memory and disk
(``--device-map``, ``--offload-folder``) writes the unsplit run: the same rows and texts,
numbers within 1e-5, the same metrics, the same model identity; and Ray replicas load the
split model as a single process does."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from factprobe.cli.app import main
from tests.probes.backends.test_device_map import SPLIT
from tests.probes.engine.test_scale import assert_same_run, build_workspace
from tests.probes.engine.test_scale import METHODS as SCALE_METHODS

# test_scale's table, with BELIEF and BELIEF-ICL cut to two facts a relation (every template
# still runs, and BELIEF-ICL's zero-shot and 2-relation contexts, samples and greedy answers)
METHODS = dict(SCALE_METHODS)
METHODS["belief"] = ("multiprompt", "bert", ["--limit", "2"])
METHODS["belief-icl"] = ("multiprompt", "gpt2", ["--contexts", "zero,2-relation", "--samples",
                                                 "2", "--sample-prompts", "2",
                                                 "--max-new-tokens", "3", "--limit", "2"])


@pytest.fixture(scope="module")
def ws(tmp_path_factory, tiny_causal_dir, tiny_masked_dir) -> Path:
    ws = build_workspace(tmp_path_factory.mktemp("device-map"), tiny_causal_dir,
                         tiny_masked_dir)
    for arch in ("gpt2", "bert"):
        (ws / f"{arch}.json").write_text(json.dumps(SPLIT[arch]))
    return ws


def eval_args(ws: Path, method: str, out: str, *extra: str) -> list[str]:
    dataset, model, flags = METHODS[method]
    return ["eval", method, "--dataset", str(ws / dataset), "--model", str(ws / model),
            "--out", str(ws / out), "--quiet", *flags, *extra]


def _run_json(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())


def _split_args(ws: Path, method: str) -> list[str]:
    arch = METHODS[method][1]
    return ["--device-map", str(ws / f"{arch}.json"), "--offload-folder", str(ws / "offload")]


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_on_a_split_model_writes_the_unsplit_run(ws, method):
    whole, split = f"{method}-whole", f"{method}-split"
    assert main(eval_args(ws, method, whole, "--device", "cpu")) == 0
    assert main(eval_args(ws, method, split, *_split_args(ws, method))) == 0
    assert_same_run(ws / split, ws / whole)      # texts equal, numbers within 1e-5
    # in fact to the bit: every layer runs the same CPU kernels wherever its weights are kept
    assert (ws / split / "outputs.parquet").read_bytes() == \
        (ws / whole / "outputs.parquet").read_bytes()
    got, want = _run_json(ws / split), _run_json(ws / whole)
    assert set(got["model"]["device_map"].values()) == {"cpu", "disk"}
    assert got["model"]["identity"] == want["model"]["identity"]
    assert got["backend"]["device_map"] == str(ws / f"{METHODS[method][1]}.json")
    assert "device_map" not in want["backend"] and "device_map" not in want["model"]


def test_gpt2_size_model_split_by_max_memory(ws, tmp_path_factory):
    """A 4-layer, width-256 GPT-2 (14 MB of weights) under a 10 MB CPU budget: accelerate
    keeps the embeddings and the first block in memory and streams the rest from disk."""
    from factprobe.probes.planting.model_factory import causal_model, save, train_tokenizer
    from tests.conftest import TEXT
    tok = train_tokenizer(TEXT, vocab_size=400)
    model = save(causal_model(tok, layers=4, width=256), tok, tmp_path_factory.mktemp("g256"))
    common = ["eval", "zp-lke", "--dataset", str(ws / "mc"), "--model", str(model),
              "--examples", "2,3", "--response-tokens", "2", "--quiet"]
    assert main([*common, "--out", str(ws / "g256-whole"), "--device", "cpu"]) == 0
    assert main([*common, "--out", str(ws / "g256-split"), "--device-map", "auto",
                 "--max-memory", "cpu:10MB", "--offload-folder", str(ws / "offload")]) == 0
    assert_same_run(ws / "g256-split", ws / "g256-whole")
    placed = _run_json(ws / "g256-split")["model"]["device_map"]
    assert placed["transformer.h.0"] == "cpu" and placed["transformer.h.3"] == "disk"


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_ray_replicas_load_the_split_model(ray_cluster, ws):
    """Each replica resolves and loads the map itself (the map file's content travels in the
    config: a node needs no copy of the file) and offloads into a folder of its own."""
    local = "zp-lke-whole"
    if not (ws / local).exists():
        assert main(eval_args(ws, "zp-lke", local, "--device", "cpu")) == 0
    offload = ws / "ray-offload"
    assert main(eval_args(ws, "zp-lke", "zp-lke-ray-split", "--executor", "ray",
                          "--replicas", "2", "--device-map", str(ws / "gpt2.json"),
                          "--offload-folder", str(offload))) == 0
    # the replicas removed their offload folders before they were killed
    assert not offload.exists() or not any(offload.iterdir())
    assert_same_run(ws / "zp-lke-ray-split", ws / local)
    got = _run_json(ws / "zp-lke-ray-split")
    assert set(got["model"]["device_map"].values()) == {"cpu", "disk"}
    assert all(r["chunks"] > 0 for r in got["executor"]["per_replica"])
    # by default at the raylet's niceness (started here by ray.init), not Ray's 15 more
    if "RAY_worker_niceness" not in os.environ:
        assert [r["niceness"] for r in got["executor"]["per_replica"]] == [os.nice(0)] * 2
