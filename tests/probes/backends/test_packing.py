"""Packed option tries give the same numbers as a full-sequence computation, whichever way the
logits are selected (boolean mask on CPU, padded positions on a GPU, no selection at all)."""
from __future__ import annotations

import pytest
import torch

from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.requests import ScoreRequest
from tests.probes.backends.test_hf_causal import PREFIX, full_sequence_logprob

OPTIONS = [" 1858", " 1879", " 1901", " Lima", " Lima Peru", " Li", " Tokyo x y z", " 18",
           " Tokyo x y", " Tokyo Lima"]


def _requests():
    subjects = ["Max Planck", "Niels Bohr", "Peru", "Marie Curie", "Albert Einstein"]
    reqs = [ScoreRequest(PREFIX + s, tuple(OPTIONS), group="g") for s in subjects]
    reqs.append(ScoreRequest("France", (" Paris", " Paris!"), group="other"))
    reqs.append(ScoreRequest("", (" Paris",), group="other"))
    return reqs


def _check(backend, reqs):
    got = backend.score(reqs)
    worst = 0.0
    for req, scored in zip(reqs, got):
        assert len(scored) == len(req.continuations)
        for cont, s in zip(req.continuations, scored):
            want = full_sequence_logprob(backend, req.context, cont)
            assert len(s.token_logprobs) == len(want)
            worst = max([worst] + [abs(a - b) for a, b in zip(s.token_logprobs, want)])
    assert worst < 1e-4


@pytest.mark.parametrize("fixture", ["tiny_causal_dir", "tiny_llama_dir"])
@pytest.mark.parametrize("mode", ["mask", "slots", "no_keep_arg"])
def test_selection_modes_equal_full_sequence(request, fixture, mode):
    backend = load_backend(BackendConfig(str(request.getfixturevalue(fixture)), batch_size=1))
    if mode == "slots":      # the GPU path, run on the CPU
        backend._kind = "cuda"
        backend._put = lambda a: torch.from_numpy(a)
    elif mode == "no_keep_arg":
        backend._keep_arg = False
    _check(backend, _requests())


def test_option_tries_share_tokens(tiny_causal_dir):
    from factprobe.probes.backends.hf_causal import common_prefix_len
    from factprobe.probes.backends.packing import build_segment
    backend = load_backend(BackendConfig(str(tiny_causal_dir)))
    reqs = _requests()[:5]
    backend.score(reqs)
    enc = [backend.encode_pairs(r.context, r.continuations) for r in reqs]
    p = common_prefix_len([c for c, _ in enc])
    shared = [build_segment(0, c[p:], conts) for c, conts in enc]
    unshared = [build_segment(0, c[p:], conts, share=False) for c, conts in enc]
    assert backend.tokens_computed == p + sum(len(s) for s in shared)
    assert sum(len(s) for s in shared) < sum(len(s) for s in unshared)
    assert backend.tokens_computed < backend.tokens_full / 5


def test_tail_split_is_checked_and_switched_off_when_wrong(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir)))
    want = [backend._pairs.full_split(PREFIX + "Peru", backend.encode(PREFIX + "Peru"), [o])[0]
            for o in OPTIONS]

    class Wrong:                                    # a splitter that gets it wrong
        def split_many(self, contexts, ctxs, cuts, texts):
            return [[[1] for _ in t] for t in texts]

    backend._pairs.tail = Wrong()
    ctx, conts = backend.encode_pairs(PREFIX + "Peru", OPTIONS)
    assert conts == want and backend._pairs.tail is None
