"""Decoding JSON that came from outside (a server, a file, a cache) without a traceback.

Python's ``json`` (and ``msgspec``) decode nested arrays and objects by recursion: an answer
nested 200,000 deep (``[[[[...``, a few hundred kilobytes) ends in ``RecursionError``, which no
``except ValueError`` catches. Text nested a few hundred deep decodes, but then breaks whatever
walks it next (``json.dump`` into the cache, a manifest copied into provenance). :func:`loads`
turns both into :class:`TooDeep`, a ``json.JSONDecodeError``, so every reader's existing "not
JSON" handling gives its one-line message; no JSON this project reads nests beyond a dozen
levels, hence the limit of :data:`MAX_DEPTH`.
"""
from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 100


class TooDeep(json.JSONDecodeError):
    """JSON nested deeper than :data:`MAX_DEPTH` levels (or than the decoder can follow)."""

    def __init__(self, doc: Any = ""):
        ValueError.__init__(self, f"JSON nested deeper than {MAX_DEPTH} levels")
        self.msg, self.doc, self.pos, self.lineno, self.colno = str(self), doc, 0, 1, 1


_CONTAINERS = (dict, list)


def depth_ok(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (decoded JSON: plain dicts and lists) nests at most ``limit``
    arrays/objects deep. Walked level by level, not by recursion, so any depth can be asked
    about; on a 200,000-row SPARQL answer it costs a fifth of decoding it.

    >>> depth_ok({"a": [1, {"b": []}]}, 4), depth_ok({"a": [1, {"b": []}]}, 3)
    (True, False)
    """
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return False
        level = [c for node in level for c in (node.values() if type(node) is dict else node)
                 if type(c) in _CONTAINERS]
    return True


_BRACKETS = re.compile(r"[\[\]{}]")


def text_depth_ok(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the brackets of ``text`` (any text, JSON or not) nest at most ``limit`` deep;
    brackets inside strings count too, which only errs on the side of refusing.

    >>> text_depth_ok('Sure: ["a [b]", {"c": []}]', 3), text_depth_ok("[" * 101)
    (True, False)
    """
    if text.count("[") + text.count("{") <= limit:
        return True
    depth = 0
    for m in _BRACKETS.finditer(text):
        if m.group() in "[{":
            depth += 1
            if depth > limit:
                return False
        elif depth:
            depth -= 1
    return True


def check_depth(value: Any) -> Any:
    """``value`` itself, or :class:`TooDeep` when it nests deeper than :data:`MAX_DEPTH`."""
    if not depth_ok(value):
        raise TooDeep()
    return value


def loads(data: str | bytes | bytearray, decode=json.loads) -> Any:
    """``decode(data)`` (``json.loads`` unless given, e.g. ``orjson.loads``), with JSON nested
    too deeply refused as :class:`TooDeep`.

    >>> loads('{"a": [1]}')
    {'a': [1]}
    >>> loads("[" * 200000 + "]" * 200000)
    Traceback (most recent call last):
    ...
    factprobe.core.jsonsafe.TooDeep: JSON nested deeper than 100 levels
    """
    try:
        value = decode(data)
    except RecursionError:
        raise TooDeep() from None
    except json.JSONDecodeError as exc:
        # orjson stops at 1024 levels with its own JSONDecodeError: the same refusal
        if "depth" in str(exc) or "recursion" in str(exc):
            raise TooDeep() from None
        raise
    # fewer opening brackets than the limit cannot nest past it: most lines need no walk
    opening = (b"[", b"{") if isinstance(data, (bytes, bytearray)) else ("[", "{")
    if data.count(opening[0]) + data.count(opening[1]) <= MAX_DEPTH:
        return value
    return check_depth(value)


def yaml_load(text: str) -> Any:
    """``yaml.safe_load(text)`` with YAML (a superset of JSON) nested too deeply for its
    recursive parser refused as a ``yaml.YAMLError`` whose ``problem`` says so.

    >>> yaml_load("a: [1]")
    {'a': [1]}
    >>> yaml_load("[" * 100000 + "]" * 100000)
    Traceback (most recent call last):
    ...
    yaml.error.YAMLError: nested too deeply
    """
    import yaml
    try:
        return yaml.safe_load(text)
    except RecursionError:
        exc = yaml.YAMLError("nested too deeply")
        exc.problem = "nested too deeply"
        raise exc from None


def read(path, decode=json.loads) -> Any:
    """The decoded JSON in the file ``path`` (UTF-8): ``OSError``, ``UnicodeDecodeError`` or
    ``json.JSONDecodeError`` (:class:`TooDeep` among them) for a file that is none."""
    from pathlib import Path
    return loads(Path(path).read_bytes().decode("utf-8"), decode)
