"""On-disk response cache shared by every network client (SPARQL, Wikidata API, LLMs).

Entries are JSON files named by a hash of the request, written atomically, so a rebuild replays
exactly what was retrieved and a killed run never leaves a truncated entry behind.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_CACHE_ENV = "FACTPROBE_CACHE_DIR"


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
    """A folder of ``<namespace>/<key[:2]>/<key>.json`` files; ``None`` folder disables it."""

    def __init__(self, folder: str | os.PathLike | None, namespace: str):
        self.folder = Path(folder) / namespace if folder is not None else None

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        if self.folder is None:
            return None
        path = self._path(key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            # A damaged entry is treated as a miss and overwritten by the next answer.
            return None

    def put(self, key: str, payload: Any, **meta: Any) -> dict:
        entry = {"retrieved": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 **meta, "response": payload}
        if self.folder is None:
            return entry
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return entry
