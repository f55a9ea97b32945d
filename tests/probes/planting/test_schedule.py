"""The rate schedule is counted in epochs of its own: a higher epoch cap extends a run."""
from __future__ import annotations

from dataclasses import replace

import pytest

from factprobe.probes.planting.causal import run_epochs
from factprobe.probes.planting.config import PlantConfig

torch = pytest.importorskip("torch")
ADAMW = torch.optim.AdamW


def Cfg(**changes) -> PlantConfig:
    """The real training settings, with this file's small ones (no dataset is read)."""
    return replace(PlantConfig(dataset="", out="", max_epochs=10, decay_share=0.5,
                               schedule_epochs=4, weight_decay=0.0,
                               lr=0.5, warmup_steps=1, progress=False, threads=1),
                   **changes)


def rates(monkeypatch, cfg: PlantConfig) -> list[float]:
    lrs: list[float] = []

    class Recording(ADAMW):
        def step(self, *a, **k):
            lrs.append(round(self.param_groups[0]["lr"], 4))
            return super().step(*a, **k)
    monkeypatch.setattr(torch.optim, "AdamW", Recording)
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)

    def step_batches(epoch):
        for _ in range(2):
            yield [lambda: (model(torch.ones(1, 1)) ** 2).sum()]
    run_epochs(model, step_batches, lambda lanes: 0.1, cfg, "t")      # never learned: runs to the cap
    return lrs


def test_a_higher_cap_is_the_same_run_extended(monkeypatch, capsys):
    short = rates(monkeypatch, Cfg(max_epochs=3))
    long = rates(monkeypatch, Cfg(max_epochs=6))
    # the cap's share would decay the 6-epoch run from epoch 3, the 3-epoch one from 1.5
    assert long[:6] == short
    # schedule of 4 epochs, 2 steps each, decay over its last half: 1, 1, 1, 1, then
    # (1 - p) / 0.5 at p = 4/8 .. 7/8, then 5% past the schedule's end
    assert long == [0.5, 0.5, 0.5, 0.5, 0.5, 0.375, 0.25, 0.125, 0.025, 0.025, 0.025, 0.025]
    assert "not learned" in capsys.readouterr().err


def test_the_expected_time_is_said_before_training_and_changes_nothing():
    from factprobe.probes.planting.causal import Gradients, expected_time
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    before = [p.detach().clone() for p in model.parameters()]
    batches = [[lambda: (model(torch.ones(1, 1)) ** 2).sum()]] * 7
    with Gradients(model, 1) as grads:
        line = expected_time(grads, batches, lambda lanes: 0.5, 30)
    assert line.startswith("factprobe plant: 7 steps an epoch on 1 thread, about ")
    assert "at most 30 epochs" in line
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())
