"""The planted masked model's tokenizer: the same text gives the same vocabulary, every time."""
from __future__ import annotations

import subprocess
import sys

CODE = """
from factprobe.probes.planting.model_factory import train_tokenizer
texts = [f"{s} is the capital of {c}." for s, c in [("Paris", "France"), ("Lima", "Peru"),
         ("Quito", "Ecuador"), ("Bogota", "Colombia"), ("Caracas", "Venezuela")]] * 3
tok = train_tokenizer(texts, vocab_size=80, masked=True)
print(sorted(tok.get_vocab().items(), key=lambda kv: kv[1]))
print(tok.tokenize("Caracas is the capital of Venezuela."))
"""


def test_masked_tokenizer_is_the_same_in_every_process():
    # hash-map order differs between processes (string hashing is salted per process), so only
    # separate interpreters show the library trainer's non-determinism; four make it likely
    outs = {subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                           check=True).stdout for _ in range(4)}
    assert len(outs) == 1
    vocab, pieces = outs.pop().splitlines()
    assert pieces == "['Caracas', 'is', 'the', 'capital', 'of', 'Venezuela', '.']"
