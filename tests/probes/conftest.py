"""Small random-weight models with locally trained tokenizers, saved once per session."""
from __future__ import annotations

import pytest

TEXT = [
    "Albert Einstein 1879, Niels Bohr 1885, Marie Curie 1867, Max Planck 1858",
    "The capital of France is Paris. The capital of Japan is Tokyo.",
    "France Paris, Germany Berlin, Italy Rome, Spain Madrid, Japan Tokyo, Peru Lima",
    "Q: What is the capital of Peru?\nA: Lima.",
] * 20


@pytest.fixture(scope="session")
def tiny_causal_dir(tmp_path_factory):
    from probes.model_factory import causal_model, save, train_tokenizer
    tok = train_tokenizer(TEXT, vocab_size=400)
    return save(causal_model(tok, layers=2, width=64), tok, tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    from probes.model_factory import causal_model, save, train_tokenizer
    tok = train_tokenizer(TEXT, vocab_size=400)
    return save(causal_model(tok, layers=2, width=64, arch="llama"), tok,
                tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="session")
def tiny_masked_dir(tmp_path_factory):
    from probes.model_factory import masked_model, save, train_tokenizer
    tok = train_tokenizer(TEXT, vocab_size=400, masked=True)
    return save(masked_model(tok), tok, tmp_path_factory.mktemp("bert"))
