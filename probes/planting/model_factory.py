"""Small models built from a config, with a tokenizer trained locally.

The planted-knowledge reference models, the tests and the CPU benchmarks all need a model that
exists without downloading weights; this is the one place that knows how to make one.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

SPECIALS_CAUSAL = ["<|endoftext|>", "<pad>"]
SPECIALS_MASKED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _wordpiece_vocab(texts: list[str], vocab_size: int, normalizer, pre) -> dict[str, int]:
    """A WordPiece vocabulary built without the library's trainer: its ids for ``##`` pieces
    follow hash-map order, so two trainings on the same text differ (huggingface/tokenizers
    issue #1794). Here: the special tokens, every character alone and as a ``##`` piece (so
    nothing is unknown), then whole words by falling frequency, ties by the word itself.

    >>> from tokenizers import normalizers, pre_tokenizers
    >>> v = _wordpiece_vocab(["Paris is in France.", "Lima is in Peru."], 33,
    ...                      normalizers.BertNormalizer(lowercase=False),
    ...                      pre_tokenizers.BertPreTokenizer())
    >>> [w for w in v if len(w) > 1 and not w.startswith(("[", "##"))]
    ['in', 'is']
    """
    from collections import Counter
    words: Counter[str] = Counter()
    for text in texts:
        words.update(w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(text)))
    chars = sorted({c for w in words for c in w})
    vocab = SPECIALS_MASKED + chars + ["##" + c for c in chars]
    room = max(0, vocab_size - len(vocab))
    ranked = sorted((w for w in words if len(w) > 1), key=lambda w: (-words[w], w))
    vocab += ranked[:room]
    return {t: i for i, t in enumerate(vocab)}


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2000, *, masked: bool = False,
                    progress: bool = False):
    """A fast tokenizer trained on ``texts``: byte-level BPE for causal LMs (any string can be
    encoded), WordPiece with BERT's special tokens for masked LMs."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast
    texts = list(texts)
    if masked:
        normalizer = normalizers.BertNormalizer(lowercase=False)
        pre = pre_tokenizers.BertPreTokenizer()
        tok = Tokenizer(models.WordPiece(_wordpiece_vocab(texts, vocab_size, normalizer, pre),
                                         unk_token="[UNK]"))
        tok.normalizer = normalizer
        tok.pre_tokenizer = pre
        cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
        tok.decoder = decoders.WordPiece()
        return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                       cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS_CAUSAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=progress)
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>", pad_token="<pad>")


def causal_model(tokenizer, *, layers: int = 2, width: int = 64, heads: int = 4,
                 max_positions: int = 1024, seed: int = 0, arch: str = "gpt2"):
    """A randomly initialised causal LM sized for ``tokenizer`` (gpt2, llama or gpt_neox)."""
    import torch
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        GPTNeoXConfig,
        GPTNeoXForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
    )
    torch.manual_seed(seed)
    common = dict(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                  eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    if arch == "gpt2":
        return GPT2LMHeadModel(GPT2Config(n_layer=layers, n_embd=width, n_head=heads,
                                          n_positions=max_positions, **common))
    if arch == "llama":
        return LlamaForCausalLM(LlamaConfig(
            num_hidden_layers=layers, hidden_size=width, intermediate_size=4 * width,
            num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
            max_position_embeddings=max_positions, **common))
    if arch == "gpt_neox":
        return GPTNeoXForCausalLM(GPTNeoXConfig(
            num_hidden_layers=layers, hidden_size=width, intermediate_size=4 * width,
            num_attention_heads=heads, max_position_embeddings=max_positions, **common))
    raise ValueError(f"unknown architecture {arch!r}")


def masked_model(tokenizer, *, layers: int = 2, width: int = 64, heads: int = 4,
                 max_positions: int = 512, seed: int = 0, dropout: float = 0.1):
    """A randomly initialised BERT. The planted models use ``dropout=0``: they are meant to
    memorise, and dropout slows that down several times on data this small."""
    import torch
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(seed)
    return BertForMaskedLM(BertConfig(
        vocab_size=len(tokenizer), hidden_size=width, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=4 * width,
        max_position_embeddings=max_positions, pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout))


def save(model, tokenizer, folder: str | Path) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
