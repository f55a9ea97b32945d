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

    from dataclasses import replace

    from factprobe.probes.planting.causal import parts, run_epochs
    from factprobe.probes.planting.sizes import fit_masked_batch
    from factprobe.probes.planting.model_factory import masked_model, train_tokenizer
    from factprobe.probes.planting.stopping import batches_accuracy, masked_batches, sample_checks
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
    encoded = encode_statements(tokenizer, statements)
    fitted = {} if cfg.batch_size else {"batch_size": fit_masked_batch(len(statements))}
    cfg = replace(cfg, **fitted)
    table = MaskTable(encoded, specials, pad_id)

    def step_batches(epoch: int):
        rng = np.random.default_rng([cfg.seed, epoch])
        target = table.targets(rng)
        order = rng.permutation(len(encoded))
        bs = cfg.batch_size * 16  # short sentences: more of them per step
        for i in range(0, len(order), bs):
            rows = order[i:i + bs]
            count = torch.tensor(max(1, int(target[rows].sum())))
            yield [lambda part=rows[cut]: masked_loss(
                       model, *table.batch(part, target, mask_id), count)
                   for cut in parts(len(rows), cfg.micro_batches)]

    # the checks never change: tokenised and padded once, not every epoch
    checks = masked_batches(tokenizer, sample_checks(cur.taught, forms, cur.formats,
                                                     cfg.check_facts, cfg.seed, masked=True))
    log = run_epochs(model, step_batches, lambda lanes: batches_accuracy(model, checks, lanes),
                     cfg, "plant (masked)")
    return model, tokenizer, {**log, "fitted": fitted}


def masked_loss(model, ids, attn, labels, count):
    """A micro-batch's masked-LM loss: cross-entropy summed over its masked tokens, divided
    by ``count``, the whole batch's masked tokens.

    ``BertForMaskedLM(labels=...)`` computes the same loss, but runs its prediction head (a
    dense layer, a layer norm and the vocabulary projection) at every position to read one in
    eight; here it runs at the masked ones only (the head works position by position, so the
    loss is the same function), which makes a step 1.6x cheaper on the planted shape."""
    import torch
    hidden = model.bert(input_ids=ids, attention_mask=attn)[0]
    where = labels != -100
    logits = model.cls(hidden[where])
    return torch.nn.functional.cross_entropy(logits.float(), labels[where],
                                             reduction="sum") / count


def encode_statements(tokenizer, statements: list[tuple[str, str, str]]
                      ) -> list[tuple[list[int], int, int]]:
    """(ids with [CLS] and [SEP], first object position, end of the object) of each
    (head, object, tail): the three parts tokenised apart, so the object's tokens are known,
    in three batched calls (the same ids as three calls per statement, a fraction of the
    time: the sample has 6,250 statements).

    >>> from factprobe.probes.planting.model_factory import train_tokenizer
    >>> tok = train_tokenizer(["The capital of Peru is Lima."], 60, masked=True)
    >>> [(tok.convert_ids_to_tokens(ids), lo, hi) for ids, lo, hi in
    ...  encode_statements(tok, [("Peru is ", "Lima", "."), ("Peru is ", "", ".")])]
    ... # doctest: +NORMALIZE_WHITESPACE
    [(['[CLS]', 'Peru', 'is', 'Lima', '.', '[SEP]'], 3, 4),
     (['[CLS]', 'Peru', 'is', '.', '[SEP]'], 3, 3)]
    """
    if not statements:
        return []
    heads = [h for h, _, _ in statements]

    def ids(texts):
        return tokenizer(texts, add_special_tokens=False)["input_ids"]
    objects = ids([" " + y if h.endswith(" ") else y for h, y, _ in statements])
    out = []
    for h, o, t, (_, y, _) in zip(ids(heads), objects, ids([t for _, _, t in statements]),
                                  statements):
        o = o if y else []
        out.append(([tokenizer.cls_token_id] + h + o + t + [tokenizer.sep_token_id],
                    1 + len(h), 1 + len(h) + len(o)))
    return out


class MaskTable:
    """The statements' token ids in one padded array, to draw each epoch's masks and build
    its batches with array operations instead of a Python loop over every token.

    The masks are those of the loop they replace, draw for draw: the object's tokens always,
    and each other non-special token when its uniform draw is below 0.05, the draws taken in
    reading order (row by row, left to right) from one call for the epoch.

    >>> import numpy as np
    >>> t = MaskTable([([2, 7, 8, 9, 3], 2, 3), ([2, 5, 3], 1, 1)], {2, 3}, 0)
    >>> t.draws                       # tokens 7, 9 and 5 may be masked
    3
    >>> t.targets(np.random.default_rng(0)).astype(int).tolist()  # draws .64, .27, .04
    [[0, 0, 1, 0, 0], [0, 1, 0, 0, 0]]
    >>> ids, attn, labels = t.batch(np.array([1, 0]), t.targets(np.random.default_rng(0)), 4)
    >>> ids.tolist(), attn.tolist()
    ([[2, 4, 3, 0, 0], [2, 7, 4, 9, 3]], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    >>> labels.tolist()
    [[-100, 5, -100, -100, -100], [-100, -100, 8, -100, -100]]
    """

    def __init__(self, encoded: list[tuple[list[int], int, int]], specials: set[int],
                 pad_id: int):
        self.lengths = np.array([len(ids) for ids, _, _ in encoded], dtype=np.int64)
        width = int(self.lengths.max()) if len(encoded) else 0
        self.ids = np.full((len(encoded), width), pad_id, dtype=np.int64)
        self.obj = np.zeros_like(self.ids, dtype=bool)
        for j, (ids, lo, hi) in enumerate(encoded):
            self.ids[j, :len(ids)] = ids
            self.obj[j, lo:hi] = True
        self.real = np.arange(width)[None, :] < self.lengths[:, None]
        # tokens that take a draw: inside the text, outside the object, not special
        self.free = self.real & ~self.obj & ~np.isin(self.ids, sorted(specials))
        self.draws = int(self.free.sum())

    def targets(self, rng: np.random.Generator) -> np.ndarray:
        """This epoch's masked positions; consumes the draws the per-token loop did (a
        boolean mask's order is row-major: row by row, left to right)."""
        target = self.obj.copy()
        target[self.free] = rng.random(self.draws) < 0.05
        return target

    def batch(self, rows: np.ndarray, target: np.ndarray, mask_id: int):
        """(input_ids, attention_mask, labels) of ``rows``, padded to their longest."""
        import torch
        width = int(self.lengths[rows].max())
        ids = self.ids[rows, :width]
        tgt = target[rows, :width]
        labels = np.where(tgt, ids, -100)
        return (torch.from_numpy(np.where(tgt, mask_id, ids)),
                torch.from_numpy(self.real[rows, :width].astype(np.int64)),
                torch.from_numpy(labels))
