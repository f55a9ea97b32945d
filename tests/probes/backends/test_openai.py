"""The ``openai`` kind against a real completions server on 127.0.0.1 that runs a real tiny
Llama-architecture model (tests/completions_server.py): the same numbers as the local hf-causal
backend, a server without prompt log-probs refused before any scoring request, 429 with
Retry-After waited out, a server that dies mid-run resumed from the checkpoints, and the API
key in no file."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from factprobe.cli.app import main
from factprobe.core.errors import UserError
from factprobe.evaluation import runnable_methods
from factprobe.probes.backends import KINDS, BackendConfig, load_backend
from factprobe.probes.backends.openai_options import OpenAIConfig
from factprobe.probes.engine.executors import ResumableError
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest
from tests.completions_server import CompletionsServer

# A float32 model computed twice in float32: one by factprobe's packed, prefix-cached passes,
# one by the server's plain full-sequence passes (measured: at most 6e-7 apart).
TOLERANCE = 1e-5

CONTEXTS = ["Q: What is the capital of France?\nA:", "The capital of Peru is ",
            "Paris is the capital of", "Q: What is the capital of Japan?\nA: Tokyo.\nQ:"]
OPTIONS = (" Paris", " Lima", " Tokyo.", "Berlin", " the capital of Peru")


@pytest.fixture(scope="module")
def server(tiny_llama_dir):
    srv = CompletionsServer(tiny_llama_dir)
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def local(tiny_llama_dir):
    return load_backend(BackendConfig(str(tiny_llama_dir), device="cpu"))


def _served(srv, **kw):
    return load_backend(OpenAIConfig("tiny", base_url=srv.url, **kw))


def test_scores_and_greedy_texts_equal_the_local_backend(server, local, tiny_llama_dir):
    requests = [ScoreRequest(c, OPTIONS) for c in CONTEXTS]
    want = local.score(requests)
    for backend in (_served(server), _served(server, tokenizer=str(tiny_llama_dir))):
        assert backend.capabilities == KINDS["openai"].capabilities
        got = backend.score(requests)
        for g_req, w_req in zip(got, want):
            for g, w in zip(g_req, w_req):
                assert len(g.token_logprobs) == len(w.token_logprobs)
                assert max(abs(a - b) for a, b in zip(g.token_logprobs, w.token_logprobs)) \
                    < TOLERANCE
    # with the local tokenizer, the token ids are the model's own
    assert [s.token_ids for s in got[0]] == [s.token_ids for s in want[0]]
    gens = [GenerateRequest(c, 6, stop=("\n",)) for c in CONTEXTS]
    served = _served(server, tokenizer=str(tiny_llama_dir)).generate(gens)
    for g, w in zip(served, local.generate(gens)):
        assert g[0].text == w[0].text
        # a random model writes byte fragments that do not re-encode to the same ids: only
        # the count is the server's own (ids are -1, unknown, unless they re-encode)
        assert len(g[0].token_ids) == len(w[0].token_ids)
        assert max((abs(a - b) for a, b in zip(g[0].token_logprobs, w[0].token_logprobs)),
                   default=0) < TOLERANCE


def test_sampling_sends_a_seed_per_sample_and_reruns_ask_the_same(server):
    backend = _served(server)
    req = GenerateRequest("Q: What is the capital", 4, samples=3, seed=7)
    first = [g.text for g in backend.generate([req])[0]]
    assert first == [g.text for g in backend.generate([req])[0]]
    seeds = [r["json"]["seed"] for r in server.requests[-3:]]
    assert len(set(seeds)) == 3 and all(r["json"]["temperature"] == 1.0
                                        for r in server.requests[-3:])


def _score_plan(n: int = 3) -> Plan:
    reqs = [ScoreRequest(f"The capital of country {i} is", (" Paris", " Lima"),
                         meta={"fact_id": f"f{i}"}) for i in range(n)]
    return Plan("toy", [Stage("mc", "score", reqs)])


def test_a_server_without_prompt_logprobs_is_refused_before_any_scoring_request(
        tiny_llama_dir, tmp_path):
    srv = CompletionsServer(tiny_llama_dir, prompt_logprobs=False)
    try:
        with pytest.raises(UserError) as exc:
            run_eval(EvalConfig("toy", "d", str(tmp_path / "run"), progress=False),
                     OpenAIConfig("tiny", base_url=srv.url), _score_plan(), {},
                     {"name": "toy"}, kinds=KINDS, runnable=runnable_methods)
        message = str(exc.value)
        assert "\n" not in message and "can score" in message and "belief-icl" in message
        assert "no prompt log-probabilities" in message
        posts = [r for r in srv.requests if r["path"].endswith("/completions")]
        assert len(posts) == 1                                  # the probe, nothing else
        assert not (tmp_path / "run").exists()
        # it still generates
        backend = load_backend(OpenAIConfig("tiny", base_url=srv.url))
        assert backend.capabilities == frozenset({"generate"})
        [[g]] = backend.generate([GenerateRequest("Q: What is", 3)])
        assert isinstance(g.text, str)
    finally:
        srv.close()


def test_429_waits_for_retry_after_then_answers(tiny_llama_dir):
    srv = CompletionsServer(tiny_llama_dir)
    try:
        backend = _served(srv)
        srv.script = [("status", 429, {"Retry-After": "2"})]
        start = time.monotonic()
        [[s]] = backend.score([ScoreRequest("The capital of Peru is", (" Lima",))])
        assert time.monotonic() - start >= 2.0
        assert s.logprob < 0
        srv.script = [("malformed",)]                 # uneven logprob lists: asked again
        [[again]] = backend.score([ScoreRequest("The capital of Peru is", (" Lima",))])
        assert again.token_logprobs == s.token_logprobs
    finally:
        srv.close()


def test_timeout_bounds_each_whole_answer(tiny_llama_dir):
    srv = CompletionsServer(tiny_llama_dir)
    try:
        backend = _served(srv, timeout_s=0.5, retries=1)
        srv.script = [("sleep", 5)]                  # the first answer comes too late
        start = time.monotonic()
        [[s]] = backend.score([ScoreRequest("The capital of Peru is", (" Lima",))])
        assert s.logprob < 0 and time.monotonic() - start < 4
    finally:
        srv.close()


def test_persistent_errors_end_in_one_resumable_line(tiny_llama_dir):
    srv = CompletionsServer(tiny_llama_dir)
    try:
        backend = _served(srv, retries=1)
        srv.script = [("status", 500, {})] * 2
        with pytest.raises(ResumableError) as exc:
            backend.score([ScoreRequest("The capital of Peru is", (" Lima",))])
        assert "\n" not in str(exc.value) and "HTTP 500" in str(exc.value)
        assert "resumes" in str(exc.value)
    finally:
        srv.close()


def test_a_server_that_dies_mid_run_resumes_from_its_checkpoints(tiny_llama_dir, tmp_path):
    plan = _score_plan(300)                        # two chunks of the run engine (256 each)
    out = tmp_path / "run"
    first = CompletionsServer(tiny_llama_dir)
    # the self-check's three requests (an echo, a greedy token, the echo of both), chunk 1,
    # part of chunk 2
    first.script = [None] * (3 + 2 * 256 + 20) + [("die",)]
    cfg = EvalConfig("toy", "d", str(out), progress=False)
    with pytest.raises(ResumableError) as exc:
        run_eval(cfg, OpenAIConfig("tiny", base_url=first.url, retries=1), plan, {},
                 {"name": "toy"}, kinds=KINDS)
    assert "\n" not in str(exc.value)
    assert list((tmp_path / ".run.partial").glob("mc-*.parquet"))
    second = CompletionsServer(tiny_llama_dir)     # restarted, on another port
    try:
        run_eval(cfg, OpenAIConfig("tiny", base_url=second.url), plan, {}, {"name": "toy"},
                 kinds=KINDS)
        scored = [r for r in second.requests if r["path"].endswith("/completions")]
        assert len(scored) == 3 + 2 * (300 - 256)   # the check, then the second chunk only
        rows = pd.read_parquet(out / "outputs.parquet")
        assert len(rows) == 600 and rows["logprob"].lt(0).all()
    finally:
        second.close()


def test_the_key_reaches_the_server_and_no_file(tiny_llama_dir, sample_datasets, tmp_path,
                                               monkeypatch, capsys):
    secret = "sk-test-" + "k3y" * 10
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    srv = CompletionsServer(tiny_llama_dir)
    try:
        out = tmp_path / "run"
        assert main(["eval", "zp-lke", "--dataset", str(sample_datasets / "sample-mc"),
                     "--backend", "openai", "--base-url", srv.url, "--model", "tiny",
                     "--examples", "2", "--limit", "2", "--response-tokens", "3",
                     "--concurrency", "3", "--out", str(out), "--quiet"]) == 0
        assert all(r["headers"].get("authorization") == f"Bearer {secret}"
                   for r in srv.requests)
        for f in out.rglob("*"):
            if f.is_file():
                assert secret.encode() not in f.read_bytes(), f
        run = json.loads((out / "run.json").read_text())
        assert run["backend"]["base_url"] == srv.url and run["model"]["type"] == "openai-server"
        assert secret not in capsys.readouterr().err
    finally:
        srv.close()


@pytest.mark.parametrize("argv, says", [
    (["--backend", "openai"], "needs --base-url"),
    (["--backend", "openai", "--base-url", "ftp://x/v1"], "not an http(s) URL"),
    (["--base-url", "http://127.0.0.1:9/v1"], "--base-url is an option of backend kind openai"),
])
def test_flags_are_checked_in_one_line(argv, says, tmp_path, capsys):
    (tmp_path / "d").mkdir()
    code = main(["eval", "belief-icl", "--dataset", str(tmp_path / "d"), "--model", "m",
                 "--out", str(tmp_path / "run"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and says in err and err.count("\n") == 1, err
    assert not Path(tmp_path / "run").exists()


def test_an_unknown_model_names_what_the_server_serves(server):
    with pytest.raises(UserError, match=r"serves no model 'gpt-9'.*it serves: tiny"):
        load_backend(OpenAIConfig("gpt-9", base_url=server.url))


def test_an_unreachable_server_is_one_line(closed_port_url):
    with pytest.raises(UserError) as exc:
        load_backend(OpenAIConfig("tiny", base_url=closed_port_url, retries=0))
    assert "\n" not in str(exc.value) and "cannot reach" in str(exc.value)


@pytest.mark.slow
@pytest.mark.parametrize("method, dataset, flags", [
    ("zp-lke", "sample-mc", ["--examples", "3", "--response-tokens", "4"]),
    ("prompt", "sample-mc", ["--response-tokens", "4"]),
    # greedy only: a server draws samples with its own generator, not the local one
    ("belief-icl", "sample-multiprompt", ["--samples", "0", "--sample-prompts", "0",
                                          "--max-names", "1"]),
    ("monitor", "sample-fktc", []),
])
def test_each_causal_method_gives_the_local_backends_rows(method, dataset, flags, server,
                                                          tiny_llama_dir, sample_datasets,
                                                          tmp_path):
    """The whole method through the server: every score within the tolerance, the same
    argmax and the same greedy texts as the local hf-causal backend, the same metrics."""
    common = ["eval", method, "--dataset", str(sample_datasets / dataset), "--limit", "2",
              "--quiet", *flags]
    assert main([*common, "--model", str(tiny_llama_dir), "--out", str(tmp_path / "local")]) \
        == 0
    assert main([*common, "--backend", "openai", "--base-url", server.url, "--model", "tiny",
                 "--tokenizer", str(tiny_llama_dir), "--out", str(tmp_path / "served")]) == 0
    local = pd.read_parquet(tmp_path / "local" / "outputs.parquet")
    served = pd.read_parquet(tmp_path / "served" / "outputs.parquet")
    assert len(local) == len(served) > 0
    assert (local["logprob"] - served["logprob"]).abs().max() < TOLERANCE
    if "text" in local:
        assert local["text"].fillna("").tolist() == served["text"].fillna("").tolist()
    metrics = [json.loads((tmp_path / r / "metrics.json").read_text())
               for r in ("local", "served")]
    assert metrics[0] == metrics[1]


def test_an_echo_one_row_off_is_caught_and_scored_by_forced_completions(tiny_llama_dir,
                                                                         local, tmp_path):
    """A server that pairs each echoed prompt token with its own logits row (llama-cpp-python
    without a BOS) returns numbers that look right: the start-up check compares them with the
    server's own generated ones. Without --tokenizer: scoring refused in one line before any
    request of the plan; with it: completions forced by logit_bias give the local scores."""
    srv = CompletionsServer(tiny_llama_dir, shifted_echo=True)
    try:
        with pytest.raises(UserError) as exc:
            run_eval(EvalConfig("toy", "d", str(tmp_path / "run"), progress=False),
                     OpenAIConfig("tiny", base_url=srv.url), _score_plan(), {},
                     {"name": "toy"}, kinds=KINDS, runnable=runnable_methods)
        message = str(exc.value)
        assert "\n" not in message and "wrong logits rows" in message
        assert "--tokenizer" in message and "belief-icl" in message
        posts = [r["json"] for r in srv.requests if r["path"].endswith("/completions")]
        assert len(posts) == 3 and not any("country" in str(p["prompt"]) for p in posts)
        assert not (tmp_path / "run").exists()
        backend = _served(srv, tokenizer=str(tiny_llama_dir))
        assert backend.scoring == "forced" and backend.describe()["backend"]["scoring"] == \
            "forced"
        requests = [ScoreRequest(c, OPTIONS) for c in CONTEXTS] + \
            [ScoreRequest("", (" Paris", "The capital"))]
        for g_req, w_req in zip(backend.score(requests), local.score(requests)):
            for g, w in zip(g_req, w_req):
                assert g.token_ids == w.token_ids
                assert max(abs(a - b) for a, b in zip(g.token_logprobs, w.token_logprobs)) \
                    < TOLERANCE
        # the forced requests carried their token's bias, one token each
        forced = [r["json"] for r in srv.requests[-5:]]
        assert all(r["max_tokens"] == 1 and len(r["logit_bias"]) == 1 for r in forced)
    finally:
        srv.close()
