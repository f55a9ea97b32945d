"""Who computes a run's chunks: this process (``local``) or replicas on a Ray cluster (``ray``,
:mod:`factprobe.probes.engine.ray_replicas`), chosen once at the edge (``--executor``).

The runner (:mod:`factprobe.probes.engine.runner`) keeps everything that decides *what* is computed:
stages, chunks, checkpoints, the order of the outputs. An executor only computes the chunks it
is handed and says what that cost; so a run's rows are the same whichever executor ran it.
"""
from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from factprobe.core.errors import UserError
from factprobe.core.lanes import Lanes
from factprobe.probes.backends.base import Backend
from factprobe.probes.engine.checkpoints import ChunkStats
from factprobe.probes.engine.outputs import generate_rows, mask_rows, score_rows
from factprobe.probes.engine.partition import chunk_tokens, token_counter


@dataclass(frozen=True)
class ExecutorConfig:
    """``--executor`` and its flags; ``shard``: (I, N) of ``--shard I/N`` (local only);
    ``lanes``: the threads a local run computes on (``--threads``)."""
    kind: str = "local"
    address: str | None = None
    replicas: int = 1
    gpus_per_replica: float = 0.0
    cpus_per_replica: float = 1.0
    shard: tuple[int, int] | None = None
    lanes: int = 1


def _once(call, chunk: list, bar) -> list:
    """``call`` on the distinct requests of ``chunk`` (equal in all the model sees; sampled
    generations stay apart), one result per request of ``chunk``. A batch's numbers depend
    on its make-up in the last float bits: a question asked twice in a chunk (the
    subject-blind null asks one per fact) must get one answer, or that noise decides its
    ties."""
    keys = [i if getattr(r, "samples", 0) else r for i, r in enumerate(chunk)]
    first: dict = {}
    for k, r in zip(keys, chunk):
        first.setdefault(k, r)
    if len(first) == len(chunk):
        return call(chunk, progress=bar)
    got = dict(zip(first, call(list(first.values()), progress=bar)))
    if bar is not None:
        bar.update(len(chunk) - len(first))
    return [got[k] for k in keys]


def run_chunk(backend, stage_name: str, kind: str, chunk: list, bar) -> list[dict]:
    if kind == "score":
        return score_rows(stage_name, chunk, _once(backend.score, chunk, bar))
    if kind == "generate":
        return generate_rows(stage_name, chunk, _once(backend.generate, chunk, bar))
    if kind == "fill_mask":
        return mask_rows(stage_name, chunk, _once(backend.fill_mask, chunk, bar))
    raise ValueError(kind)


def timed_chunk(backend, stage_name: str, kind: str, chunk: list, bar
                ) -> tuple[list[dict], ChunkStats]:
    """A chunk's rows and what computing them cost (tokens from the backend's counters)."""
    before = backend.usage()
    start = time.perf_counter()
    rows = run_chunk(backend, stage_name, kind, chunk, bar)
    after = backend.usage()
    return rows, ChunkStats(after.computed - before.computed,
                            after.full_sequence - before.full_sequence,
                            round(time.perf_counter() - start, 3))


def fit_to_context(requests: list, backend: Backend, policy: str, shorten, counts: dict) -> list:
    """Apply the --too-long policy to requests longer than the model's context."""
    limit = backend.max_length
    if limit is None or policy == "error":
        return requests  # the backend raises a clear error on the first one
    out = []
    for asked in requests:
        r = asked
        while r is not None and backend.request_tokens(r) > limit:
            r = shorten(r) if policy == "truncate" and shorten else None
            if r is not None:
                counts["truncated_examples"] = counts.get("truncated_examples", 0) + 1
        if r is None:
            counts["skipped_too_long"] = counts.get("skipped_too_long", 0) + 1
            rel = str((getattr(asked, "meta", None) or {}).get("relation_id", ""))
            per = counts.setdefault("skipped_per_relation", {})
            per[rel] = per.get(rel, 0) + 1
        else:
            out.append(r)
    return out


class LocalExecutor:
    """Every chunk in this process, with the backend loaded here: in order on one lane, or
    spread over ``lanes`` threads (:mod:`factprobe.core.lanes`), each chunk on a copy of the
    backend that shares its model (its own token counters: a chunk's cost stays its own),
    and the units of a chunk over the lanes left idle. The rows come back in chunk order."""

    def __init__(self, backend: Backend, lanes: int = 1):
        self.backend = backend
        # lanes are CPU threads: a model on a GPU computes one unit at a time
        shares = getattr(backend, "shares_lanes", None)
        self.lanes = Lanes(lanes if shares is not None and shares() else 1)
        if self.lanes.workers > 1:
            backend.lanes = self.lanes
        self.capabilities = backend.capabilities
        self.backend_name = type(backend).__name__
        # why the loaded backend offers less than its kind, if it does (one clause)
        self.limits = getattr(backend, "limits", "")
        self._count = None

    def identity(self) -> dict:
        return self.backend.identity()

    def describe(self) -> dict:
        return self.backend.describe()

    def fit(self, requests: list, policy: str, shorten, counts: dict) -> list:
        return fit_to_context(requests, self.backend, policy, shorten, counts)

    def costs(self, chunks: Sequence[list]) -> list[int]:
        self._count = self._count or token_counter(self.backend)
        return [chunk_tokens(c, self._count) for c in chunks]

    def run(self, stage_name: str, kind: str, jobs: list[tuple[int, list]], bar
            ) -> Iterator[tuple[int, list[dict], ChunkStats]]:
        if self.lanes.workers == 1:
            for i, chunk in jobs:
                rows, stats = timed_chunk(self.backend, stage_name, kind, chunk, bar)
                yield i, rows, stats
            return

        def one(job):
            i, chunk = job
            return (i, *timed_chunk(copy.copy(self.backend), stage_name, kind, chunk, bar))
        yield from self.lanes.imap(one, jobs)

    def info(self) -> dict:
        return {"kind": "local", "replicas": 1}

    def close(self) -> None:
        self.lanes.close()


class ResumableError(UserError):
    """A failure that leaves the finished chunks worth keeping (a replica that kept dying):
    the same command resumes from them."""
