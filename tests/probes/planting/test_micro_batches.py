"""A training step's gradient as the sum of its micro-batches' (causal.Gradients): the same
gradient as the whole batch's loss, however unevenly the batch is cut, on one thread or two."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def _max_diff(a, b) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


def _grads_of_whole(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return [p.grad.clone() for p in model.parameters()]


def _grads_of_parts(model, micro, workers):
    from factprobe.probes.planting.causal import Gradients
    with Gradients(model, workers) as grads:
        loss = grads(micro)
    return loss, [p.grad.clone() for p in model.parameters()]


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        num_hidden_layers=1, hidden_size=32, intermediate_size=64, num_attention_heads=2,
        num_key_value_heads=1, vocab_size=97, max_position_embeddings=64))


@pytest.mark.parametrize("rows,k", [(3, 2), (4, 2), (5, 3), (1, 2)])
def test_causal_micro_batches_give_the_whole_batch_gradient(rows, k):
    from factprobe.probes.planting.causal import parts
    model = _llama()
    block = 16
    batch = torch.randint(0, 97, (rows, block), generator=torch.Generator().manual_seed(rows))
    whole = model(input_ids=batch, labels=batch)
    expect = _grads_of_whole(model, whole.loss)
    count = torch.tensor(rows * (block - 1))
    micro = [lambda part=batch[cut]: model(input_ids=part, labels=part,
                                           num_items_in_batch=count).loss
             for cut in parts(rows, k)]
    for workers in (1, 2):
        loss, got = _grads_of_parts(model, micro, workers)
        assert loss == pytest.approx(float(whole.loss.detach()), rel=1e-6)
        assert _max_diff(got, expect) < 1e-6
    # two workers add the very same parts in the same order: the same bits as one
    assert all(torch.equal(a, b) for a, b in zip(_grads_of_parts(model, micro, 1)[1],
                                                  _grads_of_parts(model, micro, 2)[1]))


def test_a_mean_of_part_means_would_fail_this_check():
    """The weighting matters: with an uneven cut (2 + 1 rows), averaging the parts' own
    mean losses is another gradient, and the comparison above sees it."""
    from factprobe.probes.planting.causal import parts
    model = _llama()
    batch = torch.randint(0, 97, (3, 16), generator=torch.Generator().manual_seed(3))
    expect = _grads_of_whole(model, model(input_ids=batch, labels=batch).loss)
    micro = [lambda part=batch[cut]: model(input_ids=part, labels=part).loss / 2
             for cut in parts(3, 2)]
    assert _max_diff(_grads_of_parts(model, micro, 1)[1], expect) > 1e-4


def test_masked_loss_at_the_masked_positions_only_is_bert_s_own_loss():
    from transformers import BertConfig, BertForMaskedLM

    from factprobe.probes.planting.causal import parts
    from factprobe.probes.planting.masked import masked_loss
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(
        vocab_size=120, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 120, (7, 12), generator=g)
    attn = torch.ones_like(ids)
    attn[3, 8:] = 0                                   # a padded row
    labels = torch.full_like(ids, -100)
    where = (torch.rand(ids.shape, generator=g) < 0.3) & attn.bool()
    where[0, 1] = True
    labels[where] = ids[where]
    whole = model(input_ids=ids, attention_mask=attn, labels=labels)
    expect = _grads_of_whole(model, whole.loss)
    count = torch.tensor(int(where.sum()))
    micro = [lambda cut=cut: masked_loss(model, ids[cut], attn[cut], labels[cut], count)
             for cut in parts(7, 2)]
    for workers in (1, 2):
        loss, got = _grads_of_parts(model, micro, workers)
        assert loss == pytest.approx(float(whole.loss.detach()), rel=1e-5)
        assert _max_diff(got, expect) < 1e-6


def test_parts_cover_the_batch_in_order():
    from factprobe.probes.planting.causal import parts
    for n in range(1, 12):
        for k in range(1, 5):
            cuts = parts(n, k)
            assert [i for c in cuts for i in range(n)[c]] == list(range(n))
            assert all(c.stop > c.start for c in cuts) and len(cuts) == min(n, k)
