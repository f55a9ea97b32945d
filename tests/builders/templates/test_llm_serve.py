"""The paraphrase builder against a real OpenAI-compatible server: ``transformers serve`` on
127.0.0.1 with a tiny causal LM built here (random weights, a BPE tokenizer trained on a few
sentences, a chat template). Its answers are noise: the filters must reject every one and the
builder must report the shortfall, exit 0, and replay the same result from the cache."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluators.cli.test_cli import run
from tests.serving import transformers_serving

pytestmark = pytest.mark.slow

TEMPLATES = """relation: "ex:capital"
label: capital
description: seat of government of a country
subject_category: country
object_category: city
templates:
  - {id: m1, style: statement, text: "The capital of [X] is [Y]."}
  - {id: m2, style: question, text: "What is the capital of [X]? [Y]."}
"""


def make_tiny_model(folder: Path) -> None:
    try:
        import torch
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    except ImportError as exc:
        pytest.fail(f"this test needs torch and transformers ({exc}); install the model extras")
    text = ["The capital of France is Paris.", "What is the capital of [X]? [Y].",
            "[X] is located in [Y].", "Answer with a JSON list of strings."] * 20
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="</s>")
    fast.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n"
                          "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                      max_position_embeddings=2048, bos_token_id=1, eos_token_id=2,
                      pad_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(folder)


@pytest.fixture(scope="module")
def transformers_serve(tmp_path_factory):
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        pytest.fail("transformers serve needs fastapi and uvicorn (the test extra)")
    root = tmp_path_factory.mktemp("serve")
    model = root / "tiny-llama"
    make_tiny_model(model)
    with transformers_serving(str(model), root / "hf-home", 60) as url:
        yield url, str(model)


def test_noise_is_rejected_and_the_shortfall_reported(tmp_path, transformers_serve):
    url, model = transformers_serve
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "ex_capital.yaml").write_text(TEMPLATES)
    args = ["build", "templates", "--templates-dir", str(tpl), "--cache-dir",
            str(tmp_path / "cache"), "--llm-model", model, "--paraphrases", "3",
            "--max-requests", "2", "--max-tokens", "48", "--out", str(tmp_path / "out")]
    proc = run(*args, "--llm-base-url", url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "4 LLM requests" in proc.stderr
    assert "2 hand-written templates are short of paraphrases, 6 missing" in proc.stderr
    manifest = json.loads((tmp_path / "out" / "dataset.json").read_text())
    counts = manifest["counts"]
    assert counts["requests"] == 4 and counts["missing"] == 6
    assert counts["templates"] == 2  # only the hand-written ones survive
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 4
    answers = [json.loads(e.read_text())["response"]["text"] for e in entries]
    assert any(a.strip() for a in answers)  # the server did answer, with noise

    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    replay = run(*args, "--quiet", cwd=tmp_path)  # no endpoint: the cache answers
    assert replay.returncode == 0, replay.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
