"""The causal backend's numbers equal a plain full-sequence computation."""
from __future__ import annotations

import pytest
import torch

from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.requests import GenerateRequest, ScoreRequest

PREFIX = "Albert Einstein 1879, Niels Bohr 1885, Marie Curie 1867, "
FACTS = [("Max Planck", ["1858", "1879", "1901"]), ("Niels Bohr", ["1885", "2"]),
         ("Peru", ["Lima", " Lima", "Tokyo x y z"])]


def full_sequence_logprob(backend, context, continuation):
    ctx, cont = backend.encode_pair(context, continuation)
    ids = torch.tensor([ctx + cont])
    with torch.no_grad():
        lp = torch.log_softmax(backend.model(ids).logits.float(), -1)[0]
    return [float(lp[len(ctx) - 1 + j, t]) for j, t in enumerate(cont)]


@pytest.mark.parametrize("fixture", ["tiny_causal_dir", "tiny_llama_dir"])
@pytest.mark.parametrize("batch_size,prefix_cache", [(1, True), (2, True), (8, False)])
def test_score_equals_full_sequence(request, fixture, batch_size, prefix_cache):
    folder = request.getfixturevalue(fixture)
    backend = load_backend(BackendConfig(str(folder), batch_size=batch_size,
                                         prefix_cache=prefix_cache))
    reqs = [ScoreRequest(PREFIX + subj, tuple(" " + o for o in opts), group="g")
            for subj, opts in FACTS]
    got = backend.score(reqs)
    for req, scored in zip(reqs, got):
        for cont, s in zip(req.continuations, scored):
            want = full_sequence_logprob(backend, req.context, cont)
            assert len(s.token_logprobs) == len(want)
            assert max(abs(a - b) for a, b in zip(s.token_logprobs, want)) < 1e-4
    if prefix_cache:
        assert backend.tokens_computed < backend.tokens_full / 2


def test_trailing_space_moves_to_the_continuation(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir)))
    ctx, cont = backend.encode_pair("Peru ", "Lima")
    assert ctx == backend.encode("Peru") and cont == backend.encode("Peru Lima")[len(ctx):]


def test_greedy_matches_transformers_generate(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir), batch_size=2))
    prompts = [PREFIX + "Max Planck", PREFIX + "Peru", "The capital of"]
    got = backend.generate([GenerateRequest(p, max_new_tokens=6, group="g") for p in prompts])
    for prompt, gen in zip(prompts, got):
        ids = torch.tensor([backend.encode(prompt)])
        with torch.no_grad():
            ref = backend.model.generate(ids, attention_mask=torch.ones_like(ids),
                                         max_new_tokens=6, do_sample=False,
                                         pad_token_id=backend.tok.pad_token_id)
        new = ref[0, ids.shape[1]:].tolist()
        if backend.eos_id in new:
            new = new[:new.index(backend.eos_id)]
        assert gen[0].token_ids == new
        assert len(gen[0].token_logprobs) == len(new)


def test_samples_do_not_depend_on_batching(tiny_causal_dir):
    reqs = [GenerateRequest(PREFIX + s, max_new_tokens=4, samples=5, seed=3, group="g")
            for s in ("Max Planck", "Peru")]
    a = load_backend(BackendConfig(str(tiny_causal_dir), batch_size=1)).generate(reqs)
    b = load_backend(BackendConfig(str(tiny_causal_dir), batch_size=16)).generate(reqs[::-1])
    assert [[g.token_ids for g in r] for r in a] == [[g.token_ids for g in r] for r in b[::-1]]
    assert len({tuple(g.token_ids) for g in a[0]}) > 1   # samples differ from each other


def test_stop_strings_cut_text(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir)))
    free = backend.generate([GenerateRequest("France Paris", max_new_tokens=12)])[0][0]
    # the seeded tiny model writes 12 tokens of text (no EOS): a stop string always exists
    assert len(free.token_ids) == 12 and len(free.text) >= 3
    stop = free.text[1:3]
    cut = backend.generate([GenerateRequest("France Paris", max_new_tokens=12,
                                            stop=(stop,))])[0][0]
    # greedy, so the same text up to the stop string's first occurrence, and nothing after
    assert cut.text == free.text[:free.text.index(stop)]
    assert cut.token_ids == free.token_ids[:len(cut.token_ids)]
    assert len(cut.token_ids) < len(free.token_ids)          # it stopped generating early


def test_watched_tokens_are_read_per_step(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir)))
    anchor = backend.encode(" Paris")
    gen = backend.generate([GenerateRequest("France", max_new_tokens=3, watch=tuple(anchor))])
    assert len(gen[0][0].watched_logprobs) == len(anchor)
    # step 0 reads the first anchor token under the prompt: that is a teacher-forced probability
    tf = backend.token_probs([("France", anchor)])[0]
    assert abs(torch.tensor(gen[0][0].watched_logprobs[0]).exp().item() - tf[0]) < 1e-5


def test_unknown_model_is_a_user_error(tmp_path):
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="cannot load model"):
        load_backend(BackendConfig(str(tmp_path / "nope")))


def test_masked_model_refused_for_causal_methods(tiny_masked_dir):
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="not a causal"):
        load_backend(BackendConfig(str(tiny_masked_dir)))


def test_tokens_computed_near_the_shared_prefix_bound(tiny_causal_dir):
    """50 examples, 100 choices: tokens computed <= 1.2 x (the relation's example prefix once
    + each fact's subject and continuations)."""
    import pandas as pd

    from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
    rows = []
    for i in range(60):
        split = "train" if i < 52 else "test"
        rows.append({"fact_id": f"f{i}", "relation_id": "r", "subject_id": f"s{i}",
                     "object_id": f"o{i}", "subject": f"Person {i}", "object": f"{1800 + i}",
                     "answers": [f"{1800 + i}"], "split": split,
                     "choices": [f"{1800 + k}" for k in range(100)] if split == "test" else []})
    p = plan(pd.DataFrame(rows), ZPLKEConfig(n_examples=(50,), response_tokens=0))
    reqs = p.stages[0].requests
    backend = load_backend(BackendConfig(str(tiny_causal_dir), batch_size=8))
    backend.score(reqs)
    examples = reqs[0].context.rsplit(", ", 1)[0] + ","
    bound = len(backend.encode(examples))
    for r in reqs:
        subject = r.context.rsplit(", ", 1)[1]
        bound += len(backend.encode(" " + subject))
        bound += sum(len(backend.encode_pair(r.context, c)[1]) for c in r.continuations)
    assert backend.tokens_computed <= 1.2 * bound
    assert backend.tokens_full > 20 * backend.tokens_computed
