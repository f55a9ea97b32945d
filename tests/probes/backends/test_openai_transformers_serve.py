"""``--backend openai`` against ``transformers serve`` on 127.0.0.1, offline, with a tiny random
Llama built here and put in a Hugging Face cache (``HF_HOME``) as a downloaded model is: its
``/v1/models`` lists the cache's models (and answers HTTP 500 without a cache), and its
``/v1/completions`` ignores ``echo`` and ``logprobs`` and refuses fields it does not know
(``repeat_penalty``: HTTP 422). So a scoring method is refused in one line after the start-up
probe and before any request of its plan, naming what the server can run; and it does run
that (generation)."""
from __future__ import annotations

import pytest

from factprobe.core.errors import UserError
from factprobe.evaluation import runnable_methods
from factprobe.probes.backends import KINDS, load_backend
from factprobe.probes.backends.openai_http import Client
from factprobe.probes.backends.openai_options import OpenAIConfig
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest
from tests.builders.templates.test_llm_serve import make_tiny_model
from tests.serving import transformers_serving

pytestmark = pytest.mark.slow

NAME = "factprobe/tiny-llama"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-cache")
    repo = root / "hf-home" / "hub" / ("models--" + NAME.replace("/", "--"))
    make_tiny_model(repo / "snapshots" / ("0" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    with transformers_serving(NAME, root / "hf-home", 90) as url:
        yield url


def test_a_scoring_method_is_refused_before_any_of_its_requests(served, tmp_path,
                                                                 monkeypatch):
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
                 OpenAIConfig(NAME, base_url=served), plan, {}, {"name": "toy"}, kinds=KINDS,
                 runnable=runnable_methods)
    message = str(exc.value)
    assert "\n" not in message and message.startswith("zp-lke: ")
    assert "no prompt log-probabilities" in message and "belief-icl" in message
    # the probe, refused with repeat_penalty (HTTP 422) and asked again without: nothing of
    # the plan was sent
    assert [p.get("echo") for p in posts] == [True, True]
    assert "repeat_penalty" in posts[0] and "repeat_penalty" not in posts[1]
    assert not (tmp_path / "run").exists()
    # what it is said to run, it runs (without the field it refused)
    backend = load_backend(OpenAIConfig(NAME, base_url=served))
    assert backend.capabilities == frozenset({"generate"}) and backend.extra == {}
    [[g]] = backend.generate([GenerateRequest("The capital of France is", 4)])
    assert isinstance(g.text, str) and g.text
