"""``--device-map``: a model split over CPU memory and disk (accelerate's big-model inference)
scores and generates as the unsplit model, with the shared-prefix cache, the option tries and
the packed rows at work; bad maps are refused before the weights load."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from factprobe.core.errors import UserError
from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.backends import placement
from factprobe.probes.requests import MASK, GenerateRequest, MaskRequest, ScoreRequest

PREFIX = "Albert Einstein 1879, Niels Bohr 1885, Marie Curie 1867, Max Planck 1858, "
FACTS = [("Max Planck", ["1858", "1879", "1901", "18"]), ("Niels Bohr", ["1885", "2"]),
         ("Peru", ["Lima", " Lima", "Tokyo x y z"]), ("Japan", ["Tokyo", "Paris", "Rome"])]
# the planted-style tiny models' two blocks: the first in CPU memory, the second on disk
SPLIT = {"gpt2": {"transformer.wte": "cpu", "transformer.wpe": "cpu", "transformer.drop": "cpu",
                  "transformer.h.0": "cpu", "transformer.h.1": "disk", "transformer.ln_f": "disk",
                  "lm_head": "cpu"},
         "llama": {"model.embed_tokens": "cpu", "model.rotary_emb": "cpu",
                   "model.layers.0": "cpu", "model.layers.1": "disk", "model.norm": "disk",
                   "lm_head": "disk"},
         "bert": {"bert.embeddings": "cpu", "bert.encoder.layer.0": "cpu",
                  "bert.encoder.layer.1": "disk", "cls": "cpu"}}


@pytest.fixture(scope="module")
def gpt2_small_dir(tmp_path_factory):
    """A GPT-2-shaped random model (4 layers, width 256: 3.5M parameters, 14 MB) built from
    its config, with the locally trained tokenizer."""
    from factprobe.probes.planting.model_factory import causal_model, save, train_tokenizer
    from tests.conftest import TEXT
    tok = train_tokenizer(TEXT, vocab_size=400)
    return save(causal_model(tok, layers=4, width=256, heads=4), tok,
                tmp_path_factory.mktemp("gpt2-256"))


def _weights_bytes(folder: Path) -> int:
    return (Path(folder) / "model.safetensors").stat().st_size


def _file_map(tmp_path: Path, arch: str) -> str:
    f = tmp_path / f"{arch}-map.json"
    f.write_text(json.dumps(SPLIT[arch]))
    return str(f)


def _file_config(folder, tmp_path, arch, **kw) -> BackendConfig:
    path = _file_map(tmp_path, arch)
    return BackendConfig(str(folder), device_map=path,
                         device_map_modules=placement.read_map_file(path),
                         offload_folder=str(tmp_path / "offload"), **kw)


def _requests():
    scores = [ScoreRequest(PREFIX + s, tuple(" " + o for o in opts), group="g")
              for s, opts in FACTS]
    greedy = [GenerateRequest(PREFIX + s, max_new_tokens=6, group="g") for s, _ in FACTS]
    sampled = [GenerateRequest(PREFIX + s, max_new_tokens=5, group="g", samples=4, seed=3)
               for s, _ in FACTS[:2]]
    return scores, greedy, sampled


def _assert_same_numbers(whole, split) -> None:
    """Every score, teacher-forced probability and generated token of ``split`` within 1e-5
    of ``whole``'s, and the same greedy and sampled texts."""
    scores, greedy, sampled = _requests()
    for a, b in zip(whole.score(scores), split.score(scores)):
        for x, y in zip(a, b):
            assert len(x.token_logprobs) == len(y.token_logprobs)
            assert max(abs(p - q) for p, q in zip(x.token_logprobs, y.token_logprobs)) <= 1e-5
    pairs = [(PREFIX + "Peru", whole.encode_pair(PREFIX + "Peru", " Lima")[1])]
    for a, b in zip(whole.token_probs(pairs), split.token_probs(pairs)):
        assert max(abs(p - q) for p, q in zip(a, b)) <= 1e-5
    for reqs in (greedy, sampled):
        ga, gb = whole.generate(reqs), split.generate(reqs)
        assert [[g.text for g in r] for r in ga] == [[g.text for g in r] for r in gb]
        assert [[g.token_ids for g in r] for r in ga] == [[g.token_ids for g in r] for r in gb]
        for ra, rb in zip(ga, gb):
            for x, y in zip(ra, rb):
                assert all(abs(p - q) <= 1e-5 for p, q in zip(x.token_logprobs,
                                                               y.token_logprobs))


def test_gpt2_size_model_split_by_max_memory_scores_as_the_whole(gpt2_small_dir, tmp_path):
    """accelerate's auto map under a CPU budget of 70% of the weights: the embeddings and the
    first block in CPU memory, the other blocks on disk."""
    whole = load_backend(BackendConfig(str(gpt2_small_dir), device="cpu", batch_size=2))
    budget = int(_weights_bytes(gpt2_small_dir) * 0.7)
    split = load_backend(BackendConfig(str(gpt2_small_dir), batch_size=2, device_map="auto",
                                       max_memory=(("cpu", budget),),
                                       offload_folder=str(tmp_path / "offload")))
    placed = split.model.hf_device_map
    assert placed["transformer.h.0"] == "cpu" and placed["transformer.h.3"] == "disk"
    assert split.device == "cpu"
    _assert_same_numbers(whole, split)
    assert split.tokens_computed == whole.tokens_computed    # the prefix cache still works
    assert split.tokens_computed < split.tokens_full / 2
    described = split.describe()
    assert described["model"]["device_map"]["transformer.h.3"] == "disk"
    assert described["backend"]["max_memory"] == (("cpu", budget),)
    assert "device_map" not in whole.describe()["model"]
    assert "device_map" not in whole.describe()["backend"]   # run.json without the flags: as before


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_tiny_model_split_by_a_map_file_scores_as_the_whole(arch, request, tmp_path):
    folder = request.getfixturevalue(f"tiny_{'causal' if arch == 'gpt2' else 'llama'}_dir")
    whole = load_backend(BackendConfig(str(folder), device="cpu", batch_size=3))
    split = load_backend(_file_config(folder, tmp_path, arch, batch_size=3))
    assert set(split.model.hf_device_map.values()) == {"cpu", "disk"}
    _assert_same_numbers(whole, split)


def test_masked_model_split_fills_masks_as_the_whole(tiny_masked_dir, tmp_path):
    whole = load_backend(BackendConfig(str(tiny_masked_dir), kind="hf-masked", device="cpu"))
    split = load_backend(_file_config(tiny_masked_dir, tmp_path, "bert", kind="hf-masked"))
    reqs = [MaskRequest(f"The capital of {c} is {MASK} .", top_k=5,
                        candidates=("Paris", "Lima", "Tokyo"))
            for c in ("France", "Peru", "Japan")]
    for a, b in zip(whole.fill_mask(reqs), split.fill_mask(reqs)):
        assert a.top_tokens == b.top_tokens
        assert max(abs(p - q) for p, q in zip(a.top_probs + a.candidate_probs,
                                              b.top_probs + b.candidate_probs)) <= 1e-5


def test_identity_records_the_computing_devices_not_the_split(tiny_causal_dir, tmp_path):
    """The decision docs/scaling.md states: a layer computes the same numbers wherever its
    weights are kept, so two maps over the same devices give one identity (a run resumes
    under another map), and the identity names the devices that compute."""
    whole = load_backend(BackendConfig(str(tiny_causal_dir), device="cpu"))
    split = load_backend(_file_config(tiny_causal_dir, tmp_path, "gpt2"))
    other = load_backend(BackendConfig(str(tiny_causal_dir), device_map="sequential",
                                       max_memory=(("cpu", 10),),
                                       offload_folder=str(tmp_path / "o2")))
    assert set(other.model.hf_device_map.values()) == {"disk"}
    assert split.identity() == other.identity() == whole.identity()
    assert split.identity()["device"] == "cpu"


def test_disk_without_offload_folder_is_refused_before_loading(tiny_causal_dir):
    with pytest.raises(UserError, match="--offload-folder"):
        load_backend(BackendConfig(str(tiny_causal_dir), device_map="auto",
                                   max_memory=(("cpu", 1000),)))


@pytest.mark.parametrize("mapping,needle", [
    ({"transformer.nope": "cpu", "": "cpu"}, "no module 'transformer.nope'"),
    ({"transformer.h.0": "cpu"}, "no device for"),
    # accelerate's hooks place modules: a parameter's name fails at the first forward pass
    ({"transformer.h.1.mlp.c_fc.bias": "disk", "": "cpu"}, "no module"),
    ({"": 0}, "GPU 0"),
    ({"": "cuda:3"}, "GPU 3"),
])
def test_bad_map_files_are_refused_in_one_line(tiny_causal_dir, tmp_path, mapping, needle):
    f = tmp_path / "map.json"
    f.write_text(json.dumps(mapping))
    cfg = BackendConfig(str(tiny_causal_dir), device_map=str(f),
                        device_map_modules=placement.read_map_file(str(f)))
    if needle.startswith("GPU"):
        pytest.importorskip("torch")
        import torch
        if torch.cuda.is_available():
            pytest.skip("this machine has GPUs")
    with pytest.raises(UserError, match=needle) as info:
        load_backend(cfg)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("content,needle", [
    ("[1, 2]", "non-empty object"), ("{}", "non-empty object"), ("{", "not readable JSON"),
    ('{"lm_head": "gpu"}', "not a device"), ('{"lm_head": true}', "not a device"),
    ('{"lm_head": -1}', "not a device"), ('{"lm_head": [0]}', "not a device"),
])
def test_map_files_that_are_not_a_map_of_modules_to_devices(tmp_path, content, needle):
    f = tmp_path / "map.json"
    f.write_text(content)
    with pytest.raises(UserError, match=needle):
        placement.read_map_file(str(f))


def test_offload_folder_keeps_the_users_files_and_removes_its_own(tiny_causal_dir, tmp_path):
    """factprobe writes in a folder of its own inside --offload-folder and removes it when
    the process ends; a folder it had to create goes too; the user's files stay."""
    mine = tmp_path / "user-folder"
    mine.mkdir()
    (mine / "index.json").write_text("the user's own index\n")
    fresh = tmp_path / "made" / "by" / "factprobe"
    code = ("import sys\n"
            "from factprobe.probes.backends import BackendConfig, load_backend\n"
            "for where in sys.argv[2:]:\n"
            "    b = load_backend(BackendConfig(sys.argv[1], device_map='auto',\n"
            "                     max_memory=(('cpu', 1000),), offload_folder=where))\n"
            "    b.score([])\n"
            "    assert any(p.name.startswith('factprobe-offload-')\n"
            "               for p in __import__('pathlib').Path(where).iterdir())\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tiny_causal_dir), str(mine),
                           str(fresh)], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["index.json"]
    assert (mine / "index.json").read_text() == "the user's own index\n"
    assert not (tmp_path / "made").exists()


def test_max_memory_parsing():
    assert placement.parse_max_memory("0:70GiB,1:70GiB,cpu:200GiB") == (
        ("0", 70 * 2**30), ("1", 70 * 2**30), ("cpu", 200 * 2**30))
    for bad, needle in (("0:70GiB,", "DEVICE:SIZE"), ("cpu", "DEVICE:SIZE"),
                        ("cpu:lots", "not a size"), ("cpu:-1GB", "not a size"),
                        ("disk:1GB", "GPU number"), ("0:1GB,00:2GB", "twice"),
                        ("cpu:1XB", "not a size")):
        with pytest.raises(ValueError, match=needle):
            placement.parse_max_memory(bad)


def test_a_ray_replica_with_several_gpus_spreads_its_model():
    cfg = BackendConfig("m")
    assert placement.replica_config(cfg, 2).device_map == "auto"
    assert placement.replica_config(cfg, 1) is cfg           # one GPU: the model sits on it
    assert placement.replica_config(cfg, 0.5) is cfg
    pinned = BackendConfig("m", device="cuda:0")
    assert placement.replica_config(pinned, 2) is pinned     # --device is an explicit choice
    own = BackendConfig("m", device_map="sequential")
    assert placement.replica_config(own, 4) is own


def test_a_killed_split_run_resumes_under_another_map(tiny_causal_dir, tmp_path, monkeypatch):
    """The identity is the computing devices', so a run killed under one map resumes under
    another over the same devices, and computes only the chunks it had not finished."""
    import pandas as pd

    from factprobe.probes.backends import KINDS
    from factprobe.probes.engine import runner
    from factprobe.probes.engine.runner import EvalConfig, run_eval
    from factprobe.probes.methods.zp_lke import ZPLKEConfig
    from tests.probes.engine.test_runner import _plan, killable
    monkeypatch.setattr(runner, "CHUNK", 2)
    first = _file_config(tiny_causal_dir, tmp_path, "gpt2")
    second = BackendConfig(str(tiny_causal_dir), device_map="auto", max_memory=(("cpu", 10),),
                           offload_folder=str(tmp_path / "other"))
    calls = {"n": 0, "kill": True}
    out = tmp_path / "run"
    ecfg = EvalConfig("zp-lke", "d", str(out), progress=False)
    with pytest.raises(KeyboardInterrupt):
        run_eval(ecfg, first, _plan(), ZPLKEConfig(), {}, kinds=killable(calls))
    calls.update(n=0, kill=False)
    run_eval(ecfg, second, _plan(), ZPLKEConfig(), {}, kinds=killable(calls))
    assert calls["n"] == 2                   # only the two unfinished chunks ran
    whole = tmp_path / "whole"
    run_eval(EvalConfig("zp-lke", "d", str(whole), progress=False),
             BackendConfig(str(tiny_causal_dir), device="cpu"), _plan(), ZPLKEConfig(), {},
             kinds=KINDS)
    key = ["stage", "fact_id", "option", "sample"]
    got, want = (pd.read_parquet(f / "outputs.parquet").sort_values(key).reset_index(drop=True)
                 for f in (out, whole))
    pd.testing.assert_frame_equal(got, want)
