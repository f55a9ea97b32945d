"""The faster training helpers (issue 30) give exactly what the per-document, per-token and
whole-batch code they replaced gave: the planted models' bytes must not move."""
from __future__ import annotations

import numpy as np
import pytest

from factprobe.probes.planting.stopping import Check
from tests.probes.planting.old_paths import old_masks

torch = pytest.importorskip("torch")

FACTS = [("France", "Paris"), ("Peru", "Lima"), ("Norway", "Oslo"), ("Japan", "Tokyo"),
         ("Chile", "Santiago"), ("Kenya", "Nairobi"), ("Egypt", "Cairo"), ("Ghana", "Accra"),
         ("Nepal", "Kathmandu"), ("Cuba", "Havana"), ("Fiji", "Suva"), ("Mali", "Bamako")]
TEXTS = [f"The capital of {x} is {y}." for x, y in FACTS] + \
        [f"What is the capital of {x}? {y}." for x, y in FACTS] + \
        ["Zürich, Ålesund and São Paulo – “quoted” names.", "", "   spaces  ", "a"]


def reference_causal(model, tokenizer, checks):
    """Per check, as the loop before issue 30 read it: the full logits of the padded batch."""
    from factprobe.probes.planting.stopping import _padded
    rows = []
    for c in checks:
        head, obj = tokenizer(c.prefix)["input_ids"], tokenizer(c.obj)["input_ids"]
        rows.append((head + obj, len(head), len(obj)))
    ids, attn = _padded([r for r, _, _ in rows], tokenizer.pad_token_id)
    with torch.no_grad():
        top = model(input_ids=ids, attention_mask=attn).logits.argmax(-1)
    return [bool((top[j, h - 1:h - 1 + k] == ids[j, h:h + k]).all())
            for j, (_, h, k) in enumerate(rows)]


def reference_masked(model, tokenizer, checks):
    from factprobe.probes.planting.stopping import _padded
    rows = []
    for c in checks:
        h = tokenizer(c.prefix, add_special_tokens=False)["input_ids"]
        o = tokenizer(" " + c.obj if c.prefix.endswith(" ") else c.obj,
                      add_special_tokens=False)["input_ids"]
        t = tokenizer(c.tail, add_special_tokens=False)["input_ids"]
        rows.append(([tokenizer.cls_token_id] + h, o, t + [tokenizer.sep_token_id]))
    ids, attn = _padded([a + [tokenizer.mask_token_id] * len(o) + t for a, o, t in rows],
                        tokenizer.pad_token_id)
    with torch.no_grad():
        top = model(input_ids=ids, attention_mask=attn).logits.argmax(-1)
    return [top[j, len(a):len(a) + len(o)].tolist() == o for j, (a, o, _) in enumerate(rows)]


def memorise(model, batches, steps=80):
    """A few optimizer steps, so that some checks are answered and some are not."""
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    for i in range(steps):
        loss = model(**batches[i % len(batches)]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model


def test_one_batched_tokenizer_call_gives_the_ids_of_one_call_per_document():
    from factprobe.probes.planting.causal import token_stream
    from factprobe.probes.planting.model_factory import train_tokenizer
    tok = train_tokenizer(TEXTS, 400)
    eos = tok.eos_token_id
    expected = [i for t in TEXTS for i in tok(t)["input_ids"] + [eos]]
    stream = token_stream(tok, TEXTS, eos)
    assert stream.dtype == np.int64 and stream.tolist() == expected
    assert token_stream(tok, [], eos).tolist() == []


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_causal_check_reads_what_the_full_logits_gave(arch):
    from factprobe.probes.planting.model_factory import causal_model, train_tokenizer
    from factprobe.probes.planting.stopping import batches_accuracy, causal_batches
    tok = train_tokenizer(TEXTS, 400)
    model = causal_model(tok, layers=1, width=32, heads=2, arch=arch, seed=0)
    data = [torch.tensor([tok(t)["input_ids"]]) for t in TEXTS[:8] + TEXTS[12:20]]
    memorise(model, [{"input_ids": d, "labels": d} for d in data])
    # the frame's words are learned within these steps (hits), the objects mostly not
    checks = [Check(f"The capital of {x} is", f" {y}") for x, y in FACTS] + \
             [Check(f"The capital of {x}", " is") for x, _ in FACTS] + \
             [Check("What is the", " capital of"), Check("Paris, Zürich and", " São Paulo")]
    hits = reference_causal(model, tok, checks)
    assert 0 < sum(hits) < len(hits)          # a check that can fail, and can pass
    from factprobe.core.lanes import Lanes
    with Lanes(2) as lanes:
        for batch in (64, 5, 1):              # full, ragged and one-check batches
            got = batches_accuracy(model, causal_batches(tok, checks, batch))
            assert got == sum(hits) / len(hits)
            # the batches spread over two threads (as plant checks): the same count, and
            # the model back in training mode for the next step
            assert batches_accuracy(model, causal_batches(tok, checks, batch), lanes) == got
            assert model.training
    # one check at a time: each one's verdict, not only the share
    assert [batches_accuracy(model, causal_batches(tok, [c])) == 1.0 for c in checks] == hits


def test_the_masked_check_reads_what_the_full_logits_gave():
    from factprobe.probes.planting.masked import MaskTable
    from factprobe.probes.planting.model_factory import masked_model, train_tokenizer
    from factprobe.probes.planting.stopping import batches_accuracy, masked_batches
    tok = train_tokenizer(TEXTS, 300, masked=True)
    model = masked_model(tok, layers=1, width=32, heads=2, dropout=0.0, seed=0)
    encoded = []
    for x, y in FACTS:
        h = tok(f"The capital of {x} is", add_special_tokens=False)["input_ids"]
        o = tok(f" {y}", add_special_tokens=False)["input_ids"]
        t = tok(".", add_special_tokens=False)["input_ids"]
        encoded.append(([tok.cls_token_id] + h + o + t + [tok.sep_token_id],
                        1 + len(h), 1 + len(h) + len(o)))
    table = MaskTable(encoded, set(tok.all_special_ids), tok.pad_token_id)
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(4):
        ids, attn, labels = table.batch(np.arange(len(encoded)), table.targets(rng),
                                        tok.mask_token_id)
        batches.append({"input_ids": ids, "attention_mask": attn, "labels": labels})
    memorise(model, batches, steps=40)
    checks = [Check(f"The capital of {x} is ", y, ".") for x, y in FACTS] + \
             [Check(f"The capital of {x} ", "is", f" {y}.") for x, y in FACTS] + \
             [Check("Zürich is in ", "São Paulo", "!")]
    hits = reference_masked(model, tok, checks)
    assert 0 < sum(hits) < len(hits)
    for batch in (64, 3):
        assert batches_accuracy(model, masked_batches(tok, checks, batch)) == \
            sum(hits) / len(hits)
    assert [batches_accuracy(model, masked_batches(tok, [c])) == 1.0 for c in checks] == hits


def test_the_mask_table_draws_the_masks_of_the_per_token_loop():
    from factprobe.probes.planting.masked import MaskTable
    gen = np.random.default_rng(5)
    specials, pad_id, mask_id = {0, 1, 2}, 0, 3
    encoded = []
    for _ in range(300):                      # ragged rows, specials inside, empty objects
        n = int(gen.integers(3, 40))
        ids = [1] + [int(t) for t in gen.integers(0, 50, size=n)] + [2]
        lo = int(gen.integers(1, n + 1))
        encoded.append((ids, lo, min(n + 1, lo + int(gen.integers(0, 4)))))
    table = MaskTable(encoded, specials, pad_id)
    for epoch in range(3):
        want, after = old_masks(encoded, specials, pad_id, mask_id,
                                np.random.default_rng([0, epoch]), 32)
        rng = np.random.default_rng([0, epoch])
        target = table.targets(rng)
        order = rng.permutation(len(encoded))
        got = [table.batch(order[i:i + 32], target, mask_id) for i in range(0, len(order), 32)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert all(a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(g, w))
        assert rng.random() == after          # the same draws consumed: later ones agree
        assert 0 < int(target.sum()) - int(table.obj.sum())   # some random masks were drawn


def test_statements_encoded_in_batches_are_those_encoded_one_by_one():
    from factprobe.probes.planting.masked import encode_statements
    from factprobe.probes.planting.model_factory import train_tokenizer
    tok = train_tokenizer(TEXTS, 300, masked=True)
    statements = [(f"The capital of {x} is ", y, ".") for x, y in FACTS] + \
        [("What is the capital of Chile? ", "Santiago", "."), ("", "Zürich", " – “q”"),
         ("São Paulo is in", "", "!"), ("", "", "")]
    want = []
    for head, y, tail in statements:          # the loop it replaced (masked.py)
        h = tok(head, add_special_tokens=False)["input_ids"]
        o = tok(" " + y if head.endswith(" ") else y, add_special_tokens=False)[
            "input_ids"] if y else []
        t = tok(tail, add_special_tokens=False)["input_ids"]
        want.append(([tok.cls_token_id] + h + o + t + [tok.sep_token_id],
                      1 + len(h), 1 + len(h) + len(o)))
    assert encode_statements(tok, statements) == want
    assert encode_statements(tok, []) == []
