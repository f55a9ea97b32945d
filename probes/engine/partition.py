"""How a stage's work is split between replicas (Ray) or shards (``--shard I/N``).

The unit is the runner's own chunk (one prefix group, at most ``CHUNK`` requests), so a
replica makes exactly the backend call a single process makes and gets the same numbers.
Chunks of one prefix group (ZP-LKE: relation x seed x example count) form one *partition*
and go to one replica; requests without a group share no prefix, so each of their chunks is
a partition of its own. Partitions are balanced by the tokens the model will compute, not by
request count: a relation with long objects or many examples costs more per request.
"""
from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Sequence


def partitions(groups: Sequence[str]) -> list[list[int]]:
    """Chunk indices by partition, in the order partitions first appear; ``groups``: the
    prefix group of each chunk ("" for none).

    >>> partitions(["P19|0|50", "P19|0|50", "", "P36|0|50", ""])
    [[0, 1], [2], [3], [4]]
    """
    out: list[list[int]] = []
    where: dict[str, int] = {}
    for i, g in enumerate(groups):
        if g == "":
            out.append([i])
            continue
        if g not in where:
            where[g] = len(out)
            out.append([])
        out[where[g]].append(i)
    return out


def assign(costs: Sequence[int], bins: int) -> list[int]:
    """Greedy largest-first: each partition (heaviest first; ties by index) goes to the
    least-loaded bin (ties: the lowest bin). Returns the bin of each partition. A pure
    function of its arguments, so every shard computes the same assignment.

    >>> assign([5, 3, 3, 2, 1], 2)
    [0, 1, 1, 0, 1]
    """
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    heap = [(0, b) for b in range(max(1, bins))]
    out = [0] * len(costs)
    for i in order:
        load, b = heapq.heappop(heap)
        out[i] = b
        heapq.heappush(heap, (load + costs[i], b))
    return out


def token_counter(backend) -> Callable[[str], int]:
    """Tokens of a text under ``backend``'s tokenizer (memoised: a relation's choices recur in
    every request); characters / 4 for a backend without one."""
    if hasattr(backend, "encode"):
        def raw(text: str) -> int:
            return len(backend.encode(text))
    elif hasattr(backend, "tok"):
        def raw(text: str) -> int:
            return len(backend.tok(text, add_special_tokens=False)["input_ids"])
    else:
        def raw(text: str) -> int:
            return len(text) // 4 + 1
    memo: dict[str, int] = {}

    def count(text: str) -> int:
        n = memo.get(text)
        if n is None:
            n = memo[text] = raw(text)
        return n
    return count


def chunk_tokens(chunk: Sequence, count: Callable[[str], int]) -> int:
    """Tokens the model computes for one chunk, as the prefix-caching backend computes them:
    the group's shared prefix once, then each request's own suffix and continuations (score),
    or its own suffix and every new token of every sample (generate).

    >>> from factprobe.probes.requests import ScoreRequest
    >>> reqs = [ScoreRequest("a b c x", ("y", "zz")), ScoreRequest("a b c w", ("y",))]
    >>> chunk_tokens(reqs, len)    # 'a b c ' once, then 'x' 'y' 'zz' and 'w' 'y'
    12
    """
    texts = [getattr(r, "context", None) if hasattr(r, "context") else r.prompt for r in chunk]
    prefix = os.path.commonprefix(texts) if len(texts) > 1 else ""
    total = count(prefix) if prefix else 0
    for r, text in zip(chunk, texts):
        total += count(text[len(prefix):])
        if hasattr(r, "continuations"):
            total += sum(len(c) for c in r.continuation_ids) if r.continuation_ids else \
                sum(count(c) for c in r.continuations)
        elif hasattr(r, "max_new_tokens"):
            total += max(1, r.samples) * r.max_new_tokens
    return max(1, total)
