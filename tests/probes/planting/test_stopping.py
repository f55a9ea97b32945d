"""The stopping rule: train until the planted facts are learned, and say when they were not."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from factprobe.probes.planting.causal import run_epochs
from factprobe.probes.planting.config import PlantConfig
from factprobe.probes.planting.stopping import sample_checks

torch = pytest.importorskip("torch")


def Cfg(**changes) -> PlantConfig:
    """The real training settings, with this file's small ones (no dataset is read)."""
    return replace(PlantConfig(dataset="", out="", max_epochs=10, decay_share=0.0,
                               schedule_epochs=10, weight_decay=0.01,
                               lr=0.1, warmup_steps=1, progress=False, threads=1),
                   **changes)


def fake_training(accuracies):
    """A one-parameter 'model' whose planted accuracy after epoch k is accuracies[k]."""
    model = torch.nn.Linear(1, 1)
    seen = iter(accuracies)

    def step_batches(epoch):
        for _ in range(3):  # 3 steps per epoch
            yield [lambda: (model(torch.ones(1, 1)) ** 2).sum()]
    return model, step_batches, lambda lanes: next(seen)


def test_stops_at_the_first_epoch_that_reaches_the_target(capsys):
    model, steps, acc = fake_training([0.2, 0.6, 0.96, 1.0, 1.0])
    log = run_epochs(model, steps, acc, Cfg(), "t")
    # epoch 3 reaches 0.96 >= 0.95: 3 epochs of 3 steps, no warning
    assert (log["epochs_run"], log["steps"], log["converged"]) == (3, 9, True)
    assert log["planted_accuracy"] == [0.2, 0.6, 0.96]
    assert capsys.readouterr().err == ""


def test_says_when_the_cap_is_reached_unlearned(capsys):
    model, steps, acc = fake_training([0.1, 0.5, 0.9])
    log = run_epochs(model, steps, acc, Cfg(max_epochs=3), "t")
    assert (log["epochs_run"], log["converged"]) == (3, False)
    err = capsys.readouterr().err
    assert "not learned" in err and "0.900 < --target-accuracy 0.95" in err


def test_a_fixed_epoch_count_runs_past_the_target_and_does_not_warn(capsys):
    model, steps, acc = fake_training([0.99, 0.99, 0.99, 0.99])
    log = run_epochs(model, steps, acc, Cfg(epochs=4), "t")
    assert (log["epochs_run"], log["converged"]) == (4, True)
    model, steps, acc = fake_training([0.1, 0.2])
    log = run_epochs(model, steps, acc, Cfg(epochs=2), "t")
    assert log["converged"] is False and capsys.readouterr().err == ""


def test_checks_ask_planted_facts_in_their_taught_frames():
    taught = pd.DataFrame({"fact_id": ["a", "decoy:b", "c"], "relation_id": ["cap"] * 3,
                           "subject": ["France", "Zal", "Italy"],
                           "object": ["Paris", "Lima", "Rome"],
                           "role": ["planted", "decoy", "planted"], "partial": [False] * 3})
    forms = {"cap": (["The capital of [X] is [Y]."], ["What is the capital of [X]?"])}
    checks = sample_checks(taught, forms, ("statement", "question"), 10, 0)
    assert [(c.prefix, c.obj) for c in checks] == [
        ("The capital of France is", " Paris"),
        ("What is the capital of France?", " Paris"),
        ("The capital of Italy is", " Rome"),
        ("What is the capital of Italy?", " Rome")]       # never the decoy
    masked = sample_checks(taught, forms, ("statement",), 1, 0, masked=True)
    assert len(masked) == 1 and masked[0].tail == "."



def test_the_rate_decays_over_the_last_share_of_the_schedule(monkeypatch):
    lrs = []

    class Recording(torch.optim.AdamW):
        def step(self, *a, **k):
            lrs.append(self.param_groups[0]["lr"])
            return super().step(*a, **k)
    monkeypatch.setattr(torch.optim, "AdamW", Recording)
    model, steps, acc = fake_training([0.1] * 4)
    run_epochs(model, steps, acc, Cfg(epochs=4, lr=1.0, decay_share=0.5, schedule_epochs=4), "t")
    # 4 epochs of 3 steps; the schedule's progress is (epoch + step/3) / 4: constant up to 0.5,
    # then (1 - progress) / 0.5
    assert [round(x, 3) for x in lrs] == [1, 1, 1, 1, 1, 1, 1, 0.833, 0.667, 0.5, 0.333, 0.167]
