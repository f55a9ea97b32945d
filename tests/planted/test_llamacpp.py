"""``--backend openai`` against llama.cpp's real OpenAI-compatible server on 127.0.0.1
(``llama-cpp-python[server]``, tests/llama_server.py), serving the planted model and a tiny
random Llama-architecture model converted to float32 GGUF with llama.cpp's own converter.

That server echoes prompt log-probabilities one logits row off when a prompt has no BOS token
(as the planted model's prompts have none): the backend's start-up check catches it, refuses
to score without ``--tokenizer`` (one line, before any request of the plan) and, with it,
scores through completions forced to each option token by ``logit_bias``. Then every causal
method gives the local hf-causal backend's rows: the same greedy texts, the same argmax,
scores within 1e-3 (float32 both sides; measured 1e-5), the same validity verdicts. A server killed mid-run
is one line and the run resumes on a restarted one.

Skipped, saying why, where llama-cpp-python or the converter is not installed (``make
llama-server``)."""
from __future__ import annotations

import json
import threading
import time

import pandas as pd
import pytest

from factprobe.cli.app import main
from factprobe.probes.backends import KINDS, BackendConfig, load_backend
from factprobe.probes.backends.openai_options import OpenAIConfig
from factprobe.probes.engine.executors import ResumableError
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import GenerateRequest, ScoreRequest
from tests import llama_server
from tests.planted.conftest import TEMPLATES

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(llama_server.missing()), reason=llama_server.missing()
                                 or "llama.cpp is installed")]

TOLERANCE = 1e-3
AGREEMENT = 0.99


@pytest.fixture(scope="module")
def planted_server(causal_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("llama-planted")
    gguf = llama_server.to_gguf(causal_model, root / "planted-f32.gguf")
    srv = llama_server.LlamaServer(gguf, "planted", root / "server.log")
    srv.gguf = gguf
    yield srv
    srv.close()


def _cli(*args: str) -> int:
    return main([*args, "--quiet"])


def test_its_misaligned_echo_is_refused_in_one_line_without_a_tokenizer(
        planted_server, world, tmp_path, capsys):
    backend = load_backend(OpenAIConfig("planted", base_url=planted_server.url))
    assert backend.capabilities == frozenset({"generate"})
    assert "wrong logits rows" in backend.limits and "--tokenizer" in backend.limits
    out = tmp_path / "run"
    code = _cli("eval", "zp-lke", "--dataset", str(world["mc"]), "--backend", "openai",
                "--base-url", planted_server.url, "--model", "planted", "--limit", "2",
                "--examples", "8", "--seeds", "0",
                "--out", str(out))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "wrong logits rows" in err and "belief-icl" in err
    assert not out.exists()


def test_a_random_llama_scores_and_generates_as_the_local_backend(tiny_llama_dir,
                                                                   tmp_path):
    gguf = llama_server.to_gguf(tiny_llama_dir, tmp_path / "tiny-f32.gguf")
    srv = llama_server.LlamaServer(gguf, "tiny", tmp_path / "server.log")
    try:
        served = load_backend(OpenAIConfig("tiny", base_url=srv.url,
                                           tokenizer=str(tiny_llama_dir)))
        assert served.scoring == "forced" and "score" in served.capabilities
        local = load_backend(BackendConfig(str(tiny_llama_dir), device="cpu"))
        # " Zürich" and "São": characters cut into byte tokens (forced together, their order
        # fixed by a grammar); quotes, a backslash and a newline: the grammar's escapes
        options = (" Paris", " Lima", " Tokyo.", " the capital of Peru", " Zürich",
                   ' "São" \\ x\n', "")
        requests = [ScoreRequest(c, options) for c in
                    ("The capital of Peru is", "Q: What is the capital of Japan?\nA:")]
        requests.append(ScoreRequest("", ("Zürich is", " Paris")))   # after BOS/EOS
        for g_req, w_req in zip(served.score(requests), local.score(requests)):
            for g, w in zip(g_req, w_req):
                assert g.token_ids == w.token_ids
                assert max((abs(a - b) for a, b in zip(g.token_logprobs, w.token_logprobs)),
                           default=0) < TOLERANCE
        gens = [GenerateRequest("The capital of Peru is", 6), GenerateRequest("Q: What", 4)]
        for g, w in zip(served.generate(gens), local.generate(gens)):
            # a random model writes byte fragments, and llama-cpp-python treats a token that
            # ends inside a UTF-8 character its own way (it drops the bytes, errors="ignore",
            # and generates past max_tokens to finish the character): the same text up to
            # the first such token (the planted model's answers are whole words: compared
            # whole below)
            assert g[0].text.startswith(w[0].text.split("\ufffd")[0])
    finally:
        srv.close()


def _rounded(obj, digits: int = 3):
    if isinstance(obj, float):
        return round(obj, digits)
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v, digits) for v in obj]
    return obj


def _argmax(rows: pd.DataFrame) -> pd.Series:
    scored = rows[(rows["kind"] == "score") & rows["option"].notna()]
    keys = [k for k in ("prompt_id", "stage", "subject_blind", "frame", "index", "negative")
            if k in scored]
    best = scored.loc[scored.groupby(keys, dropna=False)["logprob"].idxmax()]
    return best.set_index(keys)["option"].sort_index()


@pytest.mark.parametrize("method, dataset, flags", [
    ("zp-lke", "mc", ["--examples", "8", "--seeds", "0"]),
    # every template's prompt for each fact: 2 facts a relation keep it near a minute
    ("prompt", "mc", ["--templates", str(TEMPLATES), "--limit", "2"]),
    # greedy only: a server draws samples with its own generator, not the local one
    ("belief-icl", "multiprompt", ["--max-names", "1", "--contexts", "zero,4-template",
                                   "--samples", "0", "--sample-prompts", "0"]),
    ("monitor", "fktc", []),
])
def test_each_causal_method_gives_the_local_backends_rows(method, dataset, flags,
                                                          planted_server, causal_model, world,
                                                          tmp_path):
    common = ["eval", method, "--dataset", str(world[dataset]), "--limit", "4", *flags]
    assert _cli(*common, "--model", str(causal_model), "--out", str(tmp_path / "local")) == 0
    start = time.perf_counter()
    assert _cli(*common, "--backend", "openai", "--base-url", planted_server.url, "--model",
                "planted", "--tokenizer", str(causal_model), "--concurrency", "2",
                "--out", str(tmp_path / "served")) == 0
    print(f"{method}: served in {time.perf_counter() - start:.1f} s")
    local = pd.read_parquet(tmp_path / "local" / "outputs.parquet")
    served = pd.read_parquet(tmp_path / "served" / "outputs.parquet")
    assert len(local) == len(served) > 0
    assert (local["logprob"] - served["logprob"]).abs().max() < TOLERANCE
    if "text" in local:
        assert local["text"].fillna("").tolist() == served["text"].fillna("").tolist()
    if "option" in local and local["option"].notna().any():
        a, b = _argmax(local), _argmax(served)
        assert len(a) == len(b) > 0 and (a == b).mean() >= AGREEMENT
    metrics = [json.loads((tmp_path / r / "metrics.json").read_text())
               for r in ("local", "served")]
    assert _rounded(metrics[0]) == _rounded(metrics[1])


def _posts(srv) -> int:
    """Completions requests the server has answered (its access log)."""
    return srv.log.read_text(errors="replace").count("POST /v1/completions")


def _score_plan(n: int, groups: int) -> Plan:
    """n requests in ``groups`` prefix groups: the run engine checkpoints each group as a
    chunk of its own."""
    reqs = [ScoreRequest(f"The capital of country {i} is", (" Paris", " Lima"),
                         group=f"g{i % groups}", meta={"fact_id": f"f{i}"}) for i in range(n)]
    return Plan("toy", [Stage("mc", "score", reqs)])


def test_a_server_killed_mid_run_is_one_line_and_the_run_resumes(planted_server,
                                                                 causal_model, tmp_path):
    plan = _score_plan(60, 3)                     # three chunks of 20 requests
    out = tmp_path / "run"
    partial = tmp_path / ".run.partial"
    first = llama_server.LlamaServer(planted_server.gguf, "planted", tmp_path / "first.log")

    def kill_after_the_first_chunk():
        deadline = time.time() + 300
        while not list(partial.glob("mc-*.parquet")) and time.time() < deadline:
            time.sleep(0.02)
        first.kill()

    killer = threading.Thread(target=kill_after_the_first_chunk, daemon=True)
    killer.start()
    cfg = EvalConfig("toy", "d", str(out), progress=False)
    tok = str(causal_model)
    with pytest.raises(ResumableError) as exc:
        run_eval(cfg, OpenAIConfig("planted", base_url=first.url, retries=1, tokenizer=tok),
                 plan, {}, {"name": "toy"}, kinds=KINDS)
    killer.join()
    assert "\n" not in str(exc.value) and "resumes" in str(exc.value)
    kept = list(partial.glob("mc-*.parquet"))
    assert kept
    # restarted, on another port: the finished chunks are not asked again (one forced
    # completion per option token of the others, and the start-up check's few)
    posts = _posts(planted_server)
    run_eval(cfg, OpenAIConfig("planted", base_url=planted_server.url, tokenizer=tok), plan,
             {}, {"name": "toy"}, kinds=KINDS)
    from transformers import AutoTokenizer
    t = AutoTokenizer.from_pretrained(tok)
    tokens = sum(len(t(o, add_special_tokens=False)["input_ids"]) for o in (" Paris", " Lima"))
    left = 60 - 20 * len(kept)
    assert 0 < left and 2 * left <= _posts(planted_server) - posts <= left * tokens + 10
    rows = pd.read_parquet(out / "outputs.parquet")
    assert len(rows) == 120
    want = load_backend(BackendConfig(tok, device="cpu")).score(plan.stages[0].requests)
    want = {(f"f{i}", k): s.logprob for i, r in enumerate(want) for k, s in enumerate(r)}
    got = {(f, int(o)): lp for f, o, lp in zip(rows["fact_id"], rows["option"], rows["logprob"])}
    assert got.keys() == want.keys()
    assert max(abs(got[k] - want[k]) for k in want) < TOLERANCE
