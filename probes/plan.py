"""What a probe hands to the eval runner: named stages of model requests.

A stage is one kind of model call (``score``, ``generate`` or ``fill_mask``) over a list of
requests. A later stage may need an earlier stage's outputs (MONITOR builds its teacher-forced
requests from the anchors it generated first): ``build`` then receives those outputs.

A plan says which backend capabilities it needs (:meth:`Plan.needs`), so the runner can refuse
an unsuitable backend before any model loads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, TYPE_CHECKING

from factprobe.probes.requests import request_needs

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pandas as pd


@dataclass
class Stage:
    name: str
    kind: str                                   # score | generate | fill_mask
    requests: list = field(default_factory=list)
    # For stages that depend on earlier outputs: outputs so far -> requests.
    build: Callable[[pd.DataFrame], list] | None = None
    # Capabilities a ``build`` stage's requests will need beyond ``kind`` (its requests are
    # not known before running, so they cannot tell): "token_ids", "watch".
    needs: frozenset[str] = frozenset()
    # What the checkpoint files and run.json's timings call the stage (default: its name). A
    # second pass over the same stages (the subject-blind null, probes/subject_blind.py)
    # keeps its rows' stage names, so the metrics read it as they read the first, but is
    # timed and checkpointed apart.
    label: str = ""

    @property
    def key(self) -> str:
        return self.label or self.name

    def capabilities(self) -> frozenset[str]:
        """What this stage asks of a backend: its kind, what it declares, and what its known
        requests need.

        >>> from factprobe.probes.requests import ScoreRequest
        >>> sorted(Stage("s", "score", [ScoreRequest("a", (), continuation_ids=((1,),))])
        ...        .capabilities())
        ['score', 'token_ids']
        """
        out = {self.kind, *self.needs}
        for r in self.requests:
            out |= request_needs(r)
        return frozenset(out)


@dataclass
class Plan:
    method: str
    stages: list[Stage]
    info: dict = field(default_factory=dict)    # counts the probe wants in run.json
    # Drop the first in-context example of a request (None when it has none left); lets the
    # runner fit over-long prompts into the model's context with --too-long truncate.
    shorten: Callable | None = None
    # Relations that got no requests, and why (no usable template, no question...): what the
    # runner tells the user when a plan comes out empty.
    skipped: dict[str, str] = field(default_factory=dict)
    # The request meta columns that hold integers (null where a row has none): outputs.parquet
    # keeps them integers (the engine adds its own: option, sample, n_tokens).
    integer_columns: tuple[str, ...] = ()
    # Facts the probe shows only as in-context examples and never asks about (ZP-LKE's example
    # pool on a dataset without a train/test split): the subject-blind null keeps their
    # subjects, as it keeps a split's train facts, and the subject-only check leaves them out.
    examples_only: frozenset[str] = frozenset()

    def size(self) -> int:
        """Requests known before running (a ``build`` stage only adds to a non-empty plan)."""
        return sum(len(s.requests) for s in self.stages)

    def needs(self) -> frozenset[str]:
        """The backend capabilities the plan's stages need (names as in
        :data:`factprobe.probes.requests.CAPABILITIES`)."""
        return frozenset().union(*(s.capabilities() for s in self.stages))

    def empty_reason(self, limit: int = 4) -> str:
        """Why the plan has no requests, in one line: each relation's reason, as the probe
        recorded it in ``skipped``."""
        if not self.skipped:
            return "the selected facts hold nothing to ask about"
        items = sorted(self.skipped.items())
        shown = "; ".join(f"{rel}: {why}" for rel, why in items[:limit])
        more = f"; and {len(items) - limit} more relation(s)" if len(items) > limit else ""
        return shown + more

    def first_prompts(self, n: int = 3) -> list[str]:
        out = []
        for stage in self.stages:
            for r in stage.requests[:n]:
                text = getattr(r, "context", None) or getattr(r, "prompt", "")
                conts = getattr(r, "continuations", ())
                shown = f"[{stage.name}] {text!r}"
                if conts:
                    shown += f" -> {list(conts[:3])}{' ...' if len(conts) > 3 else ''}"
                at = getattr(r, "mask_each_from", None)
                if at is not None:       # a pseudo-log-likelihood: which tokens are masked
                    shown += f", each token of {text[at:]!r} masked in turn"
                out.append(shown)
        return out[:n * max(1, len(self.stages))]
