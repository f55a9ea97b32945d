"""The training sizes that depend on how much text a graph gives an epoch: the causal
model's tokens per sequence and the masked model's statements per step. ``factprobe plant``
fits them to the text it writes when they are not given; ``factprobe init`` writes the same
rules' values into params.yaml from its estimate of that text (scaffold/sizing.py)."""
from __future__ import annotations

# A small graph's epoch of text fills few optimiser steps at the sizes made for a few hundred
# facts: on a 48-fact graph block 64 instead of 256 took the causal model from 60 to 240 steps
# (loss 1.42 to 0.80) and BELIEF-ICL's and MONITOR's validity AUROC from about 0.55 to 0.98.
BLOCK, MIN_BLOCK, MIN_STEPS = 256, 64, 4
MASKED_BATCH, MIN_MASKED_STEPS = 8, 16


def fit_block(tokens: float, batch: int) -> int:
    """Tokens per training sequence for an epoch of ``tokens`` tokens in batches of
    ``batch`` sequences: 256, halved (down to 64) while an epoch would be fewer than 4 steps.

    >>> fit_block(22_000, 4), fit_block(3_000, 4), fit_block(100, 4)
    (256, 128, 64)
    """
    block = BLOCK
    while block > MIN_BLOCK and tokens < MIN_STEPS * batch * block:
        block //= 2
    return block


def fit_masked_batch(sentences: int) -> int:
    """Groups of 16 statements per step of the masked model for an epoch of ``sentences``:
    8, halved (down to 1) while an epoch would be fewer than 16 steps.

    >>> fit_masked_batch(20_000), fit_masked_batch(1_500), fit_masked_batch(100)
    (8, 4, 1)
    """
    batch = MASKED_BATCH
    while batch > 1 and sentences < MIN_MASKED_STEPS * 16 * batch:
        batch //= 2
    return batch
