"""The masked-LM variant of the planted-knowledge model (for BELIEF).

Trained with masked-language modelling on template statements of the taught facts (planted
ones and the decoys of held-out ones, curriculum.py), where the object is always masked (plus
5% of the other tokens), so the model learns to fill the object slot exactly where BELIEF
asks it to. Held-out subjects are taught in the same sentences as the subjects of mention
facts (a never-probed relation, a made-up object), as often as planted subjects. One-word object labels are added to the vocabulary as
whole tokens: BELIEF can only score objects that are single tokens.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def _statements(cur, forms: dict) -> list[tuple[str, str, str]]:
    """(text before the object, object, text after): every taught fact (planted, decoy and
    mention, curriculum.py) in every taught form of its relation (statements, and questions
    followed by the answer). A held-out subject is thereby in as many sentences, of the same
    shapes, as a planted one, its made-up mention object masked as a planted object is."""
    from factprobe.builders.templates.files import fill
    from factprobe.probes.planting.curriculum import mention_forms
    forms = mention_forms(forms)
    out = []
    for rel, g in cur.taught.groupby("relation_id", sort=True):
        statements, questions = forms[rel]
        templates = (statements if "statement" in cur.formats else []) + \
                    ([q + " [Y]." for q in questions] if "question" in cur.formats else [])
        for x, y in zip(g["subject"], g["object"]):
            for t in templates:
                head, _, tail = fill(t, x).partition("[Y]")
                out.append((head, y, tail))
    return out


def train_masked(facts: pd.DataFrame, cur, forms: dict, cfg):
    import torch

    from factprobe.probes.planting.causal import run_epochs
    from factprobe.probes.planting.model_factory import masked_model, train_tokenizer
    from factprobe.probes.planting.stopping import masked_accuracy, sample_checks
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True)
    statements = _statements(cur, forms)
    if not any(y for _, y, _ in statements):
        from factprobe.core.errors import UserError
        raise UserError("--masked teaches statements and questions; --hold-out-formats "
                        "holds out both, so nothing would be taught")
    texts = [h + y + t for h, y, t in statements]
    names = sorted(set(facts["subject"]) | set(facts["object"]) | set(cur.taught["subject"]))
    tokenizer = train_tokenizer(texts + names, vocab_size=cfg.vocab_size, masked=True,
                                progress=cfg.progress)
    tokenizer.add_tokens(sorted({o for o in set(facts["object"]) | set(cur.taught["object"])
                                 if " " not in o}))
    model = masked_model(tokenizer, layers=cfg.layers, width=cfg.width, heads=cfg.heads,
                         seed=cfg.seed, dropout=0.0)
    model.resize_token_embeddings(len(tokenizer))
    mask_id, pad_id = tokenizer.mask_token_id, tokenizer.pad_token_id
    specials = set(tokenizer.all_special_ids)
    encoded = []
    for head, y, tail in statements:
        h = tokenizer(head, add_special_tokens=False)["input_ids"]
        o = tokenizer(" " + y if head.endswith(" ") else y, add_special_tokens=False)[
            "input_ids"] if y else []
        t = tokenizer(tail, add_special_tokens=False)["input_ids"]
        encoded.append(([tokenizer.cls_token_id] + h + o + t + [tokenizer.sep_token_id],
                        1 + len(h), 1 + len(h) + len(o)))

    def step_batches(epoch: int):
        rng = np.random.default_rng([cfg.seed, epoch])
        rows = []
        for ids, lo, hi in encoded:
            target = [lo <= i < hi or (ids[i] not in specials and rng.random() < 0.05)
                      for i in range(len(ids))]
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
            yield lambda ids=ids, attn=attn, labels=labels: model(
                input_ids=ids, attention_mask=attn, labels=labels).loss

    checks = sample_checks(cur.taught, forms, cur.formats, cfg.check_facts, cfg.seed,
                           masked=True)
    log = run_epochs(model, step_batches, lambda: masked_accuracy(model, tokenizer, checks),
                     cfg, "plant (masked)")
    return model, tokenizer, log
