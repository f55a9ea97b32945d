"""``--backend openai`` against ``transformers serve`` on 127.0.0.1 (a tiny random Llama built
here, offline): its ``/v1/completions`` ignores ``echo`` and ``logprobs``, so a scoring method
is refused in one line after the start-up probe and before any request of its plan, naming
what the server can run; and it does run that (generation)."""
from __future__ import annotations

import pytest

from factprobe.core.errors import UserError
from factprobe.probes.backends import KINDS, load_backend
from factprobe.probes.backends.openai_http import Client
from factprobe.probes.backends.openai_options import OpenAIConfig
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest
from tests.builders.templates.test_llm_serve import transformers_serve  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow


def test_a_scoring_method_is_refused_before_any_of_its_requests(transformers_serve,  # noqa: F811
                                                                 tmp_path, monkeypatch):
    url, model = transformers_serve
    posts = []
    real_post = Client.post

    def counted(self, path, body):          # the real client, its requests recorded
        posts.append(body)
        return real_post(self, path, body)

    monkeypatch.setattr(Client, "post", counted)
    plan = Plan("zp-lke", [Stage("mc", "score", [
        ScoreRequest("The capital of France is", (" Paris", " Lima"),
                     meta={"fact_id": "f0"})])])
    with pytest.raises(UserError) as exc:
        run_eval(EvalConfig("zp-lke", "d", str(tmp_path / "run"), progress=False),
                 OpenAIConfig(model, base_url=url), plan, {}, {"name": "toy"}, kinds=KINDS)
    message = str(exc.value)
    assert "\n" not in message and message.startswith("zp-lke: ")
    assert "no prompt log-probabilities" in message and "belief-icl" in message
    assert len(posts) == 1 and posts[0]["echo"] is True     # the probe, nothing of the plan
    assert not (tmp_path / "run").exists()
    # what it is said to run, it runs
    backend = load_backend(OpenAIConfig(model, base_url=url))
    assert backend.capabilities == frozenset({"generate"})
    [[g]] = backend.generate([GenerateRequest("The capital of France is", 4)])
    assert isinstance(g.text, str)
