"""The HTTP side of the ``openai`` kind: one call to an OpenAI-compatible server, its failures
sorted into worth another attempt (:class:`Retryable`: unreachable, 429 with its Retry-After,
5xx, an unreadable answer) or not (:class:`UserError`: a refused key, a bad request).

Each answer runs under ``--timeout`` for the whole of it and under the size cap
(:mod:`factprobe.core.transport`); the key never reaches a message (:mod:`factprobe.core.redact`).
"""
from __future__ import annotations

import json
import math
import re
import threading

from factprobe.core import jsonsafe, redact
from factprobe.core.errors import UserError
from factprobe.core.retry import Retryable, parse_retry_after
from factprobe.core.transport import (
    ACCEPT_ENCODING,
    MB,
    AnswerTooLarge,
    bounded,
    capping_hook,
    cause,
    too_large_message,
)


class Client:
    """``get(path)`` and ``post(path, body)`` -> the answer's JSON (a dict)."""

    def __init__(self, base_url: str, key: str | None, timeout_s: float, max_answer_mb: float):
        self.base_url = base_url
        self.shown = redact.redact_url(base_url)
        self.key = key
        self.timeout_s = timeout_s
        self.max_bytes = int(max_answer_mb * MB)
        self._lock = threading.Lock()
        self._client = None

    def _openai(self):
        with self._lock:        # the threads of --concurrency share one connection pool
            if self._client is None:
                import openai
                http = openai.DefaultHttpxClient(
                    headers={"Accept-Encoding": ACCEPT_ENCODING},
                    event_hooks={"response": [capping_hook(self.max_bytes)]})
                # Local servers need no key, but the client insists on one.
                self._client = openai.OpenAI(base_url=self.base_url,
                                             api_key=self.key or "EMPTY",
                                             timeout=self.timeout_s, max_retries=0,
                                             http_client=http)
            return self._client

    def get(self, path: str) -> dict:
        client = self._openai()
        return self._run(lambda deadline: client.get(path, cast_to=object))

    def post(self, path: str, body: dict) -> dict:
        client = self._openai()
        return self._run(lambda deadline: client.post(path, body=body, cast_to=object))

    def _run(self, call) -> dict:
        import openai
        try:
            got = bounded(call, self.timeout_s)
        except openai.APITimeoutError:
            raise Retryable(f"no answer within {self.timeout_s:g} s (--timeout)") from None
        except (AnswerTooLarge, openai.APIConnectionError) as exc:
            if cause(exc, AnswerTooLarge):
                raise UserError(too_large_message(self.shown, self.max_bytes,
                                                  "check --base-url")) from None
            if cause(exc, Retryable):
                raise cause(exc, Retryable) from None
            raise Retryable("cannot reach the server") from None
        except openai.APIStatusError as exc:
            code = exc.status_code
            detail = _detail(exc)
            if code == 429 or code >= 500:
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
                raise Retryable(f"HTTP {code} {detail}".strip(), retry_after) from None
            if code in (401, 403):
                raise UserError(f"{self.shown} refused the request (HTTP {code}): check "
                                f"OPENAI_API_KEY") from None
            raise UserError(f"{self.shown} answered HTTP {code}: {detail}") from None
        except (openai.OpenAIError, ValueError) as exc:   # ValueError: a body that is not JSON
            raise Retryable(f"unreadable answer ({type(exc).__name__})") from None
        except RecursionError:
            raise Retryable(f"unreadable answer ({jsonsafe.TooDeep()})") from None
        if not isinstance(got, dict):
            raise Retryable("the answer is not a JSON object")
        return got


def _detail(exc) -> str:
    """The server's error message, one short line with secrets masked."""
    try:
        body = exc.response.text
        data = jsonsafe.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else data
        text = str(err.get("message", "")) if isinstance(err, dict) else str(err)
    except (json.JSONDecodeError, AttributeError, ValueError, RecursionError):
        text = ""
    except Exception:  # a body that cannot be read says nothing more than the status code
        text = ""
    return " ".join(redact.scrub(text).split())[:200]


_TOKEN_ID = re.compile(r"^token_id:(\d+)$")    # vLLM's return_tokens_as_token_ids


def logprobs_block(got, echo: bool = True) -> dict | None:
    """The completion's ``logprobs`` block, checked (lists of equal length), or None."""
    try:
        lp = got["choices"][0].get("logprobs")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise Retryable("the answer is not a completion") from None
    if lp is None:
        return None
    keys = ("tokens", "token_logprobs", "text_offset")
    if not isinstance(lp, dict) or not all(isinstance(lp.get(k), list) for k in keys):
        raise Retryable("malformed logprobs (no tokens, token_logprobs and text_offset lists)")
    n = len(lp["tokens"])
    if len(lp["token_logprobs"]) != n or len(lp["text_offset"]) != n:
        raise Retryable("malformed logprobs (lists of different lengths)")
    for v in lp["token_logprobs"]:
        if v is not None and (not isinstance(v, (int, float)) or not v <= 0
                              or math.isinf(v)):
            raise Retryable(f"malformed logprobs (a log-probability of {v!r})")
    if not all(isinstance(o, int) and o >= 0 for o in lp["text_offset"]):
        raise Retryable("malformed logprobs (text_offset not counting characters)")
    return lp


def prompt_tokens(got: dict, lp: dict, length: int) -> int:
    """How many of the echoed tokens are the prompt's: the usage's count where the server
    gives one, else those that start inside the prompt's text."""
    usage = got.get("usage")
    n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(n, int) and 0 < n <= len(lp["tokens"]):
        return n
    return sum(1 for o in lp["text_offset"] if o < length)


def token_id(token) -> int:
    """A token's id where the server gives it (vLLM's ``token_id:N``), else -1 (unknown)."""
    m = _TOKEN_ID.match(str(token))
    return int(m.group(1)) if m else -1
