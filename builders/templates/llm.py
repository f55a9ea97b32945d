"""A cached client for any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp,
``transformers serve``).

Every answer goes to ``<cache_dir>/chat/`` keyed by a hash of the model, the messages, the
sampling parameters and the request's index, so a rebuild replays exactly the same answers in the
same order and never needs the endpoint (``--refresh`` asks again and replaces them). The API
key comes from ``OPENAI_API_KEY`` only, and never reaches the cache, a message or an error
(:func:`scrub`): an answer that echoes it, or the credentials of ``--llm-base-url``, is stored
with them masked.
"""
from __future__ import annotations

import ast
import itertools
import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

from factprobe.core import jsonsafe, redact
from factprobe.core.cache import ResponseCache, request_key
from factprobe.core.errors import UserError
from factprobe.core.retry import Retryable, RetryPolicy, parse_retry_after
from factprobe.core.transport import (
    DEFAULT_MAX_ANSWER_MB,
    MB,
    ACCEPT_ENCODING,
    AnswerTooLarge,
    bounded,
    capping_hook,
    cause,
    too_large_message,
)
from factprobe.core.urls import http_url

CACHE_NAMESPACE = "chat"
KEY_VERSION = "chat/v1"
_STARTS = 100          # opening brackets tried by parse_string_list
_SECRETISH = re.compile(r"(sk-|Bearer\s+)[A-Za-z0-9_\-*.]{3,}")


@dataclass(frozen=True)
class LLMConfig:
    model: str
    base_url: str | None = None     # None: replay the cache only
    cache_dir: str = "data/llm-cache"
    temperature: float = 1.0
    max_tokens: int = 1024
    seed: int = 0
    timeout_s: float = 120.0      # for the whole answer (transport.bounded)
    retries: int = 3
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB
    refresh: bool = False           # ask again even when an answer is cached, and replace it


@dataclass(frozen=True)
class Answer:
    text: str
    retrieved: str      # when the endpoint gave it (from the cache on a replay)
    cached: bool


def scrub(text: str, secret: str | None = None) -> str:
    """One short line of ``text`` with the secret and anything key-like masked.

    >>> scrub("Incorrect API key provided: sk-abc123***xyz.\\nmore", None)
    'Incorrect API key provided: sk-***'
    """
    if secret:
        text = text.replace(secret, "***")
    text = redact.scrub(text)
    text = _SECRETISH.sub(lambda m: m.group(1) + "***", text)
    line = " ".join(text.split("\n")[0].split())
    return line[:200]


def answer_problem(payload: Any) -> str | None:
    """Why a cached or fresh ``payload`` is not an answer (``{"text": str}`` whose brackets
    nest at most :data:`~factprobe.core.jsonsafe.MAX_DEPTH` deep), or None.

    >>> answer_problem({"text": "[]"}), answer_problem({"text": None})
    (None, 'has no text')
    >>> answer_problem({"text": "[" * 200000})
    'is text nested deeper than 100 brackets'
    """
    if not (isinstance(payload, dict) and isinstance(payload.get("text"), str)):
        return "has no text"
    if not jsonsafe.text_depth_ok(payload["text"]):
        # no list of paraphrases nests like this, and reading it for one would recurse
        return f"is text nested deeper than {jsonsafe.MAX_DEPTH} brackets"
    return None


def parse_string_list(text: str) -> list[Any] | None:
    """The first JSON (or Python-literal) list in a model's answer; None when there is none.

    Models wrap lists in code fences, add a sentence before or after, or use single quotes.
    Text nested too deeply to be such a list is none (decoding it would recurse), and only the
    first :data:`_STARTS` brackets are tried, each up to 50 closing ones: a hostile answer
    costs no more than an ordinary one.

    >>> parse_string_list('Sure!\\n```json\\n["[X] lives in [Y].", "[Y] is home to [X]."]\\n```')
    ['[X] lives in [Y].', '[Y] is home to [X].']
    >>> parse_string_list("['a', 'b'] hope this helps") , parse_string_list("no list here")
    (['a', 'b'], None)
    """
    if not jsonsafe.text_depth_ok(text):
        return None
    decoder = json.JSONDecoder()
    starts = (m.start() for m in re.finditer(r"\[", text)
              if not text.startswith(("[X]", "[Y]"), m.start()))
    for pos in itertools.islice(starts, _STARTS):
        try:
            value, _ = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            value = None
        if isinstance(value, list):
            return value
        for end in [m.end() for m in itertools.islice(re.finditer(r"\]", text[pos:]), 50)]:
            chunk = text[pos:pos + end]
            if chunk.endswith(("[X]", "[Y]")):
                continue
            try:
                value = ast.literal_eval(chunk)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, list):
                return value
    return None


class ChatClient:
    """``ask(messages, n)`` returns the n-th answer to ``messages``, from the cache or the endpoint.

    ``n`` numbers repeated asks of the same messages: each has its own cache entry and its own
    sampling seed, so asking again gives a new sample, and a replay gives the same ones.
    """

    def __init__(self, cfg: LLMConfig, sleep: Callable[[float], None] = time.sleep):
        if cfg.base_url:
            http_url(cfg.base_url, "--llm-base-url", "https://api.openai.com/v1 or "
                     "http://127.0.0.1:8000/v1")
        self.cfg = cfg
        # the endpoint as messages show it: credentials in the URL are masked
        self.shown = redact.redact_url(cfg.base_url) if cfg.base_url else None
        self.cache = ResponseCache(cfg.cache_dir, CACHE_NAMESPACE, answer_problem)
        self._sleep = sleep
        self._secret = os.environ.get("OPENAI_API_KEY") or None
        self._client = None
        self.asked = 0      # requests sent to the endpoint
        self.replayed = 0   # answers read from the cache

    def params(self, n: int) -> dict:
        # A different seed per repeated ask, derived from --seed, so a second ask is a new sample.
        return {"temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens,
                "seed": (self.cfg.seed * 1_000_003 + n) % 2**31}

    def key(self, messages: list[dict], n: int) -> str:
        return request_key(KEY_VERSION, self.cfg.model,
                           json.dumps(messages, sort_keys=True, ensure_ascii=False),
                           json.dumps(self.params(n), sort_keys=True), str(n))

    def ask(self, messages: list[dict], n: int, what: str) -> Answer:
        key = self.key(messages, n)
        entry = None if self.cfg.refresh else self.cache.get(key)
        if entry is not None:
            self.replayed += 1
            # an entry of an older factprobe may hold a secret the server echoed
            return Answer(redact.scrub(entry["response"]["text"]), entry["retrieved"], True)
        if not self.cfg.base_url:
            raise UserError(
                f"no cached answer for {what} (model '{self.cfg.model}', request {n + 1}) in "
                f"{self.cfg.cache_dir} and no --llm-base-url to ask: give --llm-base-url (and "
                f"OPENAI_API_KEY if the endpoint needs one), or --paraphrases 0 to use the "
                f"hand-written templates only")
        params = self.params(n)
        # Only complete answers are stored (atomically): a failure leaves the cache as it was.
        entry = self.cache.retrieve(
            key, lambda: {"text": self._send(messages, params)},
            RetryPolicy(retries=self.cfg.retries), f"{self.shown} ({what})",
            sleep=self._sleep,
            request={"model": self.cfg.model, "messages": messages, "params": params, "n": n})
        self.asked += 1
        return Answer(entry["response"]["text"], entry["retrieved"], False)

    def _openai(self):
        if self._client is None:
            import openai
            # Local servers need no key, but the client insists on one.
            # The hook caps the body as the client reads it (openai reads it whole).
            http = openai.DefaultHttpxClient(
                headers={"Accept-Encoding": ACCEPT_ENCODING},
                event_hooks={"response": [capping_hook(self._max_bytes())]})
            self._client = openai.OpenAI(base_url=self.cfg.base_url,
                                         api_key=self._secret or "EMPTY",
                                         timeout=self.cfg.timeout_s, max_retries=0,
                                         http_client=http)
        return self._client

    def _max_bytes(self) -> int:
        return int(self.cfg.max_answer_mb * MB)

    def _send(self, messages: list[dict], params: dict) -> str:
        import openai
        client = self._openai()
        try:
            resp = bounded(lambda deadline: client.chat.completions.create(
                model=self.cfg.model, messages=messages, **params), self.cfg.timeout_s)
        except openai.APITimeoutError:
            raise Retryable(f"no answer within {self.cfg.timeout_s:g} s (--timeout)") from None
        except (AnswerTooLarge, openai.APIConnectionError) as exc:
            # the size cap is raised inside the HTTP client, which may wrap it
            if cause(exc, AnswerTooLarge):
                raise UserError(too_large_message(
                    f"{self.cfg.base_url}", self._max_bytes(),
                    "check --llm-base-url, or lower --max-tokens")) from None
            if cause(exc, Retryable):
                raise cause(exc, Retryable) from None
            raise Retryable("cannot reach the endpoint") from None
        except openai.APIStatusError as exc:
            code = exc.status_code
            detail = scrub(_body_text(exc), self._secret)
            if code == 429 or code >= 500:
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
                raise Retryable(f"HTTP {code} {detail}".strip(), retry_after) from None
            if code in (401, 403):
                raise UserError(f"{self.shown} refused the request (HTTP {code}): check "
                                f"OPENAI_API_KEY") from None
            raise UserError(f"{self.shown} answered HTTP {code} for model "
                            f"'{self.cfg.model}': {detail}; check --llm-model and "
                            f"--llm-base-url") from None
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise Retryable(f"unreadable answer ({type(exc).__name__})") from None
        except RecursionError:  # the client decodes the body with json, which recurses
            raise Retryable(f"unreadable answer ({jsonsafe.TooDeep()})") from None
        try:
            content = resp.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise Retryable("the answer is not a chat completion") from None
        if not isinstance(content, str):
            # null content (a refusal, a tool call) is no answer to store and replay forever
            raise Retryable("the answer is a chat completion without text")
        # a server that echoes the key (or the URL's password) must not get it stored
        return redact.scrub(content)


def _body_text(exc) -> str:
    try:
        body = exc.response.text
    except Exception:  # a body that cannot be read says nothing more than the status code
        return ""
    try:
        data = jsonsafe.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(err, dict):
            return str(err.get("message", ""))
        return str(err)
    except (json.JSONDecodeError, AttributeError):
        return body
