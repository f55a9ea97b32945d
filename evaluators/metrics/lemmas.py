"""Lemma matching for BELIEF-ICL (Zhao et al., Sec. 3): both strings are lower-cased,
tokenised and lemmatised with spaCy (a blank English pipeline and the lookup lemmatizer of
``spacy-lookups-data``: no model download), punctuation and spaces dropped. "A guitar" becomes
``("a", "guitar")`` and "guitars" ``("guitar",)``. One lemma list *contains* another when it
holds it as a contiguous run.

Accuracy matches one way (the gold's lemmas inside the output's); consistency and sample
confidence match two ways (either inside the other). Lemmas are cached per string.
"""
from __future__ import annotations

import sys

_NLP = None
# Whether spaCy may be imported with torch hidden: set by a command that is a process of its
# own and never runs a model (``factprobe report``), see :func:`_import_spacy`.
_TORCH_FREE = False


def torch_free_process() -> None:
    """Say that this process never loads torch, so spaCy is imported without it."""
    global _TORCH_FREE
    _TORCH_FREE = True


def _import_spacy():
    """spaCy, without torch in a torch-free process where torch is not loaded yet. spaCy's
    thinc imports torch at start only to offer torch layers, which a blank pipeline's lookup
    lemmatizer never uses: 1.8 of the 2.9 CPU-s the import took (`factprobe report`'s whole
    stage: 10.5). thinc then records torch as absent for the life of the process, hence only
    where the caller said the process is its own; a later ``import torch`` works as ever."""
    if not _TORCH_FREE or "torch" in sys.modules or "thinc" in sys.modules:
        import spacy
        return spacy
    sys.modules["torch"] = None       # `import torch` raises ImportError, as if not installed
    try:
        import spacy
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    return spacy


def _nlp():
    global _NLP
    if _NLP is None:
        try:
            spacy = _import_spacy()
            nlp = spacy.blank("en")
            nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
            nlp.initialize()
        except (ImportError, ValueError, OSError) as exc:  # pragma: no cover - install issue
            from factprobe.core.errors import UserError
            raise UserError(f"BELIEF-ICL matching needs spaCy and spacy-lookups-data "
                            f"(pip install 'factprobe[models]'): {exc}") from None
        _NLP = nlp
    return _NLP


_CACHE: dict[str, tuple[str, ...]] = {}


def _lemmatise(doc) -> tuple[str, ...]:
    return tuple(t.lemma_ or t.text for t in doc if not (t.is_punct or t.is_space))


def lemma_list(text: str) -> tuple[str, ...]:
    """Lower-cased lemmas of ``text`` without punctuation or spaces (cached).

    >>> lemma_list(" Guitars."), lemma_list("a guitar"), lemma_list("The mice")
    (('guitar',), ('a', 'guitar'), ('the', 'mouse'))
    """
    text = str(text)
    got = _CACHE.get(text)
    if got is None:
        got = _CACHE[text] = _lemmatise(_nlp()(text.lower()))
    return got


def warm(texts) -> None:
    """Lemmatise many strings in one ``nlp.pipe`` pass and fill the cache."""
    todo = sorted({str(t) for t in texts} - set(_CACHE))
    if not todo:
        return
    for text, doc in zip(todo, _nlp().pipe(t.lower() for t in todo)):
        _CACHE[text] = _lemmatise(doc)


MODES = ("contiguous", "any-order")   # --lemma-match (BELIEF-ICL)


def contains(outer: tuple[str, ...], inner: tuple[str, ...], mode: str = "contiguous") -> bool:
    """Whether ``inner`` is included in ``outer`` (never for an empty list): as a contiguous
    run (``contiguous``), or every lemma of it present, as often, in any order
    (``any-order``). The paper (Sec. 3.2) says "included in the other" without saying which.

    >>> contains(("a", "guitar"), ("guitar",)), contains(("guitar",), ("a", "guitar"))
    (True, False)
    >>> contains(("nobel", "prize", "in", "physics"), ("prize", "physics")), contains((), ())
    (False, False)
    >>> contains(("nobel", "prize", "in", "physics"), ("prize", "physics"), "any-order")
    True
    >>> contains(("york", "new"), ("new", "york"), "any-order")
    True
    >>> contains(("new",), ("new", "new"), "any-order")
    False
    """
    n, k = len(outer), len(inner)
    if k == 0 or k > n:
        return False
    if mode == "any-order":
        from collections import Counter
        have = Counter(outer)
        return all(have[w] >= c for w, c in Counter(inner).items())
    return any(outer[i:i + k] == inner for i in range(n - k + 1))


def matches_gold(output: str, gold_names, mode: str = "contiguous") -> bool:
    """One-directional match (accuracy): some gold name's lemmas occur in the output's.

    >>> matches_gold(" guitars.", ["guitar"]), matches_gold(" a guitar", ["Guitars"])
    (True, True)
    >>> matches_gold(" guitar", ["a guitar"])
    False
    """
    out = lemma_list(output)
    return any(contains(out, lemma_list(g), mode) for g in gold_names)


def same_answer(a: str, b: str, mode: str = "contiguous") -> bool:
    """Two-directional match (consistency, sample confidence): either lemma list contains
    the other.

    >>> same_answer(" guitar", "a guitar."), same_answer("Paris", "Rome"), same_answer("", "")
    (True, False, False)
    """
    la, lb = lemma_list(a), lemma_list(b)
    return contains(la, lb, mode) or contains(lb, la, mode)
