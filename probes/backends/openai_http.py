"""The HTTP side of the ``openai`` kind: one call to an OpenAI-compatible server, its failures
sorted into worth another attempt (:class:`Retryable`: unreachable, 429 with its Retry-After,
5xx, an unreadable answer) or not (:class:`UserError`: a refused key, a bad request).

Each answer runs under ``--timeout`` for the whole of it and under the size cap
(:mod:`factprobe.core.transport`); the key never reaches a message (:mod:`factprobe.core.redact`).
"""
from __future__ import annotations

import json
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
