"""Small byte-level BPE tokenizers trained on a few lines, for tests that need GPT-2 / RoBERTa
style pieces ("ĠParis") without a downloaded tokenizer."""
from __future__ import annotations


def byte_level_bpe(text: list[str], vocab_size: int, special_tokens: list[str]):
    """A ``tokenizers.Tokenizer`` (byte-level pre-tokenizer and decoder, no prefix space)
    trained on ``text``; callers add their own post-processor and wrap it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return tok
