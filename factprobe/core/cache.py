"""On-disk response cache shared by every network client (SPARQL, Wikidata API, LLMs).

Entries are JSON files named by a hash of the request, written atomically, so a rebuild replays
exactly what was retrieved and a killed run never leaves a truncated entry behind.

Only answers of the expected shape are ever stored: :meth:`ResponseCache.retrieve` checks an
answer before it writes it, so a malformed answer (an error page, JSON of another service) is
retried and reported, never replayed by every later run. An entry already on disk that fails
the same check (damaged, or written by an older factprobe that stored without checking) is a
miss: it is fetched again and overwritten.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from factprobe.core import atomic
from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.retry import Retryable, RetryPolicy, with_retries

DEFAULT_CACHE_ENV = "FACTPROBE_CACHE_DIR"

# Why a payload is not a usable answer (one short phrase), or None when it is.
Check = Callable[[Any], "str | None"]


def default_cache_dir() -> Path:
    env = os.environ.get(DEFAULT_CACHE_ENV)
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "factprobe"


def request_key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


class ResponseCache:
    """A folder of ``<namespace>/<key[:2]>/<key>.json`` files; ``None`` folder disables it.

    ``check`` says why an answer is unusable (or None): it guards both what is written and
    what is read back.
    """

    def __init__(self, folder: str | os.PathLike | None, namespace: str, check: Check):
        if folder is not None and Path(folder).exists() and not Path(folder).is_dir():
            raise UserError(f"the response cache {folder} is a file, not a folder; pass "
                            f"--cache-dir a folder (or set ${DEFAULT_CACHE_ENV})")
        self.root = Path(folder) if folder is not None else None
        self.folder = self.root / namespace if self.root is not None else None
        self.check = check

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str, check: Check | None = None) -> dict | None:
        """The entry for ``key``, or None: absent, unreadable, or failing ``check`` (default:
        the cache's own); ``check`` narrows it further for one request."""
        if self.folder is None:
            return None
        try:
            entry = jsonsafe.loads(self._path(key).read_bytes().decode("utf-8"))
        except (OSError, ValueError):  # absent, unreadable, not UTF-8, not JSON: a miss
            return None
        if (not isinstance(entry, dict) or not isinstance(entry.get("retrieved"), str)
                or "response" not in entry or self.check(entry["response"]) is not None
                or (check is not None and check(entry["response"]) is not None)):
            return None
        return entry

    def retrieve(self, key: str, call: Callable[[], Any], policy: RetryPolicy, what: str, *,
                 check: Check | None = None, sleep: Callable[[float], None] = time.sleep,
                 **meta: Any) -> dict:
        """Run ``call`` (with bounded retries) until its answer passes the checks, store it,
        and return the new entry. An answer that never does is a :class:`UserError`."""

        def checked() -> Any:
            payload = call()
            problem = self.check(payload) or (check(payload) if check is not None else None)
            if problem is not None:
                raise Retryable(f"the answer {problem}")
            return payload

        return self._put(key, with_retries(checked, policy, what, sleep=sleep), **meta)

    def put(self, key: str, payload: Any, **meta: Any) -> dict:
        """Store an answer computed here rather than fetched (the same check guards it)."""
        problem = self.check(payload)
        if problem is not None:
            raise ValueError(f"refusing to cache an answer that {problem}")
        return self._put(key, payload, **meta)

    def _put(self, key: str, payload: Any, **meta: Any) -> dict:
        entry = {"retrieved": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 **meta, "response": payload}
        if self.folder is None:
            return entry
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(path, json.dumps(entry, ensure_ascii=False))
        except OSError as exc:  # a read-only or full disk, a file where a folder should be
            raise UserError(f"cannot write the response cache in {self.root} "
                            f"({exc.strerror or type(exc).__name__}); pass --cache-dir a "
                            f"writable folder") from None
        return entry
