"""The ``fake`` kind: no model, deterministic numbers from a seed and each request's content
(as lm-evaluation-harness's ``DummyLM``), for trying the pipeline and testing the plumbing of
every method without torch or a download.

What it answers, all from a stable hash (sha256) of ``--fake-seed`` and the request:

- ``score``: each continuation is split into words, one "token" each (its id a hash of the
  word); each token's log-prob is drawn in [-4.05, -0.05) from the context, the tokens before
  it and itself. Which option wins is thus a fair draw per request: multiple-choice accuracy
  near one over the number of options, never the gold on purpose.
- ``generate``: for about half the prompts (a draw per prompt, and per sample when sampling)
  the text starts with the request's gold answer (``meta["gold"]``, which every method's
  generation requests carry), so matching metrics are neither all 0 nor all 1; otherwise a
  word of the prompt; then a full stop. Texts stop at the request's stop strings and
  ``max_new_tokens`` words;
  ``watch`` reads one drawn log-prob per watched token.
- ``fill_mask``: a distribution over the request's one-word candidates and a few made-up
  words, drawn per prompt; ``top_k`` of them, most probable first. ``mask_each``: one
  "token" per word of the text from ``mask_each_from`` on, each log-prob drawn as ``score``'s
  from the text and the word's place.

Numbers are identical for the same seed, whatever the chunking or machine; another seed gives
other numbers. ``describe`` and ``identity`` say "fake" and the seed, so a run.json never
passes for a model's. Only this module's standard-library code runs: no torch import.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from factprobe.core.argtypes import count
from factprobe.probes.backends.base import Usage
from factprobe.probes.requests import (
    MASK,
    Generated,
    GenerateRequest,
    Masked,
    MaskRequest,
    Scored,
    ScoreRequest,
)

CAPABILITIES = frozenset({"score", "generate", "fill_mask", "token_ids", "watch",
                          "mask_each"})
# The formula's version, part of the identity: a change to the draws below must not resume
# from checkpoints computed with the old ones.
FORMULA = 1
VOCAB = 50_000      # token ids are hashes of words modulo this
FILLERS = 8         # made-up words beside the candidates at a mask (besides top_k of them)


@dataclass(frozen=True)
class FakeConfig:
    model: str          # any name: nothing is loaded (run.json records it)
    seed: int = 0
    kind: str = "fake"


def add_flags(g) -> None:
    g.add_argument("--fake-seed", type=count, default=None,
                   help="the seed of the fake backend's numbers (0)")


def from_args(args, kind: str) -> FakeConfig:
    return FakeConfig(model=args.model, seed=args.fake_seed or 0, kind=kind)


def example_config(folder) -> FakeConfig:
    """A config the backend contract test loads (tests/probes/backends/test_contract.py)."""
    return FakeConfig("fake")


def load(config: FakeConfig) -> FakeBackend:
    return FakeBackend(config)


def draw(seed: int, *parts) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``parts``.

    >>> draw(0, "a") == draw(0, "a") != draw(1, "a")
    True
    """
    text = "\x1f".join([str(seed), *(str(p) for p in parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2 ** 64


def words(text: str) -> list[str]:
    """The fake's tokens: whitespace-separated words.

    >>> words(" Paris, France")
    ['Paris,', 'France']
    """
    return text.split()


def token_id(word: str) -> int:
    return int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % VOCAB


class FakeBackend:
    """Every capability, from hashes; see the module docstring."""

    capabilities = CAPABILITIES
    max_length = None          # no context limit: --too-long never applies

    def __init__(self, config: FakeConfig):
        self.config = config
        self.seed = config.seed
        self.tokens = 0

    def request_tokens(self, request) -> int:
        return 0               # never compared: max_length is None

    def _logprob(self, *parts) -> float:
        return -0.05 - 4.0 * draw(self.seed, *parts)

    def score(self, requests: Sequence[ScoreRequest], progress=None) -> list[list[Scored]]:
        out = []
        for r in requests:
            conts = r.continuation_ids or tuple(tuple(words(c)) for c in r.continuations)
            scored = []
            for cont in conts:
                ids = [int(t) if isinstance(t, int) else token_id(t) for t in cont]
                lps = [self._logprob("score", r.context, ids[:k], ids[k])
                       for k in range(len(ids))]
                scored.append(Scored(lps, ids))
                self.tokens += len(words(r.context)) + len(ids)
            out.append(scored)
            if progress is not None:
                progress.update(1)
        return out

    def _text(self, r: GenerateRequest, sample: int) -> str:
        knows = draw(self.seed, "knows", r.prompt, r.seed, sample) < 0.5
        gold = str(r.meta.get("gold", "")) if knows else ""
        pool = words(r.prompt.replace(MASK, " ")) or ["..."]
        guess = pool[int(draw(self.seed, "guess", r.prompt, r.seed, sample) * len(pool))]
        # one short answer and a full stop, as a model asked for one object tends to write
        said = words(gold or guess.strip(".,;:")) or ["..."]
        text = " " + " ".join(said[:max(0, r.max_new_tokens)]) + "."
        cut = min((text.find(s) for s in r.stop if s and s in text), default=len(text))
        return text[:cut] if r.max_new_tokens > 0 else ""

    def generate(self, requests: Sequence[GenerateRequest], progress=None
                 ) -> list[list[Generated]]:
        out = []
        for r in requests:
            got = []
            for s in range(max(1, r.samples)):
                text = self._text(r, s if r.samples else -1)
                ids = [token_id(w) for w in words(text)]
                lps = [self._logprob("gen", r.prompt, s, k, t) for k, t in enumerate(ids)]
                watched = [self._logprob("watch", r.prompt, k, t) for k, t in enumerate(r.watch)]
                got.append(Generated(text, ids, lps, watched))
                self.tokens += len(words(r.prompt)) + max(len(ids), len(r.watch))
            out.append(got)
            if progress is not None:
                progress.update(1)
        return out

    def fill_mask(self, requests: Sequence[MaskRequest], progress=None) -> list[Masked]:
        out = []
        for r in requests:
            if r.mask_each_from is not None:
                ids = [token_id(w) for w in words(r.prompt[r.mask_each_from:])]
                out.append(Masked([], [], [], [], token_ids=ids, token_logprobs=[
                    self._logprob("mask_each", r.prompt, k, t) for k, t in enumerate(ids)]))
                self.tokens += len(words(r.prompt)) * len(ids)
                if progress is not None:
                    progress.update(1)
                continue
            single = [c for c in dict.fromkeys(r.candidates) if re.fullmatch(r"\S+", c)]
            made_up = [f"fake{k}" for k in range(r.top_k + FILLERS)]
            vocab = single + [w for w in made_up if w not in single]
            logits = [6.0 * draw(self.seed, "mask", r.prompt, w) for w in vocab]
            top = max(logits)
            total = sum(math.exp(v - top) for v in logits)
            prob = {w: math.exp(v - top) / total for w, v in zip(vocab, logits)}
            ranked = sorted(vocab, key=lambda w: (-prob[w], w))[:r.top_k]
            out.append(Masked(ranked, [prob[w] for w in ranked],
                              [prob.get(c, math.nan) for c in r.candidates],
                              [c if c in prob else None for c in r.candidates]))
            self.tokens += len(words(r.prompt))
            if progress is not None:
                progress.update(1)
        return out

    def usage(self) -> Usage:
        return Usage(self.tokens, self.tokens)

    def describe(self) -> dict:
        c = self.config
        # run.json's backend block, as the hf kinds' has no "kind" key: model.type says it
        return {"backend": {"model": c.model, "seed": c.seed},
                "model": {"name": c.model, "type": "fake", "revision": None, "parameters": 0,
                          "device": "cpu", "dtype": "none"}}

    def identity(self) -> dict:
        return {"model": {"fake": FORMULA, "name": self.config.model}, "revision": None,
                "device": "cpu", "settings": {"seed": self.seed}}
