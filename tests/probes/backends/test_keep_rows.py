"""A model whose forward slices ``logits_to_keep`` the transformers 5.17 way (one table of
positions for every row) is scored and decoded through full logits, and gives the same numbers. With
transformers 5.17 on a GPU, handing such a forward a per-row table returned the logits of the
wrong positions: ZP-LKE scores off by up to 6.6 nats, and generation stopped on a device assert."""
from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer, GPT2LMHeadModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.backends.hf_causal import HFCausal, keeps_per_row
from factprobe.probes.requests import GenerateRequest
from tests.probes.backends.test_packing import _check, _requests


class OldSlicingGPT2(GPT2LMHeadModel):
    """GPT-2 with the head slicing of transformers 5.17's causal LMs."""

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None,
                position_ids=None, use_cache=None, logits_to_keep=0, **kwargs):
        out = self.transformer(input_ids=input_ids, past_key_values=past_key_values,
                               attention_mask=attention_mask, position_ids=position_ids,
                               use_cache=use_cache)
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) \
            else logits_to_keep
        logits = self.lm_head(out.last_hidden_state[:, slice_indices, :])
        return CausalLMOutputWithPast(logits=logits, past_key_values=out.past_key_values)


@pytest.fixture(autouse=True)
def _short_rows(monkeypatch):
    """Rows of 16 tokens, so every batch packs several rows: with one row the two slicings
    agree and nothing would be tested."""
    from factprobe.probes.backends import hf_causal
    monkeypatch.setattr(hf_causal, "ROW_TOKENS", 16)


def _backends(folder):
    tok = AutoTokenizer.from_pretrained(folder)
    new = GPT2LMHeadModel.from_pretrained(folder).eval()
    old = OldSlicingGPT2.from_pretrained(folder).eval()
    cfg = BackendConfig(str(folder), batch_size=2)
    return HFCausal(new, tok, "cpu", cfg), HFCausal(old, tok, "cpu", cfg)


# importing torch.compile's machinery warns of torch.jit's deprecation; nothing of ours
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_slicing_is_read_from_the_forward(tiny_causal_dir):
    from transformers import modeling_utils
    new, old = _backends(tiny_causal_dir)
    # the installed transformers' GPT-2 slices per row exactly when the library can
    honours = hasattr(modeling_utils, "slice_logits_to_keep")
    assert keeps_per_row(new.model) == new._keep_rows == honours
    assert not keeps_per_row(old.model) and not old._keep_rows
    assert old._keep_arg              # the int form (last position only) still goes through
    # a torch.compile'd model is read through its wrapper (compiling is lazy: nothing runs)
    assert keeps_per_row(torch.compile(new.model)) == honours
    assert not keeps_per_row(torch.compile(old.model))


@pytest.mark.parametrize("path", ["mask", "slots"])
def test_old_slicing_scores_through_full_logits(tiny_causal_dir, path):
    _, old = _backends(tiny_causal_dir)
    if path == "slots":               # the GPU path, run on the CPU
        old._kind = "cuda"
        old._put = lambda a: torch.from_numpy(a)
    _check(old, _requests())


def test_per_row_selection_would_be_wrong_on_old_slicing(tiny_causal_dir):
    """The check above can fail: forcing the per-row table onto the old forward breaks."""
    _, old = _backends(tiny_causal_dir)
    old._keep_rows = True
    old._kind = "cuda"
    old._put = lambda a: torch.from_numpy(a)
    with pytest.raises((AssertionError, IndexError, RuntimeError)):
        _check(old, _requests())


def test_old_slicing_generates_as_the_current_model(tiny_causal_dir):
    new, old = _backends(tiny_causal_dir)
    reqs = [GenerateRequest(p, max_new_tokens=6, group="g")
            for p in ("Max Planck was born in", "Peru", "The capital of")]
    reqs += [GenerateRequest("Peru", max_new_tokens=5, samples=3, seed=7, group="g")]
    want, got = new.generate(reqs), old.generate(reqs)
    assert [[g.token_ids for g in r] for r in got] == [[g.token_ids for g in r] for r in want]
    for r_got, r_want in zip(got, want):
        for a, b in zip(r_got, r_want):
            assert a.token_logprobs == pytest.approx(b.token_logprobs, abs=1e-4)
