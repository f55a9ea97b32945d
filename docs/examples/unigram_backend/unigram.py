"""The ``unigram`` kind: a word-frequency "model" read from a text file, for scoring only.

docs/extending.md's worked backend, usable from the command line
(``factprobe eval prompt --backend unigram --model corpus.txt``) once this module is
``probes/backends/unigram.py`` and its row is in ``KINDS`` (tests/test_extending_backend.py
adds both to a copy of the repository and runs it). Each word of a continuation is one token
whose log-prob is its add-alpha smoothed frequency in the corpus: a baseline that knows which
answers are common, and nothing about the subject.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.probes.backends.base import Usage
from factprobe.probes.requests import Scored

CAPABILITIES = frozenset({"score"})
WORD = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class UnigramConfig:
    model: str              # the corpus: a UTF-8 text file
    alpha: float = 1.0      # add-alpha smoothing
    kind: str = "unigram"


def add_flags(group) -> None:
    # default None: a flag given to another kind is caught (docs/extending.md)
    group.add_argument("--unigram-alpha", type=float, default=None,
                       help="add-alpha smoothing of the unigram backend (1.0)")


def from_args(args, kind: str) -> UnigramConfig:
    alpha = 1.0 if args.unigram_alpha is None else args.unigram_alpha
    if not alpha > 0:
        raise UserError(f"--unigram-alpha {alpha}: give a number above 0")
    return UnigramConfig(model=args.model, alpha=alpha, kind=kind)


def example_config(folder: Path) -> UnigramConfig:
    """A config the backend contract test can load (tests/probes/backends/test_contract.py)."""
    corpus = Path(folder) / "corpus.txt"
    corpus.write_text("France Paris . Peru Lima .\n", encoding="utf-8")
    return UnigramConfig(model=str(corpus))


def load(config: UnigramConfig) -> UnigramBackend:
    return UnigramBackend(config)


class UnigramBackend:
    capabilities = CAPABILITIES
    max_length = None       # no context: --too-long never applies

    def __init__(self, config: UnigramConfig):
        path = Path(config.model)
        if not path.is_file():
            raise UserError(f"--model {config.model}: the unigram backend reads a text file; "
                            f"give the path of one")
        self.config = config
        self.counts = Counter(w.lower() for w in WORD.findall(path.read_text(encoding="utf-8")))
        self.total = sum(self.counts.values())
        self.vocab = len(self.counts) + 1
        self.tokens = 0

    def _logprob(self, word: str) -> float:
        return math.log((self.counts[word.lower()] + self.config.alpha)
                        / (self.total + self.config.alpha * self.vocab))

    def request_tokens(self, request) -> int:
        return max((len(WORD.findall(c)) for c in request.continuations), default=0)

    def score(self, requests, progress=None):
        out = []
        for r in requests:
            scored = []
            for cont in r.continuations:
                words = WORD.findall(cont)
                self.tokens += len(words)
                scored.append(Scored([self._logprob(w) for w in words],
                                     [hash_id(w) for w in words]))
            out.append(scored)
            if progress is not None:
                progress.update(1)
        return out

    def usage(self) -> Usage:
        return Usage(computed=self.tokens, full_sequence=self.tokens)

    def describe(self) -> dict:
        return {"backend": {"alpha": self.config.alpha},
                "model": {"name": self.config.model, "type": "unigram", "revision": None,
                          "parameters": len(self.counts), "device": "cpu", "dtype": "none"}}

    def identity(self) -> dict:
        # what decides the numbers: checkpoints resume only under the same corpus and alpha
        return {"model": {"counts": sorted(self.counts.items()), "alpha": self.config.alpha}}


def hash_id(word: str) -> int:
    """A stable token id for a word (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(word.lower().encode("utf-8")).digest()[:6], "big")
