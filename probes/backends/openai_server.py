"""The ``openai`` kind: an OpenAI-compatible ``/v1/completions`` server as a backend.

- ``generate``: one completion per greedy answer or sample, with the request's stop strings
  (the server's, at most 4 as OpenAI's API takes; every one is applied again here), temperature
  0 for greedy and 1 with top_p 1 for samples (the local backend's plain multinomial draw), and
  a seed per sample from the request's seed, sample index and prompt, as the local backend
  seeds its draws, so a rerun asks the same.
- ``score``: the prompt's own log-probabilities (``echo`` + ``logprobs`` with one new token,
  as lm-evaluation-harness's ``local-completions`` asks). Context and continuation are split as
  lm-evaluation-harness splits them (the context's trailing spaces move to the continuation);
  the continuation's tokens are the prompt tokens that end after the context, found from the
  returned ``text_offset`` -- or, with ``--tokenizer``, the last ones, as many as that local
  tokenizer gives the continuation. No server reuses a shared prefix when prompt log-probs are
  asked, so every option's whole prompt is computed (docs/scaling.md).

When the backend loads it asks ``/v1/models`` (the model must be there; its entry is the
checkpoints' identity) and checks the prompt log-probabilities (openai_check): one echo
request (none returned: the server offers ``generate`` only, and a plan that scores is refused
before any of its requests, as the run engine compares the loaded backend's
``capabilities``), then whether the echoed values line up with the server's own generated
ones. Where they do not (llama-cpp-python's server), ``--tokenizer`` scores through
completions forced to each continuation token by ``logit_bias`` (``scoring: forced``);
without it, scoring is refused.

Why the ``openai`` client (a dependency already): it speaks every server's dialect of the
API, and the transport's size cap and deadline hook into its httpx client, as the LLM
paraphraser's do (builders/templates/llm.py). Its own retries are off: ours honour 429's
Retry-After and are bounded by ``--retries``.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence

from factprobe.core import redact
from factprobe.core.errors import UserError
from factprobe.core.retry import Retryable, RetryPolicy, with_retries
from factprobe.probes.backends.base import Usage
from factprobe.probes.backends import openai_check as check
from factprobe.probes.backends.openai_http import Client
from factprobe.probes.backends.openai_http import logprobs_block as _logprobs
from factprobe.probes.backends.openai_http import prompt_tokens as _prompt_tokens
from factprobe.probes.backends.openai_http import token_id as _token_id
from factprobe.probes.backends.openai_options import OpenAIConfig
from factprobe.probes.requests import Generated, GenerateRequest, Scored, ScoreRequest

CAPABILITIES = frozenset({"score", "generate"})
MAX_STOPS = 4                     # OpenAI's API refuses more stop strings
# llama.cpp's servers apply a repetition penalty unless told otherwise (llama-cpp-python's:
# 1.1), which changes greedy answers (measured: the planted model's greedy text differed from
# the local backend's after 7 tokens); the local backend applies none. Other servers ignore an
# unknown field, or refuse it (then it is not sent: OpenAIServer._probe).
SAMPLER = {"repeat_penalty": 1.0}
# /v1/models fields that change with every start of the same server (not the model's)
_VOLATILE = ("created",)


def load(config: OpenAIConfig) -> OpenAIServer:
    return OpenAIServer(config)


def sample_seed(seed: int, sample: int, prompt: str) -> int:
    """The seed sent for one sample: fixed by the request, never by the batch.

    >>> sample_seed(0, 1, "Paris") == sample_seed(0, 1, "Paris") != sample_seed(0, 2, "Paris")
    True
    """
    h = hashlib.sha1(f"{seed}\x1f{sample}\x1f{prompt}".encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def split_pair(context: str, continuation: str) -> tuple[str, str]:
    """lm-evaluation-harness's split: trailing spaces of the context go to the continuation.

    >>> split_pair("The capital is ", "Paris")
    ('The capital is', ' Paris')
    """
    n = len(context) - len(context.rstrip())
    return (context[:-n], context[-n:] + continuation) if n else (context, continuation)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """
    >>> cut_at_stop(" Paris.\\nQ:", ("\\n",))
    ' Paris.'
    """
    cut = min((text.find(s) for s in stop if s and s in text), default=len(text))
    return text[:cut]


class OpenAIServer:
    """``score`` and ``generate`` through a completions server; see the module docstring."""

    def __init__(self, config: OpenAIConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.shown = redact.redact_url(config.base_url)
        self._sleep = sleep
        self.max_length = None          # the server refuses an over-long prompt itself
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.client = Client(config.base_url, os.environ.get("OPENAI_API_KEY") or None,
                             config.timeout_s, config.max_answer_mb)
        self.tok = self._tokenizer() if config.tokenizer else None
        self.entry = self._model_entry()
        self.limits = ""
        self.scoring = "echo"           # or "forced" (openai_check)
        self.extra: dict = {}           # SAMPLER, where the server takes it
        self.capabilities = CAPABILITIES if self._has_prompt_logprobs() else \
            frozenset({"generate"})

    # ----------------------------------------------------------------------------- setup
    def _tokenizer(self):
        try:
            from transformers import AutoTokenizer
            return AutoTokenizer.from_pretrained(self.config.tokenizer)
        except (OSError, ValueError) as exc:
            raise UserError(f"--tokenizer {self.config.tokenizer}: cannot load it "
                            f"({str(exc).splitlines()[0][:120]}); give a tokenizer folder or "
                            f"Hub name, or drop --tokenizer") from None

    def _call(self, what: str, call: Callable[[], dict]) -> dict:
        policy = RetryPolicy(retries=self.config.retries)
        return with_retries(call, policy, f"{self.shown} ({what})", sleep=self._sleep)

    def _model_entry(self) -> dict:
        answer = self._call("/models", lambda: self.client.get("/models"))
        data = answer.get("data") if isinstance(answer, dict) else None
        entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
        ids = [str(e.get("id")) for e in entries]
        if self.config.model not in ids:
            shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "") or "none"
            raise UserError(f"{self.shown} serves no model {self.config.model!r} (it serves: "
                            f"{shown}); give one of them as --model")
        entry = entries[ids.index(self.config.model)]
        return {k: v for k, v in sorted(entry.items()) if k not in _VOLATILE}

    def _has_prompt_logprobs(self) -> bool:
        """Can this server score, and how (openai_check): its echoed prompt log-probabilities
        when they line up with its own generated ones, else completions forced to each token
        (needs --tokenizer); otherwise it only generates."""
        post = self._post
        lp = None
        try:
            got = self._probe()
            lp = _logprobs(got)
            ok = lp is not None and any(x is not None for x in lp["token_logprobs"]) and \
                len(lp["text_offset"]) == len(lp["token_logprobs"])
            if not ok:
                why = "returns no prompt log-probabilities (echo + logprobs on /v1/completions)"
            else:
                ok, why = self._call("a prompt log-probability check", lambda: check.check_echo(
                    post, self._score_body, self.config.model))
        except UserError as exc:
            if "HTTP 4" not in str(exc):     # unreachable or failing: not a missing feature
                raise
            ok, why = False, "returns no prompt log-probabilities (echo + logprobs on " \
                             "/v1/completions)"
        if ok:
            return True
        if lp is not None and self.tok is not None:
            failed = self._call("a logit_bias check", lambda: check.check_forced(
                post, self.config.model, self.tok))
            if not failed:
                self.scoring = "forced"
                return True
            why = f"{why}; and a completion forced to --tokenizer's token failed ({failed}): " \
                  f"is --tokenizer the served model's?"
        hint = "" if lp is None else (
            "; give --tokenizer (the served model's tokenizer) to score through completions "
            "forced to each option token (logit_bias), or serve it with vLLM" if self.tok is None
            else "; serve it with vLLM, or use --backend hf-causal")
        # the run engine adds the methods that only generate, from the methods table
        self.limits = f"{self.shown} {why}, so it can only generate{hint}"
        return False

    def _probe(self) -> dict:
        """The first echo request, with ``SAMPLER`` (the local backend's plain greedy and
        multinomial choice): a server that refuses an unknown field (HTTP 4xx) is asked
        again without them, and they are not sent to it again."""
        ask = lambda: self._call("a prompt log-probability probe", lambda: self._post(  # noqa
            self._score_body("The capital of France is Paris")))
        self.extra = dict(SAMPLER)
        try:
            return ask()
        except UserError as exc:
            if "HTTP 4" not in str(exc):
                raise
        self.extra = {}
        return ask()

    # ----------------------------------------------------------------------------- requests
    def _post(self, body: dict) -> dict:
        return self.client.post("/completions", {**body, **self.extra})

    def _score_body(self, prompt: str | list[int]) -> dict:
        return {"model": self.config.model, "prompt": prompt, "max_tokens": 1, "echo": True,
                "logprobs": 1, "temperature": 0}

    def _parallel(self, jobs: list, run: Callable, progress=None, per: list | None = None):
        """``run(job)`` for every job, ``concurrency`` at a time, results in job order;
        ``per``: how many jobs each request has (the progress bar counts requests)."""
        out = [None] * len(jobs)
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            futures = [pool.submit(run, job) for job in jobs]
            done_of = [0] * len(per or [])
            owner = [i for i, n in enumerate(per or []) for _ in range(n)]
            try:
                for k, f in enumerate(futures):
                    out[k] = f.result()
                    if per is not None and progress is not None:
                        done_of[owner[k]] += 1
                        if done_of[owner[k]] == per[owner[k]]:
                            progress.update(1)
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        return out

    def _resumable(self, call: Callable[[], object]):
        from factprobe.probes.engine.executors import ResumableError
        try:
            return call()
        except ResumableError:
            raise
        except UserError as exc:
            raise ResumableError(f"{exc} The finished chunks are kept: the same command "
                                 f"resumes from them.") from None

    def score(self, requests: Sequence[ScoreRequest], progress=None) -> list[list[Scored]]:
        if "score" not in self.capabilities:
            raise UserError(f"scoring asked of a server that cannot: {self.limits}")
        jobs = [(r.context, c) for r in requests for c in r.continuations]
        per = [len(r.continuations) for r in requests]
        flat = self._resumable(lambda: self._parallel(jobs, self._score_one, progress, per))
        out, k = [], 0
        for n in per:
            out.append(flat[k:k + n])
            k += n
        for n, r in zip(per, requests):     # a request without continuations
            if n == 0 and progress is not None:
                progress.update(1)
        return out

    def _score_one(self, job: tuple[str, str]) -> Scored:
        context, continuation = split_pair(*job)
        if self.scoring == "forced":
            return self._forced_one(context, continuation)
        text = context + continuation
        prompt: str | list[int] = text
        if not context and self.tok is not None:
            # nothing to condition the first token on: the local backend puts the BOS (else
            # EOS) token first, and so does this prompt, sent as token ids (vLLM and
            # the test server take them; llama-cpp-python's scores through forced completions)
            first = self.tok.bos_token_id if self.tok.bos_token_id is not None \
                else self.tok.eos_token_id
            if first is not None:
                prompt = [first] + self.tok(text, add_special_tokens=False)["input_ids"]

        def ask() -> tuple[list[float], list[int]]:
            got = self._post(self._score_body(prompt))
            return self._continuation(got, text, context, continuation)

        lps, ids = self._call("scoring", ask)
        return Scored(lps, ids)

    def _forced_one(self, context: str, continuation: str) -> Scored:
        post = self._post
        values, ids, sent = self._call("scoring", lambda: check.score_forced(
            post, self.config.model, self.tok, context, continuation, self.shown))
        self.prompt_tokens += sent
        self.completion_tokens += len(ids)
        return Scored(values, ids)

    def _continuation(self, got: dict, text: str, context: str, continuation: str):
        lp = _logprobs(got)
        if lp is None:
            raise Retryable("the answer holds no prompt log-probabilities")
        n_prompt = _prompt_tokens(got, lp, len(text))
        self._count(got)
        offsets, values, tokens = (lp["text_offset"][:n_prompt], lp["token_logprobs"][:n_prompt],
                                   lp["tokens"][:n_prompt])
        if self.tok is not None:
            ctx_ids = self.tok(context, add_special_tokens=False)["input_ids"]
            whole = self.tok(text, add_special_tokens=False)["input_ids"]
            ids = whole[len(ctx_ids):] if whole[:len(ctx_ids)] == ctx_ids else \
                self.tok(continuation, add_special_tokens=False)["input_ids"]
            take = list(range(n_prompt - len(ids), n_prompt))
            if take and take[0] < 0:
                raise Retryable("the server's prompt has fewer tokens than --tokenizer gives "
                                "it: is --tokenizer the served model's?")
        else:
            ends = list(offsets[1:]) + [len(text)]
            take = [i for i in range(n_prompt) if ends[i] > len(context)]
            ids = [_token_id(tokens[i]) for i in take]
        chosen = [values[i] for i in take]
        if not take:
            raise Retryable("no prompt token covers the continuation (malformed text_offset)")
        if any(v is None for v in chosen):
            raise UserError(f"{self.shown} gives no log-probability for the first token of a "
                            f"prompt, and the continuation {continuation!r} starts it: give "
                            f"every request a context, or give --tokenizer (then such a prompt "
                            f"starts with its BOS token, as the local backend's)")
        return [float(v) for v in chosen], ids

    def generate(self, requests: Sequence[GenerateRequest], progress=None
                 ) -> list[list[Generated]]:
        jobs = [(r, s if r.samples else -1) for r in requests for s in range(max(1, r.samples))]
        per = [max(1, r.samples) for r in requests]
        flat = self._resumable(lambda: self._parallel(jobs, self._generate_one, progress, per))
        out, k = [], 0
        for n in per:
            out.append(flat[k:k + n])
            k += n
        return out

    def _generate_one(self, job: tuple[GenerateRequest, int]) -> Generated:
        r, sample = job
        if r.max_new_tokens <= 0:
            return Generated("", [], [])
        body = {"model": self.config.model, "prompt": r.prompt,
                "max_tokens": r.max_new_tokens, "logprobs": 1, "echo": False}
        if sample < 0:
            body.update(temperature=0, seed=r.seed)
        else:
            body.update(temperature=1.0, top_p=1.0, seed=sample_seed(r.seed, sample, r.prompt))
        stops = [s for s in r.stop if s][:MAX_STOPS]
        if stops:
            body["stop"] = stops

        def ask() -> Generated:
            got = self._post(body)
            return self._generated(got, r)

        return self._call("generation", ask)

    def _generated(self, got: dict, r: GenerateRequest) -> Generated:
        try:
            raw = got["choices"][0]["text"]
        except (KeyError, IndexError, TypeError):
            raise Retryable("the answer is not a completion") from None
        if not isinstance(raw, str):
            raise Retryable("the answer is a completion without text")
        self._count(got)
        text = cut_at_stop(raw, r.stop)
        lp = _logprobs(got, echo=False)
        if lp is not None:
            # every token, unless a stop string cut the text, here or on the server (which
            # may list the stop string's token: llama-cpp-python does): then those that start
            # inside the text kept (a token of a split UTF-8 character adds no text, so
            # offsets alone cannot tell where nothing was cut)
            first = lp["text_offset"][0] if lp["text_offset"] else 0
            cut = len(text) < len(raw) or got["choices"][0].get("finish_reason") == "stop"
            keep = [i for i, o in enumerate(lp["text_offset"])
                    if not cut or o - first < len(text)]
            values = [math.nan if lp["token_logprobs"][i] is None
                      else float(lp["token_logprobs"][i]) for i in keep]
            ids = [_token_id(lp["tokens"][i]) for i in keep]
        else:
            values, ids = [], []
        if self.tok is not None:
            before = self.tok(r.prompt, add_special_tokens=False)["input_ids"]
            whole = self.tok(r.prompt + text, add_special_tokens=False)["input_ids"]
            local = whole[len(before):] if whole[:len(before)] == before else \
                self.tok(text, add_special_tokens=False)["input_ids"]
            if lp is None or len(local) == len(ids):
                ids = local
                values = values if lp is not None else [math.nan] * len(ids)
        return Generated(text, ids, values)

    def _count(self, got: dict) -> None:
        usage = got.get("usage") if isinstance(got, dict) else None
        if isinstance(usage, dict):
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)

    # ----------------------------------------------------------------------------- contract
    def request_tokens(self, request) -> int:
        return 0                         # never compared: max_length is None

    def usage(self) -> Usage:
        n = self.prompt_tokens + self.completion_tokens
        return Usage(computed=n, full_sequence=n)

    def describe(self) -> dict:
        c = self.config
        return {"backend": {"model": c.model, "base_url": self.shown,
                            "concurrency": c.concurrency, "timeout_s": c.timeout_s,
                            "retries": c.retries, "tokenizer": c.tokenizer,
                            "capabilities": sorted(self.capabilities),
                            "scoring": self.scoring, "sampler": self.extra},
                "model": {"name": c.model, "type": "openai-server", "revision": None,
                          "parameters": None, "device": self.shown, "dtype": "server"}}

    def identity(self) -> dict:
        # The served model's own entry decides the numbers: a server restarted on another
        # port with the same model resumes; another model (or a new entry) starts over.
        return {"model": {"served": self.entry}, "revision": None, "device": "server",
                "settings": {"tokenizer": self.config.tokenizer,
                             "prompt_logprobs": "score" in self.capabilities,
                             "scoring": self.scoring, "sampler": self.extra}}
