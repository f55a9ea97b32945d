"""Hashes of files and texts, and factprobe's own version: what provenance records and what
tables and caches key on (below both, so neither imports the other)."""
from __future__ import annotations

import hashlib
import os
from importlib import metadata


def factprobe_version() -> str:
    try:
        return metadata.version("factprobe")
    except metadata.PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
