"""Inverse-transform draws follow the given distribution and never pick a zero-chance token."""
from __future__ import annotations

import pytest
import torch

from factprobe.probes.backends.sampling import draw


@pytest.mark.parametrize("vocab", [7, 256, 300, 1000])
def test_draw_frequencies_match_probabilities(vocab):
    g = torch.Generator().manual_seed(vocab)
    probs = (torch.randn(vocab, generator=g) * 2).softmax(-1)
    probs[::5] = 0.0                              # some tokens can never be drawn
    n = 40_000
    toks = draw(probs.expand(n, -1), torch.rand(n, dtype=torch.float64, generator=g))
    freq = torch.bincount(toks, minlength=vocab).double() / n
    want = probs.double() / probs.double().sum()
    assert freq[::5].sum() == 0
    assert float((freq - want).abs().max()) < 5 * float((want * (1 - want) / n).sqrt().max())
