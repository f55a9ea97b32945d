"""The tail split gives exactly lm-evaluation-harness's tokens (encode context + option, drop
the context's tokens) for local tokenizers, and is not used for others."""
from __future__ import annotations

import random

import pytest

from factprobe.probes.backends.tokens import tail_splitter

PIECES = ["Albert", " Einstein", " 1879", ",", " ", "  ", "\n", "\n\n", " Q:", "A:", " 123456789",
          "'s", " don't", " über", " Zoë", "—", " ...", "\t", " 🙂", "x", "7", "!", " (", ")", "  3"]


def _tokenizers():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from factprobe.probes.planting.model_factory import train_tokenizer
    rng = random.Random(0)
    text = ["".join(rng.choice(PIECES) for _ in range(30)) for _ in range(300)]
    gpt2_like = train_tokenizer(text, vocab_size=500)
    # Llama 3 style: a split regex (digits in threes), then byte-level without its own regex
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}"
               r"\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(
        vocab_size=500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    llama3_like = PreTrainedTokenizerFast(tokenizer_object=tok)
    return {"gpt2": gpt2_like, "llama3": llama3_like}, rng


@pytest.mark.parametrize("name", ["gpt2", "llama3"])
def test_tail_split_equals_full_split(name):
    toks, rng = _tokenizers()
    tok = toks[name]
    splitter = tail_splitter(tok)
    assert splitter is not None
    used = 0
    for _ in range(400):
        context = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 25))).rstrip()
        if not context:
            continue
        options = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3)))
                   for _ in range(5)]
        ctx = tok(context, add_special_tokens=False)["input_ids"]
        want = [tok(context + o, add_special_tokens=False)["input_ids"][len(ctx):]
                for o in options]
        got = splitter.split(context, ctx, options)
        if got is not None:
            used += 1
            assert got == want, (context, options)
    assert used > 200


def test_not_used_for_tokenizers_with_a_normaliser_or_prefix_space():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    assert tail_splitter(PreTrainedTokenizerFast(tokenizer_object=tok)) is None
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    assert tail_splitter(PreTrainedTokenizerFast(tokenizer_object=tok)) is None
