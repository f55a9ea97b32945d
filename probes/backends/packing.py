"""Token trees packed into rows: how ``HFCausal.score`` feeds many short sequences at once.

After a group's shared prefix (its keys and values cached once), each request is a small tree:
its own context tokens as a chain, then a trie of its continuations (options that start with the
same tokens share those nodes: " 1879" and " 1885" share " 18"). A request's tree is a
*segment*; segments are packed side by side into a few rows of one forward pass. A 4D attention
mask lets every token see the cached prefix and its own ancestors only, and explicit position
ids give every token the position it has in the plain sequence, so each log-prob equals the
full-sequence computation. Logits are computed only where a continuation token is predicted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Segment:
    """One request's tokens after the shared prefix, as a tree in creation order."""

    request: int                               # index into the caller's request list
    tokens: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)   # -1: attends to the prefix only
    depth: list[int] = field(default_factory=list)    # position after the shared prefix
    paths: list[list[tuple[int, int]]] = field(default_factory=list)  # per continuation:
    # (node whose logits predict the token, token id), in order

    def __len__(self) -> int:
        return len(self.tokens)


def build_segment(request: int, suffix: list[int], continuations: list[list[int]],
                  share: bool = True) -> Segment:
    """The chain of ``suffix`` (at least one token) and the trie of ``continuations``.

    >>> s = build_segment(0, [7, 8], [[1, 2], [1, 3], [4]])
    >>> s.tokens, s.parent, s.depth
    ([7, 8, 1], [-1, 0, 1], [0, 1, 2])
    >>> s.paths
    [[(1, 1), (2, 2)], [(1, 1), (2, 3)], [(1, 4)]]
    """
    n = len(suffix)
    seg = Segment(request, list(suffix), [-1] + list(range(n - 1)), list(range(n)))
    children: dict[tuple[int, int], int] = {}
    last = n - 1
    for cont in continuations:
        node, path = last, []
        for j, tok in enumerate(cont):
            path.append((node, tok))
            if j == len(cont) - 1:
                break
            key = (node, tok)
            nxt = children.get(key) if share else None
            if nxt is None:
                nxt = len(seg.tokens)
                seg.tokens.append(tok)
                seg.parent.append(node)
                seg.depth.append(seg.depth[node] + 1)
                children[key] = nxt
            node = nxt
        seg.paths.append(path)
    return seg


def pack(segments: list[Segment], row_len: int) -> list[list[Segment]]:
    """Spread segments over as few rows of about ``row_len`` tokens as hold them, longest
    first onto the emptiest row, so rows come out nearly equal and padding stays small.

    >>> s = [build_segment(i, [1] * n, []) for i, n in enumerate([5, 3, 4, 4])]
    >>> [[x.request for x in row] for row in pack(s, 8)]
    [[0, 1], [2, 3]]
    """
    total = sum(len(s) for s in segments)
    longest = max((len(s) for s in segments), default=0)
    n_rows = max(1, -(-total // max(row_len, longest)))
    rows: list[list[Segment]] = [[] for _ in range(n_rows)]
    fill = [0] * n_rows
    for seg in sorted(segments, key=len, reverse=True):
        r = min(range(n_rows), key=fill.__getitem__)
        rows[r].append(seg)
        fill[r] += len(seg)
    return [row for row in rows if row]


@dataclass
class Batch:
    """Arrays of one packed forward pass (numpy; the backend moves them to its device)."""

    ids: np.ndarray          # (rows, width) int64
    positions: np.ndarray    # (rows, width) int64, absolute (prefix length + depth)
    allowed: np.ndarray      # (rows, width, width) bool: query attends to key (both packed)
    real: np.ndarray         # (rows, width) bool: not padding
    keep: np.ndarray         # (rows, width) bool: logits needed here
    t_row: np.ndarray        # every target token: the row and column whose logits predict it,
    t_col: np.ndarray        # and its id; continuation after continuation, segment after
    t_tok: np.ndarray        # segment
    bounds: list[int]        # end of each continuation's targets in the t_* arrays
    owners: list[tuple[int, int]]   # per segment: (request, number of continuations)
    attended: int            # sum over real tokens of the keys they attend (prefix included)

    def keep_slots(self) -> tuple[np.ndarray, np.ndarray]:
        """Kept columns per row as a (rows, k) array padded with the row's first kept column,
        and each target's index into the flattened (rows * k) selection."""
        counts = self.keep.sum(axis=1)
        k = max(1, int(counts.max()))
        slots = np.zeros((len(counts), k), dtype=np.int64)
        index = np.full(self.keep.shape, -1, dtype=np.int64)
        for r in range(len(counts)):
            cols = np.flatnonzero(self.keep[r])
            if len(cols):
                slots[r, :len(cols)] = cols
                slots[r, len(cols):] = cols[0]
                index[r, cols] = np.arange(len(cols))
        return slots, self.t_row * k + index[self.t_row, self.t_col]

    def keep_index(self) -> np.ndarray:
        """Each target's index among the kept positions in row-major order."""
        kept = np.cumsum(self.keep.ravel()) - 1
        return kept[self.t_row * self.keep.shape[1] + self.t_col]


def make_batch(rows: list[list[Segment]], prefix_len: int, pad_id: int) -> Batch:
    width = max(sum(len(s) for s in row) for row in rows)
    n = len(rows)
    ids = np.full((n, width), pad_id, dtype=np.int64)
    positions = np.full((n, width), prefix_len, dtype=np.int64)
    allowed = np.zeros((n, width, width), dtype=bool)
    real = np.zeros((n, width), dtype=bool)
    t_row: list[int] = []
    t_col: list[int] = []
    t_tok: list[int] = []
    bounds: list[int] = []
    owners: list[tuple[int, int]] = []
    attended = 0
    for r, row in enumerate(rows):
        off = 0
        for seg in row:
            m = len(seg)
            ids[r, off:off + m] = seg.tokens
            depth = np.asarray(seg.depth, dtype=np.int64)
            positions[r, off:off + m] = prefix_len + depth
            real[r, off:off + m] = True
            block = np.eye(m, dtype=bool)
            for a, par in enumerate(seg.parent):   # parents come before their children
                if par >= 0:
                    block[a] |= block[par]
            allowed[r, off:off + m, off:off + m] = block
            attended += int(m * prefix_len + depth.sum() + m)
            for path in seg.paths:
                for node, tok in path:
                    t_row.append(r)
                    t_col.append(off + node)
                    t_tok.append(tok)
                bounds.append(len(t_tok))
            owners.append((seg.request, len(seg.paths)))
            off += m
        idx = np.arange(off, width)
        allowed[r, idx, idx] = True                # padding sees itself only (no empty rows)
    rows_a, cols_a = np.asarray(t_row, dtype=np.int64), np.asarray(t_col, dtype=np.int64)
    keep = np.zeros((n, width), dtype=bool)
    keep[rows_a, cols_a] = True
    return Batch(ids, positions, allowed, real, keep, rows_a, cols_a,
                 np.asarray(t_tok, dtype=np.int64), bounds, owners, attended)
