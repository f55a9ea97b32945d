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


def causal_accuracy(model, tokenizer, checks: list[Check], batch: int = 64) -> float:
    """Share of checks whose object tokens are all the greedy next tokens."""
    import torch
    if not checks:
        return float("nan")
    hits = 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(checks), batch):
            rows = []
            for c in checks[i:i + batch]:
                head = tokenizer(c.prefix)["input_ids"]
                obj = tokenizer(c.obj)["input_ids"]
                rows.append((head + obj, len(head), len(obj)))
            ids, attn = _padded([r for r, _, _ in rows], tokenizer.pad_token_id)
            top = model(input_ids=ids, attention_mask=attn).logits.argmax(-1)
            for j, (r, h, k) in enumerate(rows):
                hits += bool((top[j, h - 1:h - 1 + k] == ids[j, h:h + k]).all())
    model.train()
    return hits / len(checks)


def masked_accuracy(model, tokenizer, checks: list[Check], batch: int = 64) -> float:
    """Share of checks whose masked object tokens are all the top prediction."""
    import torch
    if not checks:
        return float("nan")
    hits = 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(checks), batch):
            rows = []
            for c in checks[i:i + batch]:
                h = tokenizer(c.prefix, add_special_tokens=False)["input_ids"]
                o = tokenizer(" " + c.obj if c.prefix.endswith(" ") else c.obj,
                              add_special_tokens=False)["input_ids"]
                t = tokenizer(c.tail, add_special_tokens=False)["input_ids"]
                rows.append(([tokenizer.cls_token_id] + h, o, t + [tokenizer.sep_token_id]))
            ids, attn = _padded([a + [tokenizer.mask_token_id] * len(o) + t for a, o, t in rows],
                                tokenizer.pad_token_id)
            top = model(input_ids=ids, attention_mask=attn).logits.argmax(-1)
            for j, (a, o, _) in enumerate(rows):
                hits += top[j, len(a):len(a) + len(o)].tolist() == o
    model.train()
    return hits / len(checks)
