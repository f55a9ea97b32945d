"""Model requests: what a probe asks of a model, independent of which model answers.

Probes turn dataset tables into these; backends turn them into raw numbers; the eval runner
joins the numbers back to ``meta`` (fact id, prompt id, option...) to make the outputs table.
A request list between prompt construction and the model (as in lm-evaluation-harness) gives
batching, prefix sharing, checkpointing and dry runs for free.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


def prompt_id(text: str) -> str:
    """Stable id of an exact prompt string.

    >>> prompt_id("Albert Einstein 1879, Niels Bohr")
    '6bbd60135a7d7dce'
    """
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ScoreRequest:
    """Log-probabilities of each continuation after ``context``.

    ``group`` names requests that share a long prefix (ZP-LKE: one relation's examples); the
    backend computes the longest common token prefix of a group once and reuses its cache.
    ``meta`` rides along untouched; ``option_meta`` holds one dict per continuation.
    """

    context: str
    continuations: tuple[str, ...]
    group: str = ""
    meta: dict = field(default_factory=dict, hash=False, compare=False)
    option_meta: tuple[dict, ...] = field(default=(), hash=False, compare=False)
    # Token ids to score instead of tokenising ``continuations`` (MONITOR scores the exact
    # tokens of an anchor answer under other prompts).
    continuation_ids: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class GenerateRequest:
    """Greedy output (``samples == 0``) or ``samples`` multinomial samples after ``prompt``.

    ``stop``: the text is cut before the first stop string. ``watch``: token ids whose
    log-probability is read at step l = 0, 1, ... of the run (MONITOR's free-running anchors).
    """

    prompt: str
    max_new_tokens: int
    samples: int = 0
    stop: tuple[str, ...] = ()
    group: str = ""
    seed: int = 0
    watch: tuple[int, ...] = ()
    meta: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class MaskRequest:
    """Distribution at the one mask token of ``prompt`` (masked LMs): top-k and candidates."""

    prompt: str
    top_k: int = 10
    candidates: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass
class Scored:
    token_logprobs: list[float]
    token_ids: list[int]

    @property
    def logprob(self) -> float:
        return float(sum(self.token_logprobs))


@dataclass
class Generated:
    text: str
    token_ids: list[int]
    token_logprobs: list[float]
    watched_logprobs: list[float] = field(default_factory=list)


@dataclass
class Masked:
    top_tokens: list[str]
    top_probs: list[float]
    candidate_probs: list[float]
