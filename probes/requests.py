"""Model requests: what a probe asks of a model, independent of which model answers.

Probes turn dataset tables into these; backends turn them into raw numbers; the eval runner
joins the numbers back to ``meta`` (fact id, prompt id, option...) to make the outputs table.
A request list between prompt construction and the model (as in lm-evaluation-harness) gives
batching, prefix sharing, checkpointing and dry runs for free.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

MASK = "[MASK]"   # what probes write in a fill-mask prompt; a backend puts its own mask token

# What a request can ask of a backend (a backend's ``capabilities`` name the ones it offers):
#   score      log-probs of given continuations (ScoreRequest)
#   generate   greedy or sampled text (GenerateRequest)
#   fill_mask  the distribution at the one MASK of a prompt (MaskRequest)
#   token_ids  score continuations given as the model's token ids (ScoreRequest.continuation_ids)
#   watch      read given tokens' log-probs at each step of a generation (GenerateRequest.watch)
#   mask_each  mask each token of a text in turn and read its own log-prob, a
#              pseudo-log-likelihood (MaskRequest.mask_each_from)
CAPABILITIES = frozenset({"score", "generate", "fill_mask", "token_ids", "watch", "mask_each"})


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
    """Distribution at the one mask token of ``prompt`` (masked LMs): top-k and candidates.

    With ``mask_each_from`` set (capability ``mask_each``), ``prompt`` holds no mask: each
    token of ``prompt[mask_each_from:]`` is masked in turn, everything else in view, and its
    own log-probability read (the result's ``token_logprobs``): the terms of the
    pseudo-log-likelihood PLL(W) = sum_t log P(w_t | W without w_t) of Salazar et al. (2020,
    *Masked Language Model Scoring*, ACL), for that text's tokens given what is around them.
    A masked LM reads text that way where a causal one scores a continuation; ``top_k`` and
    ``candidates`` are then unused.
    """

    prompt: str
    top_k: int = 10
    candidates: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, hash=False, compare=False)
    mask_each_from: int | None = None


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
    # each candidate's token as the vocabulary writes it at the mask ("Paris", "ĠParis",
    # "▁Paris"), None where it is not one token: what top_tokens[0] is compared with
    candidate_tokens: list[str | None] = field(default_factory=list)
    # a ``mask_each_from`` request's answer: each masked token's id and own log-prob
    token_ids: list[int] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)


def request_needs(request) -> frozenset[str]:
    """The capabilities a request needs of a backend (names as in ``CAPABILITIES``).

    >>> sorted(request_needs(ScoreRequest("Peru", (), continuation_ids=((5, 6),))))
    ['score', 'token_ids']
    >>> sorted(request_needs(GenerateRequest("Peru", 3)))
    ['generate']
    >>> sorted(request_needs(MaskRequest("Peru.", mask_each_from=4)))
    ['fill_mask', 'mask_each']
    """
    if isinstance(request, ScoreRequest):
        return frozenset({"score", "token_ids"} if request.continuation_ids else {"score"})
    if isinstance(request, GenerateRequest):
        return frozenset({"generate", "watch"} if request.watch else {"generate"})
    if isinstance(request, MaskRequest):
        return frozenset({"fill_mask"} if request.mask_each_from is None
                         else {"fill_mask", "mask_each"})
    return frozenset()
