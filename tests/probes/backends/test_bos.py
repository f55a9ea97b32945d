"""BOS follows the tokenizer's default (what vLLM sends: Llama-family tokenizers add it,
GPT-2/Pythia's do not), ``--add-bos`` / ``--no-add-bos`` override it, and run.json records the
choice. Two tokenizers built here: one whose post-processor puts ``<s>`` in front (as Llama's
``TemplateProcessing(single="<s> $A")``), one with none (as GPT-2's)."""
from __future__ import annotations

import json

import pytest
import torch

from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.backends.tokens import bos_by_default
from factprobe.probes.requests import ScoreRequest

TEXT = ["Albert Einstein 1879, Niels Bohr 1885, Marie Curie 1867, Max Planck 1858",
        "France Paris, Germany Berlin, Italy Rome, Spain Madrid, Japan Tokyo, Peru Lima"] * 20


def tokenizer(adds_bos: bool):
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    from tests.tiny_tokenizers import byte_level_bpe
    tok = byte_level_bpe(TEXT, 300, ["<s>", "</s>", "<pad>"])
    if adds_bos:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from factprobe.probes.planting.model_factory import causal_model, save
    out = {}
    for name, adds in (("llama-like", True), ("gpt2-like", False)):
        tok = tokenizer(adds)
        out[name] = save(causal_model(tok, layers=1, width=32, heads=2, arch="llama"), tok,
                         tmp_path_factory.mktemp(name))
    return out


def test_the_tokenizers_defaults():
    assert bos_by_default(tokenizer(True)) is True
    assert bos_by_default(tokenizer(False)) is False
    # the planted sample model's tokenizer (probes/planting/model_factory.py): a byte-level BPE
    # whose post-processor adds nothing, so its default is no BOS and its numbers stay as they
    # were with the old add_bos=False
    from factprobe.probes.planting.model_factory import train_tokenizer
    assert bos_by_default(train_tokenizer(TEXT, vocab_size=300)) is False


@pytest.mark.parametrize("name, flag, want", [
    ("llama-like", None, True), ("llama-like", False, False),
    ("gpt2-like", None, False), ("gpt2-like", True, True)])
def test_bos_is_resolved_and_sent(models, name, flag, want):
    backend = load_backend(BackendConfig(str(models[name]), add_bos=flag))
    assert backend.config.add_bos is want
    plain = backend.tok("Max Planck", add_special_tokens=False)["input_ids"]
    assert backend.encode("Max Planck") == ([0] if want else []) + plain   # <s> has id 0
    ctx, cont = backend.encode_pair("Marie Curie 1867, Max Planck", " 1858")
    assert ctx == ([0] if want else []) + backend.tok("Marie Curie 1867, Max Planck",
                                                     add_special_tokens=False)["input_ids"]
    assert cont == backend.tok(" 1858", add_special_tokens=False)["input_ids"]
    # the score is that of a plain forward over exactly those ids
    got = backend.score([ScoreRequest("Marie Curie 1867, Max Planck", (" 1858",))])[0][0]
    ids = torch.tensor([ctx + cont])
    with torch.no_grad():
        logp = backend.model(ids).logits.log_softmax(-1)[0]
    want_lp = sum(logp[len(ctx) - 1 + i, t].item() for i, t in enumerate(cont))
    assert got.token_ids == cont and abs(got.logprob - want_lp) < 1e-4


def test_add_bos_on_a_tokenizer_without_bos_is_a_user_error(tmp_path):
    from transformers import PreTrainedTokenizerFast

    from factprobe.core.errors import UserError
    from factprobe.probes.backends.hf_causal import resolve_add_bos
    tok = tokenizer(False)
    bare = PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, eos_token="</s>")
    assert resolve_add_bos(None, bare) is False
    with pytest.raises(UserError, match="no BOS token"):
        resolve_add_bos(True, bare)



def test_flags_parse_to_none_true_false():
    import argparse

    from factprobe.probes.backends.config import add_flags, from_args
    p = argparse.ArgumentParser()
    p.add_argument("--model")
    add_flags(p)                     # the hf kinds' own flags (probes/backends/config.py)
    got = [from_args(p.parse_args(["--model", "m", *f]), "hf-causal").add_bos
           for f in ([], ["--add-bos"], ["--no-add-bos"])]
    assert got == [None, True, False]


@pytest.mark.parametrize("method", ["zp-lke", "prompt"])
def test_run_json_records_the_resolved_choice(models, tmp_path, method, sample_datasets):
    sample_mc = sample_datasets / "sample-mc"
    from factprobe.cli.app import main
    extra = ["--examples", "2"] if method == "zp-lke" else \
        ["--templates", str(sample_mc.parents[1] / "templates")]
    for flags, want in (([], True), (["--no-add-bos"], False)):
        out = tmp_path / f"run{len(flags)}"
        assert main(["eval", method, "--dataset", str(sample_mc), "--model",
                     str(models["llama-like"]), "--out", str(out), "--relations",
                     "rel:capital", "--limit", "1", "--response-tokens", "0", "--quiet",
                     *extra, *flags]) == 0
        run = json.loads((out / "run.json").read_text())
        assert run["backend"]["add_bos"] is want
