"""Batched multinomial draws whose outcome for a row depends only on that row.

Each row brings its own uniform number (from its own seeded generator); the token is where that
number falls in the row's cumulative distribution. The search runs in two levels (blocks of
``BLOCK`` tokens, then within the chosen block), in float64, so no full-vocabulary prefix sum is
written: on a CPU the sequential scan over 50,000 entries per row was the costliest step.
"""
from __future__ import annotations

import torch

BLOCK = 256


def draw(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Token ids, one per row of ``probs`` (rows, vocab; need not sum to one), for uniform
    numbers ``u`` in [0, 1) (rows,). The chance of token i is probs[i] / sum(probs).

    >>> p = torch.tensor([[0.0, 0.5, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0]])
    >>> draw(p, torch.tensor([0.49, 0.99], dtype=torch.float64)).tolist()
    [1, 0]
    >>> draw(p, torch.tensor([0.51, 0.0], dtype=torch.float64)).tolist()
    [3, 0]
    """
    rows, vocab = probs.shape
    full = vocab // BLOCK
    parts = [probs.unfold(1, BLOCK, BLOCK).sum(dim=-1)] if full else []   # unfold: a view
    if vocab % BLOCK:
        parts.append(probs[:, full * BLOCK:].sum(dim=-1, keepdim=True))
    sums = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
    block_cdf = sums.double().cumsum(dim=-1)
    x = (u.to(block_cdf.dtype) * block_cdf[:, -1])[:, None]
    b = torch.searchsorted(block_cdf, x, right=True).clamp_(max=block_cdf.shape[1] - 1)
    before = torch.where(b > 0, block_cdf.gather(1, (b - 1).clamp(min=0)), torch.zeros_like(x))
    idx = b * BLOCK + torch.arange(BLOCK, device=probs.device)
    inner = probs.gather(1, idx.clamp(max=vocab - 1)).masked_fill_(idx >= vocab, 0)
    k = torch.searchsorted(inner.cumsum(dim=-1, dtype=torch.float64), x - before,
                           right=True).clamp_(max=BLOCK - 1)
    return (b * BLOCK + k)[:, 0].clamp_(max=vocab - 1)
