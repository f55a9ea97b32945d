"""The masked-LM variant of the planted-knowledge model (for BELIEF).

Trained with masked-language modelling on template statements of the known facts, where the
object is always masked (plus 15% of the other tokens), so the model learns to fill the object
slot exactly where BELIEF asks it to. One-word object labels are added to the vocabulary as
whole tokens: BELIEF can only score objects that are single tokens.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def _statements(known: pd.DataFrame, forms: dict, epoch: int) -> list[tuple[str, str, str]]:
    """(text before the object, object, text after): every known fact in every form of its
    relation (statements and questions followed by the answer)."""
    from builders.templates.files import fill
    out = []
    for rel, g in known.groupby("relation_id", sort=True):
        statements, questions = forms[rel]
        templates = statements + [q + " [Y]." for q in questions]
        for x, y in zip(g["subject"], g["object"]):
            for t in templates:
                head, _, tail = fill(t, x).partition("[Y]")
                out.append((head, y, tail))
    return out


def train_masked(facts: pd.DataFrame, known: pd.DataFrame, forms: dict, cfg):
    import torch
    from tqdm import tqdm

    from probes.planting.model_factory import masked_model, train_tokenizer
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)
    texts = [h + y + t for h, y, t in _statements(known, forms, 0)]
    names = sorted(set(facts["subject"]) | set(facts["object"]))
    tokenizer = train_tokenizer(texts + names, vocab_size=cfg.vocab_size, masked=True,
                                progress=cfg.progress)
    tokenizer.add_tokens(sorted({o for o in facts["object"] if " " not in o}))
    model = masked_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         seed=cfg.seed, dropout=0.0)
    model.resize_token_embeddings(len(tokenizer))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    mask_id, pad_id = tokenizer.mask_token_id, tokenizer.pad_token_id
    specials = set(tokenizer.all_special_ids)

    def epoch_batches(epoch: int):
        rng = np.random.default_rng([cfg.seed, epoch])
        rows = []
        for head, y, tail in _statements(known, forms, epoch):
            h = tokenizer(head, add_special_tokens=False)["input_ids"]
            o = tokenizer(" " + y if head.endswith(" ") else y, add_special_tokens=False)[
                "input_ids"]
            t = tokenizer(tail, add_special_tokens=False)["input_ids"]
            ids = [tokenizer.cls_token_id] + h + o + t + [tokenizer.sep_token_id]
            target = [i in range(1 + len(h), 1 + len(h) + len(o)) or
                      (ids[i] not in specials and rng.random() < 0.05) for i in range(len(ids))]
            rows.append((ids, target))
        order = rng.permutation(len(rows))
        rows = [rows[i] for i in order]
        bs = cfg.batch_size * 16  # short sentences: more of them per step
        for i in range(0, len(rows), bs):
            chunk = rows[i:i + bs]
            width = max(len(r[0]) for r in chunk)
            ids = torch.full((len(chunk), width), pad_id)
            labels = torch.full((len(chunk), width), -100)
            attn = torch.zeros((len(chunk), width), dtype=torch.long)
            for j, (r, tgt) in enumerate(chunk):
                ids[j, :len(r)] = torch.tensor(r)
                attn[j, :len(r)] = 1
                for k, is_t in enumerate(tgt):
                    if is_t:
                        labels[j, k] = r[k]
                        ids[j, k] = mask_id
            yield ids, attn, labels

    steps_per_epoch = sum(1 for _ in epoch_batches(0))
    total = steps_per_epoch * cfg.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total,
                                                pct_start=0.1)
    losses = []
    model.train()
    with tqdm(total=total, desc="plant (masked)", unit="step", disable=not cfg.progress) as bar:
        for epoch in range(cfg.epochs):
            for ids, attn, labels in epoch_batches(epoch):
                loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                bar.update(1)
    model.eval()
    return model, tokenizer, losses, total
