"""The backend contract: what the run engine may ask of a loaded model.

Every backend offers :class:`Backend` (what it can do, its context length, what run.json says
about it, the tokens it computed, the identity its checkpoints are stored under) and, for each
capability it declares, that capability's calls:

================  ==========================================================================
capability        what the backend must do
================  ==========================================================================
``score``         :class:`Scores`: log-probs of each request's continuations
``generate``      :class:`Generates`: greedy or sampled continuations of each prompt
``fill_mask``     :class:`FillsMask`: top tokens and candidates' probabilities at the mask
``token_ids``     ``score`` also takes continuations as token ids (``continuation_ids``)
``watch``         ``generate`` also reads the ``watch`` tokens' log-probs at each step
``mask_each``     ``fill_mask`` also masks each token of a text in turn (``mask_each_from``)
================  ==========================================================================

The capabilities of a kind of backend are written in the table of
:mod:`factprobe.probes.backends` (known before any model loads, so a plan that needs what a kind lacks
is refused at once); a loaded backend repeats them as ``capabilities``. Backends return raw
numbers; reductions belong to the evaluators.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from factprobe.probes.backends.config import BackendConfig
from factprobe.probes.requests import (
    Generated,
    GenerateRequest,
    Masked,
    MaskRequest,
    Scored,
    ScoreRequest,
)


@dataclass(frozen=True)
class Usage:
    """Tokens a backend has computed so far (run.json ``tokens``; the runner times chunks)."""

    computed: int        # tokens fed to the model
    full_sequence: int   # tokens a plain per-sequence computation would have fed


@runtime_checkable
class Backend(Protocol):
    """What every backend offers, whatever its capabilities."""

    capabilities: frozenset[str]
    # Tokens of the model's context, or None when requests are never too long for it (the
    # runner's --too-long policy applies only under a limit).
    max_length: int | None

    def request_tokens(self, request: Any) -> int:
        """Context positions ``request`` takes (prompt and the longest continuation or the
        new tokens), compared with ``max_length``."""
        ...

    def describe(self) -> dict:
        """What run.json records: ``{"backend": settings, "model": name, type, revision,
        parameters, device, dtype}``."""
        ...

    def usage(self) -> Usage:
        ...

    def identity(self) -> dict:
        """What decides the numbers (model files, dtype, device, settings, library versions):
        checkpoints are reused only under the same identity."""
        ...


@runtime_checkable
class Scores(Protocol):
    def score(self, requests: Sequence[ScoreRequest], progress=None) -> list[list[Scored]]:
        ...


@runtime_checkable
class Generates(Protocol):
    def generate(self, requests: Sequence[GenerateRequest], progress=None
                 ) -> list[list[Generated]]:
        ...


@runtime_checkable
class FillsMask(Protocol):
    def fill_mask(self, requests: Sequence[MaskRequest], progress=None) -> list[Masked]:
        ...


# The calls each capability stands for (token_ids, watch and mask_each extend score, generate
# and fill_mask).
CALLS: dict[str, type] = {"score": Scores, "generate": Generates, "fill_mask": FillsMask,
                          "token_ids": Scores, "watch": Generates, "mask_each": FillsMask}




@dataclass(frozen=True)
class BackendKind:
    """One row of the kinds table: what the kind can do, how to load one, and where its
    options live.

    ``options`` names the module that owns the kind's command-line options (imported only to
    build ``factprobe eval``'s flags, so it stays light): ``add_flags(group)`` adds its flags,
    ``from_args(args, kind)`` turns the parsed flags (``--model`` among them) into the kind's
    config dataclass, which has ``model`` and ``kind`` fields and is what ``load`` receives.
    Kinds sharing one options module share its flags. "" for a kind used from Python only.
    ``threads``: the kind computes with torch's intra-op threads, so ``--threads`` applies."""

    capabilities: frozenset[str]
    load: Callable[[BackendConfig], Backend]
    options: str = ""
    threads: bool = False


def missing(needs: frozenset[str], backend: str, capabilities: frozenset[str]) -> str | None:
    """Why ``backend`` (with ``capabilities``) cannot run what ``needs`` names, in one line,
    or None.

    >>> print(missing(frozenset({"fill_mask"}), "kind 'k'", frozenset({"score", "generate"})))
    this method needs a backend that can fill_mask; backend kind 'k' offers generate, score
    """
    lacking = sorted(needs - capabilities)
    if not lacking:
        return None
    return (f"this method needs a backend that can {', '.join(lacking)}; backend {backend} "
            f"offers {', '.join(sorted(capabilities)) or 'nothing'}")
