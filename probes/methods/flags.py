"""argparse types the probes' command-line flags share."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import count


def counts(value: str) -> tuple[int, ...]:
    """A comma-separated list of distinct whole numbers >= 0 (``--seeds``, ``--examples``).

    >>> counts("0, 1,2")
    (0, 1, 2)
    >>> counts("1,1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '1,1' lists 1 twice
    """
    items = tuple(count(v.strip()) for v in value.split(",") if v.strip())
    if not items:
        raise argparse.ArgumentTypeError("empty: give comma-separated whole numbers, e.g. 0,1,2")
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{value!r} lists {twice[0]} twice")
    return items


def nonempty(value: str) -> str:
    """
    >>> nonempty(", ")
    ', '
    >>> nonempty(" ")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: empty
    """
    if not value.strip():
        raise argparse.ArgumentTypeError("empty")
    return value
