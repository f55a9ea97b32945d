"""The stopping rule: train until the planted facts are learned, not for a fixed epoch count.

After every epoch the model is asked, teacher-forced, for the object of a fixed sample of
planted facts in the frames they were taught in (the cloze statement, the base question, a
ZP-LKE list); a fact-frame counts when every object token is the model's top prediction.
Training stops once that accuracy reaches the target, or at the epoch cap, and says which.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Check:
    prefix: str                       # text before the object (causal) / before the mask
    obj: str                          # the object, with its leading separator
    tail: str = ""                    # text after the object (masked LMs read both sides)


def sample_checks(taught: pd.DataFrame, forms: dict, formats: tuple[str, ...], n: int,
                  seed: int, *, masked: bool = False) -> list[Check]:
    """Up to ``n`` planted facts (seeded), each in every taught frame that ends in its
    object; for the masked model, the statement with the object in place."""
    from factprobe.builders.templates.files import fill, y_is_last
    from factprobe.probes.methods.monitor import prompt
    planted = taught[taught["role"] == "planted"]
    rng = np.random.default_rng([seed, 11])
    pick = planted.iloc[np.sort(rng.permutation(len(planted))[:n])]
    checks = []
    for row in pick.itertuples(index=False):
        statements, questions = forms[row.relation_id]
        if masked:
            form = statements[0] if "statement" in formats else questions[0] + " [Y]."
            head, _, tail = fill(form, row.subject).partition("[Y]")
            checks.append(Check(head, row.object, tail))
            continue
        if "statement" in formats and y_is_last(statements[0]):
            head = fill(statements[0], row.subject).partition("[Y]")[0]
            checks.append(Check(head.rstrip(" "), " " + row.object))
        if "question" in formats:
            checks.append(Check(prompt(fill(questions[0], row.subject)), " " + row.object))
        if "list" in formats:
            same = taught[(taught["relation_id"] == row.relation_id)
                          & (taught["fact_id"] != row.fact_id)]
            shots = same.iloc[rng.permutation(len(same))[:5]]
            body = ", ".join(f"{x} {y}" for x, y in zip(shots["subject"], shots["object"]))
            checks.append(Check(f"{body}, {row.subject}" if body else row.subject,
                                " " + row.object))
    return checks


def _padded(seqs: list[list[int]], pad_id: int):
    """(input_ids, attention_mask) of token-id lists right-padded to the longest."""
    import torch
    ids = torch.full((len(seqs), max(len(q) for q in seqs)), pad_id)
    attn = torch.zeros_like(ids)
    for j, q in enumerate(seqs):
        ids[j, :len(q)] = torch.tensor(q)
        attn[j, :len(q)] = 1
    return ids, attn


# A matrix product of few rows takes another path in the CPU's BLAS whose last bits differ
# from the whole batch's (measured here: up to 5 rows at width 128, up to 10 at 256; from
# 32 rows on, every row equal at widths 128-512), which could flip a near-tie in the argmax
# and so the stopping epoch: the gathered rows are padded to at least this many, so the
# check reads the very logits the whole batch's projection gave.
MIN_HEAD_ROWS = 64


@dataclass(frozen=True)
class CheckBatch:
    """One padded batch of checks, tokenised once for the whole run: the positions whose
    top prediction must be the target token, and which check each position belongs to."""
    ids: object                       # (batch, width) input ids, as the model reads them
    attn: object                      # attention mask
    rows: object                      # (positions,) batch row of each predicted token
    cols: object                      # (positions,) its column: the logit read there
    targets: object                   # (positions,) the token that must be on top
    owner: object                     # (positions,) index of its check within the batch
    size: int                         # checks in the batch


def _batch(seqs: list[list[int]], spans: list[tuple[list[int], list[int]]], pad_id: int
           ) -> CheckBatch:
    """``spans``: per sequence, (columns read, target ids) of equal length."""
    import torch
    ids, attn = _padded(seqs, pad_id)
    rows, cols, targets, owner = [], [], [], []
    for j, (cs, ts) in enumerate(spans):
        rows += [j] * len(cs)
        cols += cs
        targets += ts
        owner += [j] * len(cs)
    as_long = lambda xs: torch.tensor(xs, dtype=torch.long)  # noqa: E731
    return CheckBatch(ids, attn, as_long(rows), as_long(cols), as_long(targets),
                      as_long(owner), len(seqs))


def causal_batches(tokenizer, checks: list[Check], batch: int = 64) -> list[CheckBatch]:
    """The checks of a causal model, tokenised and padded once: position ``h - 1 + i`` of a
    prefix of ``h`` tokens must predict the object's ``i``-th token."""
    out = []
    for i in range(0, len(checks), batch):
        seqs, spans = [], []
        for c in checks[i:i + batch]:
            head = tokenizer(c.prefix)["input_ids"]
            obj = tokenizer(c.obj)["input_ids"]
            seqs.append(head + obj)
            # an empty prefix has no position to predict the object from: nothing is read
            # (and the check counts, as the earlier slice top[-1:k - 1] of nothing did)
            h = len(head)
            spans.append((list(range(h - 1, h - 1 + len(obj))), obj) if h else ([], []))
        out.append(_batch(seqs, spans, tokenizer.pad_token_id))
    return out


def masked_batches(tokenizer, checks: list[Check], batch: int = 64) -> list[CheckBatch]:
    """The checks of a masked model: the object's tokens masked, each mask must be filled
    with the object's token."""
    out = []
    for i in range(0, len(checks), batch):
        seqs, spans = [], []
        for c in checks[i:i + batch]:
            h = tokenizer(c.prefix, add_special_tokens=False)["input_ids"]
            o = tokenizer(" " + c.obj if c.prefix.endswith(" ") else c.obj,
                          add_special_tokens=False)["input_ids"]
            t = tokenizer(c.tail, add_special_tokens=False)["input_ids"]
            a = [tokenizer.cls_token_id] + h
            seqs.append(a + [tokenizer.mask_token_id] * len(o) + t + [tokenizer.sep_token_id])
            spans.append((list(range(len(a), len(a) + len(o))), o))
        out.append(_batch(seqs, spans, tokenizer.pad_token_id))
    return out


def _head(model):
    """The layers that turn a hidden state into vocabulary logits: BERT's transform and
    decoder, a causal LM's output projection."""
    return model.cls if hasattr(model, "cls") else model.get_output_embeddings()


def batches_accuracy(model, batches: list[CheckBatch], lanes=None) -> float:
    """Share of checks whose every target token is the top prediction at its position.

    Only the positions read go through the vocabulary projection (the costliest layer of a
    small model: every position of every check times the vocabulary), not the whole batch;
    the body of the model runs on the same padded batch as a full forward pass would.
    ``lanes`` (core.lanes, the training's): the batches spread over its threads, each batch
    computed whole on one, so the count is the one a single thread gives."""
    import torch
    total = sum(b.size for b in batches)
    if not total:
        return float("nan")
    head = _head(model)

    def hits(b: CheckBatch) -> int:
        with torch.inference_mode():     # per thread: a lane does not inherit the caller's
            hidden = model.base_model(input_ids=b.ids, attention_mask=b.attn)[0]
            picked = hidden[b.rows, b.cols]
            n = len(picked)
            if 0 < n < MIN_HEAD_ROWS:
                picked = torch.cat([picked, picked[:1].expand(MIN_HEAD_ROWS - n, -1)])
            top = head(picked)[:n].argmax(-1)
            misses = torch.zeros(b.size, dtype=torch.long).index_add_(
                0, b.owner, (top != b.targets).long())
            return int((misses == 0).sum())

    model.eval()
    try:
        counted = lanes.map(hits, batches) if lanes is not None else [hits(b) for b in batches]
    finally:
        model.train()
    return sum(counted) / total


def causal_accuracy(model, tokenizer, checks: list[Check], batch: int = 64) -> float:
    """Share of checks whose object tokens are all the greedy next tokens."""
    return batches_accuracy(model, causal_batches(tokenizer, checks, batch))


def masked_accuracy(model, tokenizer, checks: list[Check], batch: int = 64) -> float:
    """Share of checks whose masked object tokens are all the top prediction."""
    return batches_accuracy(model, masked_batches(tokenizer, checks, batch))
