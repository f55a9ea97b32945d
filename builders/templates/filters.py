"""The filters every machine paraphrase goes through, each one counting what it drops and why.

In order: the item is text; placeholders (``[X]`` and ``[Y]`` exactly once; ``[Y]`` last with
``y_last``); question templates end in "?"; length in words; not a duplicate (after
:func:`~factprobe.builders.templates.files.normalise`) of a template already kept for the relation; and
sentence BLEU below the threshold (0.7, MONITOR's rule) against every template already kept for
the relation, hand-written ones included. Kept greedily in a fixed order, so the result is
deterministic.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from factprobe.builders.templates.files import normalise, placeholder_problem, question_problem, y_is_last

REASONS = ("not_text", "placeholders", "y_not_last", "not_a_question", "too_short", "too_long",
           "duplicate", "bleu")


@dataclass(frozen=True)
class FilterConfig:
    bleu: float = 0.7          # keep only if sentence BLEU (0..1) with every kept one is below
    min_words: int = 3
    max_words: int = 30
    y_last: bool = False       # drop templates where [Y] is not the last word (left-to-right cloze)


def bleu_similarity(a: str, b: str) -> float:
    """Sentence BLEU of two templates on a 0..1 scale, the larger of both directions.

    BLEU is not symmetric (the brevity penalty looks at the hypothesis' length), so the larger
    of the two is taken: a pair counts as too similar whichever one came first. Placeholders
    become plain words first, or the brackets would count as matching tokens.

    >>> round(bleu_similarity("The capital of [X] is [Y].", "The capital of [X] is [Y]."), 6)
    1.0
    >>> bleu_similarity("The capital of [X] is [Y].", "[Y] serves as the seat of government of [X].") < 0.7
    True
    """
    import sacrebleu

    def plain(t: str) -> str:
        return t.replace("[X]", "X").replace("[Y]", "Y")

    a, b = plain(a), plain(b)
    return max(sacrebleu.sentence_bleu(a, [b]).score, sacrebleu.sentence_bleu(b, [a]).score) / 100


def as_template(item: object, style: str, cfg: FilterConfig) -> tuple[str | None, str | None]:
    """(template, None) for an acceptable candidate, else (None, reason).

    A question paraphrase comes as a question; the answer slot is added back.

    >>> as_template("Which city is the capital of [X]?", "question", FilterConfig())
    ('Which city is the capital of [X]? [Y].', None)
    >>> as_template("[X], [Y].", "statement", FilterConfig())
    (None, 'too_short')
    >>> as_template("The capital is [Y].", "statement", FilterConfig())
    (None, 'placeholders')
    """
    if not isinstance(item, str) or not item.strip():
        return None, "not_text"
    text = " ".join(item.split()).strip().strip('"').strip()
    if style == "question":
        if "[Y]" not in text:
            if not text.endswith("?"):
                return None, "not_a_question"
            text = f"{text} [Y]."
        elif question_problem(text):
            return None, "not_a_question"
    if placeholder_problem(text):
        return None, "placeholders"
    if cfg.y_last and not y_is_last(text):
        return None, "y_not_last"
    words = len(text.split())
    if words < cfg.min_words:
        return None, "too_short"
    if words > cfg.max_words:
        return None, "too_long"
    return text, None


@dataclass
class RelationGate:
    """What one relation has kept so far, for the duplicate and BLEU checks."""
    cfg: FilterConfig
    kept: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    dropped: Counter = field(default_factory=Counter)

    def add_manual(self, text: str) -> None:
        self.kept.append(text)
        self.seen.add(normalise(text))

    def offer(self, item: object, style: str) -> str | None:
        """The template made from ``item`` if it passes every filter (and is now kept)."""
        text, reason = as_template(item, style, self.cfg)
        if text is None:
            self.dropped[reason] += 1
            return None
        key = normalise(text)
        if key in self.seen:
            self.dropped["duplicate"] += 1
            return None
        if any(bleu_similarity(text, other) >= self.cfg.bleu for other in self.kept):
            self.dropped["bleu"] += 1
            self.seen.add(key)
            return None
        self.kept.append(text)
        self.seen.add(key)
        return text


def diverse(texts: list[str], threshold: float, limit: int | None = None) -> list[int]:
    """Indices of ``texts`` kept greedily, in order, while BLEU with every kept one is below
    ``threshold``; at most ``limit``.

    >>> diverse(["Where is [X]?", "Where is [X]?", "In which country does [X] lie?"], 0.7)
    [0, 2]
    """
    kept: list[int] = []
    for i, text in enumerate(texts):
        if limit is not None and len(kept) >= limit:
            break
        if all(bleu_similarity(text, texts[j]) < threshold for j in kept):
            kept.append(i)
    return kept
