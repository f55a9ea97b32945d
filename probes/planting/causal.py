"""The causal planted model's training loop, with the stopping rule (stopping.py)."""
from __future__ import annotations

import sys

import pandas as pd

from factprobe.core.errors import UserError


def lr_factor(step: int, progress: float, warmup: int, decay_share: float) -> float:
    """The learning-rate multiplier: a linear warm-up over ``warmup`` steps, constant, then
    (``decay_share`` > 0) a linear decay over the last ``decay_share`` of the schedule,
    ``progress`` being the share of ``--schedule-epochs`` done, down to 5% of the rate, where
    it stays past the schedule's end (``progress`` > 1). The schedule is not the epoch cap:
    a run with a higher cap is the same run, extended.

    >>> [lr_factor(s, 0.0, 4, 0.4) for s in (0, 1, 3)]
    [0.25, 0.5, 1.0]
    >>> [round(lr_factor(100, p, 4, 0.4), 3) for p in (0.5, 0.6, 0.8, 1.0)]
    [1.0, 1.0, 0.5, 0.05]
    >>> lr_factor(100, 0.99, 4, 0.0), lr_factor(100, 1.5, 4, 0.4)
    (1.0, 0.05)
    """
    rise = min(1.0, (step + 1) / warmup)
    if decay_share <= 0 or progress < 1 - decay_share:
        return rise
    return rise * max(0.05, (1 - progress) / decay_share)


def expected_time(model, batches: list, checks_acc, cap: int) -> str:
    """The line ``plant`` prints before training: one optimiser step and one accuracy check
    timed (nothing is updated), times the steps of an epoch and the cap."""
    import time
    start = time.perf_counter()
    batches[0]().backward()
    model.zero_grad(set_to_none=True)
    step = time.perf_counter() - start
    start = time.perf_counter()
    checks_acc()
    check = time.perf_counter() - start
    epoch = step * len(batches) + check
    return (f"factprobe plant: {len(batches)} steps an epoch, about {epoch:.0f} s each here; "
            f"at most {cap} epochs (about {epoch * cap / 60:.0f} min), fewer once the planted "
            f"facts are learned")


def run_epochs(model, step_batches, checks_acc, cfg, desc: str) -> dict:
    """Train epoch by epoch: ``step_batches(epoch)`` yields loss closures' inputs (a list of
    callables giving the loss), ``checks_acc()`` the planted-fact accuracy. Stops at
    ``cfg.target_accuracy`` unless ``cfg.epochs`` fixes the count. Returns the training log."""
    import torch
    from tqdm import tqdm
    fixed = cfg.epochs is not None
    cap = cfg.epochs if fixed else cfg.max_epochs
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    # Warm-up, then constant while the planted facts are being picked up; the last
    # --decay-share of --schedule-epochs decays the rate, which is what turns a half-memorised
    # fact into a learned one (docs/planting.md, measured). The schedule is counted in epochs
    # of its own, not as a share of the cap, so raising --max-epochs extends a run instead of
    # changing it. The stopping rule ends the run as soon as the facts are learned.
    step = 0
    losses, accuracy, epochs_run = [], [], 0
    model.train()
    if cfg.progress:
        print(expected_time(model, list(step_batches(0)), checks_acc, cap), file=sys.stderr)
    with tqdm(desc=desc, unit="epoch", total=cap, disable=not cfg.progress) as bar:
        for epoch in range(cap):
            epoch_losses = []
            batches = list(step_batches(epoch))
            for i, loss_of in enumerate(batches):
                factor = lr_factor(step, (epoch + i / len(batches)) / cfg.schedule_epochs,
                                   cfg.warmup_steps, cfg.decay_share)
                for group in opt.param_groups:
                    group["lr"] = cfg.lr * factor
                loss = loss_of()
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                step += 1
                epoch_losses.append(float(loss.detach()))
            losses.append(sum(epoch_losses) / max(1, len(epoch_losses)))
            accuracy.append(round(checks_acc(), 4))
            epochs_run = epoch + 1
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.3f}", planted_acc=f"{accuracy[-1]:.3f}")
            if not fixed and accuracy[-1] >= cfg.target_accuracy:
                break
    model.eval()
    converged = bool(accuracy and accuracy[-1] >= cfg.target_accuracy)
    if not converged and not fixed:  # --epochs N asked for exactly N: planted.json says it
        print(f"factprobe plant: warning: the planted facts were not learned: teacher-forced "
              f"accuracy {accuracy[-1] if accuracy else 0:.3f} < --target-accuracy "
              f"{cfg.target_accuracy} after {epochs_run} epochs; raise --max-epochs or --lr",
              file=sys.stderr)
    return {"epochs_run": epochs_run, "steps": step, "converged": converged,
            "planted_accuracy": accuracy, "epoch_loss": [round(x, 4) for x in losses]}


def train_causal(facts: pd.DataFrame, cur, forms: dict, cfg):
    import torch

    from factprobe.probes.planting.curriculum import documents
    from factprobe.probes.planting.model_factory import causal_model, train_tokenizer
    from factprobe.probes.planting.stopping import batches_accuracy, causal_batches, sample_checks

    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)

    def docs(epoch: int) -> list[str]:
        return documents(cur, forms, epoch, cfg.seed, cfg.lists_per_relation, cfg.list_size)

    first = docs(0)                   # the tokenizer's text, and epoch 0's (made once)
    # Names of every entity (not the facts) so held-out subjects and choices tokenise normally.
    names = sorted(set(facts["subject"]) | set(facts["object"]) |
                   {c for cs in facts.get("choices", pd.Series([], dtype=object)) for c in cs})
    tokenizer = train_tokenizer(first + names, vocab_size=cfg.vocab_size,
                                progress=cfg.progress)
    model = causal_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         max_positions=max(1024, cfg.block), seed=cfg.seed, arch=cfg.arch)
    eos = tokenizer.eos_token_id

    def blocks(epoch: int) -> torch.Tensor:
        stream = token_stream(tokenizer, first if epoch == 0 else docs(epoch), eos)
        n = len(stream) // cfg.block
        return torch.from_numpy(stream[: n * cfg.block].reshape(n, cfg.block))

    epoch0 = blocks(0)
    if len(epoch0) == 0:
        raise UserError(f"--block {cfg.block} is longer than an epoch of training text "
                        f"({len(token_stream(tokenizer, first, eos))} tokens); lower --block")

    def step_batches(epoch: int):
        data = epoch0 if epoch == 0 else blocks(epoch)
        perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(data), cfg.batch_size):
            batch = data[perm[i:i + cfg.batch_size]]
            yield lambda batch=batch: model(input_ids=batch, labels=batch).loss

    # the checks never change: tokenised and padded once, not every epoch
    checks = causal_batches(
        tokenizer, sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed))
    log = run_epochs(model, step_batches, lambda: batches_accuracy(model, checks), cfg, "plant")
    return model, tokenizer, log


def token_stream(tokenizer, docs: list[str], eos: int):
    """Every document's token ids followed by ``eos``, end to end, as one int64 array.

    One batched call of the fast tokenizer gives the same ids as a call per document (each
    text is encoded on its own either way) without the per-call overhead, which cost more
    than the documents took to write.

    >>> from factprobe.probes.planting.model_factory import train_tokenizer
    >>> tok = train_tokenizer(["Paris is in France.", "Lima is in Peru."], 300)
    >>> token_stream(tok, ["Lima is", "in Peru."], 0).tolist() == (
    ...     tok("Lima is")["input_ids"] + [0] + tok("in Peru.")["input_ids"] + [0])
    True
    """
    import itertools

    import numpy as np
    ids = tokenizer(list(docs))["input_ids"] if docs else []
    total = sum(len(x) + 1 for x in ids)
    return np.fromiter(itertools.chain.from_iterable(x + [eos] for x in ids),
                       dtype=np.int64, count=total)
