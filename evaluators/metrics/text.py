"""String normalisation shared by the response tests."""
from __future__ import annotations

import re
import string
import unicodedata

_PUNCT = re.compile(f"[{re.escape(string.punctuation)}]")


def normalise(text: str) -> str:
    """Lower case, punctuation removed, whitespace collapsed.

    >>> normalise("  Paris, France! ")
    'paris france'
    """
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_PUNCT.sub(" ", text).split())


def contains_answer(output: str, gold: str) -> bool:
    """Whether the normalised gold occurs in the normalised output, on word boundaries.

    >>> contains_answer("1879, Niels Bohr 1885", "1879")
    True
    >>> contains_answer("18790", "1879")
    False
    """
    g, o = normalise(gold), normalise(output)
    return bool(g) and f" {g} " in f" {o} "
