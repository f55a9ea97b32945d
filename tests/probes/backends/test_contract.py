"""Every kind (the Hugging Face backends and the fake one) meets the contract of probes/backends/base.py, each capability the
kinds table declares works, and a plan that needs what a kind lacks is refused before loading."""
from __future__ import annotations

import json
import math

import pytest

from factprobe.core.errors import UserError
from factprobe.probes.backends import KINDS, BackendConfig, load_backend
from factprobe.probes.backends.base import CALLS, Backend, BackendKind, Usage
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import (
    CAPABILITIES,
    MASK,
    GenerateRequest,
    MaskRequest,
    ScoreRequest,
)

# The Hugging Face kinds load the suite's tiny models; any other kind says how to make one it
# can load: its options module's ``example_config(folder)`` (docs/extending.md), so a kind
# added in its two files is checked here without an edit to this test.
MODEL = {"hf-causal": "tiny_causal_dir", "hf-masked": "tiny_masked_dir"}
# Kinds that need a running server: a fixture that serves a real tiny model and gives the config
SERVED = {"openai": "openai_config"}


@pytest.fixture
def openai_config(tiny_llama_dir):
    from factprobe.probes.backends.openai_options import OpenAIConfig
    from tests.completions_server import CompletionsServer
    srv = CompletionsServer(tiny_llama_dir)
    yield OpenAIConfig("tiny", base_url=srv.url)
    srv.close()


def _config(request, kind: str):
    if kind in MODEL:
        return BackendConfig(str(request.getfixturevalue(MODEL[kind])), kind=kind)
    if kind in SERVED:
        return request.getfixturevalue(SERVED[kind])
    from factprobe.probes.backends import options_module
    example = getattr(options_module(KINDS[kind]), "example_config", None)
    assert example is not None, (f"backend kind {kind!r}: its module needs "
                                 f"example_config(folder) -> a config the contract test can load")
    return example(request.getfixturevalue("tmp_path"))


def _use(backend, capability: str) -> None:
    """Call what ``capability`` stands for and check the answer's shape."""
    if capability == "score":
        [[s]] = backend.score([ScoreRequest("France", (" Paris",))])
        assert s.token_ids and math.isfinite(s.logprob) and s.logprob < 0
    elif capability == "token_ids":
        [[s]] = backend.score([ScoreRequest("France", (), continuation_ids=((5, 6),))])
        assert s.token_ids == [5, 6] and len(s.token_logprobs) == 2
    elif capability == "generate":
        [[g]] = backend.generate([GenerateRequest("France", 3)])
        assert len(g.token_ids) <= 3 and len(g.token_logprobs) == len(g.token_ids)
    elif capability == "watch":
        [[g]] = backend.generate([GenerateRequest("France", 2, watch=(5, 6))])
        assert len(g.watched_logprobs) == 2 and all(x < 0 for x in g.watched_logprobs)
    elif capability == "fill_mask":
        [m] = backend.fill_mask([MaskRequest(f"The capital of France is {MASK}.", top_k=3,
                                             candidates=("Paris",))])
        assert len(m.top_tokens) == 3 and len(m.candidate_probs) == 1
    elif capability == "mask_each":
        # the pseudo-log-likelihood terms of "Paris" after "France " (probes/requests.py)
        [m] = backend.fill_mask([MaskRequest("France Paris", mask_each_from=7)])
        assert m.token_ids and len(m.token_logprobs) == len(m.token_ids)
        assert all(math.isfinite(x) and x < 0 for x in m.token_logprobs)
        assert not m.top_tokens
    else:
        raise AssertionError(f"no check for capability {capability!r}")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_meets_the_contract(request, kind):
    declared = KINDS[kind].capabilities
    assert declared <= CAPABILITIES
    backend = load_backend(_config(request, kind))
    assert isinstance(backend, Backend)
    assert backend.capabilities == declared                   # the table says it before loading
    before = backend.usage()
    for capability in sorted(declared):
        assert isinstance(backend, CALLS[capability])
        _use(backend, capability)
    after = backend.usage()
    assert isinstance(after, Usage) and after.computed > before.computed >= 0
    described = backend.describe()
    assert set(described) == {"backend", "model"}
    assert "kind" not in described["backend"]                 # run.json keeps its old keys
    assert set(described["model"]) == {"name", "type", "revision", "parameters", "device",
                                       "dtype"}
    json.dumps(backend.identity())                  # checkpoints store it: plain JSON
    if kind == "fake":
        assert described["model"]["type"] == "fake" and described["model"]["parameters"] == 0
        return
    if kind in SERVED:           # a server does not say how large its model is
        assert described["model"]["parameters"] is None
        return
    assert described["model"]["parameters"] > 0
    if kind in MODEL:
        assert backend.identity()["masked"] is (kind == "hf-masked")


def test_causal_backend_counts_request_tokens(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir)))
    ctx = backend.encode("France")
    assert backend.request_tokens(GenerateRequest("France", 4)) == len(ctx) + 4
    assert backend.request_tokens(ScoreRequest("France", (), continuation_ids=((1, 2, 3),))) \
        == len(ctx) + 3
    _, cont = backend.encode_pair("France", " Paris")
    assert backend.request_tokens(ScoreRequest("France", (" Paris",))) == len(ctx) + len(cont)


def test_a_plan_says_what_it_needs():
    plan = Plan("m", [Stage("a", "generate", [GenerateRequest("x", 2, watch=(1,))]),
                      Stage("b", "score", build=lambda outputs: [], needs=frozenset({"token_ids"}))])
    assert plan.needs() == {"generate", "watch", "score", "token_ids"}
    assert Plan("m", [Stage("c", "fill_mask", [MaskRequest(f"x {MASK}")])]).needs() == \
        {"fill_mask"}
    assert Plan("m", [Stage("c", "fill_mask", [MaskRequest("x", mask_each_from=0)])]).needs() \
        == {"fill_mask", "mask_each"}


def test_an_unsuitable_kind_is_refused_before_loading(tmp_path, capsys):
    plan = Plan("belief", [Stage("prompts", "fill_mask", [MaskRequest(f"x {MASK}")])])
    # the model does not exist: the refusal must come before any attempt to load it
    cfg = BackendConfig(str(tmp_path / "no-such-model"), kind="hf-causal")
    with pytest.raises(UserError) as exc:
        run_eval(EvalConfig("belief", "d", str(tmp_path / "out")), cfg, plan, {}, {},
                 kinds=KINDS)
    assert str(exc.value) == ("belief: this method needs a backend that can fill_mask; backend "
                              "kind 'hf-causal' offers generate, score, token_ids, watch")
    with pytest.raises(UserError, match="backend kind 'nope' is not known; known kinds: "
                                        "fake, hf-causal, hf-masked"):
        run_eval(EvalConfig("belief", "d", str(tmp_path / "out")),
                 BackendConfig("m", kind="nope"), plan, {}, {}, kinds=KINDS)
    assert not (tmp_path / "out").exists()


def test_a_built_stage_that_needs_more_is_refused(tiny_causal_dir, tmp_path):
    """A ``build`` stage's requests are checked against the loaded backend once they exist."""
    def load(config):
        backend = KINDS["hf-causal"].load(config)
        backend.capabilities = frozenset({"score"})   # a backend that cannot take token ids
        return backend
    kinds = {"score-only": BackendKind(frozenset({"score"}), load)}
    plan = Plan("x", [Stage("a", "score", [ScoreRequest("France", (" Paris",))]),
                      Stage("b", "score", build=lambda outputs: [
                          ScoreRequest("France", (), continuation_ids=((5,),))])])
    with pytest.raises(UserError, match="^x: this method needs a backend that can token_ids; "
                                        "backend HFCausal offers score$"):
        run_eval(EvalConfig("x", "d", str(tmp_path / "out"), progress=False),
                 BackendConfig(str(tiny_causal_dir), kind="score-only"), plan, {}, {},
                 kinds=kinds)
    assert not (tmp_path / "out").exists()
