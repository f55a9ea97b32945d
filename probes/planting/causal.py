"""The causal planted model's training loop, with the stopping rule (stopping.py)."""
from __future__ import annotations

import sys
from contextlib import contextmanager

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


def expected_time(step, steps: list, checks_acc, cap: int) -> str:
    """The line ``plant`` prints before training: one optimiser step's gradients and one
    accuracy check timed (nothing is updated), times the steps of an epoch and the cap."""
    import time
    start = time.perf_counter()
    step(steps[0])
    seconds = time.perf_counter() - start
    for p in step.params:
        p.grad = None
    start = time.perf_counter()
    checks_acc(step.lanes())
    check = time.perf_counter() - start
    epoch = seconds * len(steps) + check
    return (f"factprobe plant: {len(steps)} steps an epoch on {step.workers} thread"
            f"{'s' if step.workers > 1 else ''}, about {epoch:.0f} s each here; "
            f"at most {cap} epochs (about {epoch * cap / 60:.0f} min), fewer once the planted "
            f"facts are learned")


def parts(n: int, k: int) -> list[slice]:
    """``k`` contiguous, near-equal, non-empty slices of ``range(n)`` (fewer when n < k): the
    micro-batches of a batch of ``n`` rows.

    >>> parts(4, 2), parts(3, 2), parts(1, 2)
    ([slice(0, 2, None), slice(2, 4, None)], [slice(0, 2, None), slice(2, 3, None)], [slice(0, 1, None)])
    """
    k = max(1, min(k, n))
    cuts = [round(i * n / k) for i in range(k + 1)]
    return [slice(a, b) for a, b in zip(cuts, cuts[1:])]


class Gradients:
    """A batch's gradient as the sum of its micro-batches' (``cfg.micro_batches``), each
    computed on its own graph with one torch thread, on up to ``workers`` Python threads.

    Why not torch's own threads: a parallel op splits its sums by the thread count, so two
    threads train other bits than one, and every op waits at a barrier for its slowest thread,
    which on a machine where another process holds a core is the one not running (143 s for
    what took 15 s). Here a micro-batch's arithmetic is a one-thread run whatever ran it, and
    the parts are added in their order, so the trained bytes depend on ``micro_batches`` (a
    parameter) and never on the threads or the load; a busy core costs only its share. Torch
    releases the GIL inside its ops, so the threads do run side by side (docs/planting.md,
    measured)."""

    def __init__(self, model, workers: int):
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.workers = max(1, workers)       # may change between steps: no bit depends on it
        self._by_count: dict = {}            # eval's lanes (core.lanes), one set per count

    def lanes(self):
        """The lanes of the current worker count (the accuracy check runs on them too)."""
        from factprobe.core.lanes import Lanes
        if self.workers not in self._by_count:
            self._by_count[self.workers] = Lanes(self.workers)
        return self._by_count[self.workers]

    def _one(self, loss_of):
        import torch
        loss = loss_of()
        return loss.detach(), torch.autograd.grad(loss, self.params, allow_unused=True)

    def __call__(self, micro: list) -> float:
        """Sets each parameter's ``.grad`` to the batch's gradient; returns the batch loss.
        Each callable in ``micro`` gives its micro-batch's loss already divided by the whole
        batch's count of predicted tokens, so the parts add up to the batch's mean."""
        done = self.lanes().map(self._one, micro)
        loss = done[0][0]
        for other, _ in done[1:]:
            loss = loss + other
        for i, p in enumerate(self.params):
            grads = [g[i] for _, g in done if g[i] is not None]
            total = grads[0] if grads else None
            for g in grads[1:]:
                total = total + g
            p.grad = total
        return float(loss)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for lanes in self._by_count.values():
            lanes.close()


@contextmanager
def one_torch_thread():
    """Torch on one intra-op thread while a model trains, the caller's count restored after:
    the trained bits must not depend on who called (the CLI, the library, a test) or on how
    many cores they had (Gradients says why)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_epochs(model, step_batches, checks_acc, cfg, desc: str) -> dict:
    """Train epoch by epoch: ``step_batches(epoch)`` yields each optimiser step's micro-batches
    (a list of callables giving their share of the step's loss, :class:`Gradients`),
    ``checks_acc(lanes)`` the planted-fact accuracy (on the training's lanes). Stops at
    ``cfg.target_accuracy`` unless ``cfg.epochs`` fixes the count. Returns the training log."""
    import torch
    from tqdm import tqdm

    from factprobe.core.cpus import LoadMeter, choose_threads, free_cores
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
    # --threads N fixes the count; by default it follows the load, chosen at start and again
    # after every epoch from what other processes used during it (no bit depends on it, and
    # a job that starts or stops next to a long plant should not decide it once for all)
    most = cfg.micro_batches
    meter = None if cfg.threads else LoadMeter()
    workers = cfg.threads or choose_threads("auto", work_cap=most).threads
    with one_torch_thread(), Gradients(model, workers) as grads:
        if cfg.progress:
            print(expected_time(grads, list(step_batches(0)), checks_acc, cap), file=sys.stderr)
        with tqdm(desc=desc, unit="epoch", total=cap, disable=not cfg.progress) as bar:
            for epoch in range(cap):
                epoch_losses = []
                batches = list(step_batches(epoch))
                for i, micro in enumerate(batches):
                    factor = lr_factor(step, (epoch + i / len(batches)) / cfg.schedule_epochs,
                                       cfg.warmup_steps, cfg.decay_share)
                    for group in opt.param_groups:
                        group["lr"] = cfg.lr * factor
                    epoch_losses.append(grads(micro))
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                    opt.zero_grad()
                    step += 1
                losses.append(sum(epoch_losses) / max(1, len(epoch_losses)))
                accuracy.append(round(checks_acc(grads.lanes()), 4))
                if meter is not None:
                    grads.workers = min(most, free_cores(meter.n, meter.busy()))
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

    from dataclasses import replace

    from factprobe.probes.planting.curriculum import documents
    from factprobe.probes.planting.model_factory import causal_model, train_tokenizer
    from factprobe.probes.planting.sizes import fit_block
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
    eos = tokenizer.eos_token_id
    stream0 = token_stream(tokenizer, first, eos)
    fitted = {} if cfg.block else {"block": fit_block(len(stream0), cfg.batch_size)}
    cfg = replace(cfg, **fitted)
    model = causal_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         max_positions=max(1024, cfg.block), seed=cfg.seed, arch=cfg.arch)

    def blocks(epoch: int) -> torch.Tensor:
        stream = stream0 if epoch == 0 else token_stream(tokenizer, docs(epoch), eos)
        n = len(stream) // cfg.block
        return torch.from_numpy(stream[: n * cfg.block].reshape(n, cfg.block))

    epoch0 = blocks(0)
    if len(epoch0) == 0:
        raise UserError(f"--block {cfg.block} is longer than an epoch of training text "
                        f"({len(stream0)} tokens); lower --block")

    def step_batches(epoch: int):
        data = epoch0 if epoch == 0 else blocks(epoch)
        perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(data), cfg.batch_size):
            batch = data[perm[i:i + cfg.batch_size]]
            # every block predicts block - 1 tokens: the step's loss is their sum over the
            # batch divided by their count, shared out between its micro-batches
            count = torch.tensor(len(batch) * (cfg.block - 1))
            yield [lambda part=batch[cut]: model(input_ids=part, labels=part,
                                                 num_items_in_batch=count).loss
                   for cut in parts(len(batch), cfg.micro_batches)]

    # the checks never change: tokenised and padded once, not every epoch
    checks = causal_batches(
        tokenizer, sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed))
    log = run_epochs(model, step_batches, lambda lanes: batches_accuracy(model, checks, lanes),
                     cfg, "plant")
    return model, tokenizer, {**log, "fitted": fitted}


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
