"""argparse ``type=`` converters shared by every ``factprobe`` sub-command.

They raise ``argparse.ArgumentTypeError`` so a bad value ends as argparse's one-line usage error
(exit 2) rather than a traceback.
"""
from __future__ import annotations

import argparse


def count(value: str) -> int:
    """A whole number >= 0.

    >>> count("12")
    12
    >>> count("-1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '-1' must be >= 0
    """
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be >= 0")
    return n


def positive(value: str) -> int:
    """A whole number >= 1.

    >>> positive("3")
    3
    >>> positive("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '0' must be >= 1
    """
    n = count(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be >= 1")
    return n


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None


MAX_SECONDS = 86_400.0  # a day: sockets refuse timeouts near the float range, and no request
                        # a build makes is worth waiting longer for


def seconds(value: str) -> float:
    """A duration in seconds, > 0 and at most a day.

    >>> seconds("2.5")
    2.5
    >>> seconds("-1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '-1' must be a number of seconds > 0
    >>> seconds("1e300")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '1e300' is more than a day (86400 s)
    """
    x = _number(value)
    if not x > 0 or x != x or x == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} must be a number of seconds > 0")
    if x > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{value!r} is more than a day ({MAX_SECONDS:.0f} s)")
    return x


MAX_MEGABYTES = 1 << 20  # a terabyte: beyond any answer worth holding in memory


def megabytes(value: str) -> float:
    """A size in MB, > 0 and at most a terabyte.

    >>> megabytes("0.5")
    0.5
    >>> megabytes("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '0' must be a number of MB > 0
    """
    x = _number(value)
    if not 0 < x <= MAX_MEGABYTES:
        raise argparse.ArgumentTypeError(
            f"{value!r} must be a number of MB > 0" if not x > 0 else
            f"{value!r} is more than a terabyte ({MAX_MEGABYTES} MB)")
    return x


def temperature(value: str) -> float:
    """A sampling temperature: a finite number >= 0.

    >>> temperature("0.7")
    0.7
    >>> temperature("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'nan' must be a number >= 0
    """
    x = _number(value)
    if not 0 <= x < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} must be a number >= 0")
    return x


def positive_float(value: str) -> float:
    """A finite number > 0 (a learning rate, a scale).

    >>> positive_float("2e-3")
    0.002
    >>> positive_float("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '0' must be a number > 0
    """
    x = _number(value)
    if not 0 < x < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} must be a number > 0")
    return x


def fraction(value: str) -> float:
    """A number in (0, 1].

    >>> fraction("0.7")
    0.7
    >>> fraction("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '0' must be in (0, 1]
    """
    x = _number(value)
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be in (0, 1]")
    return x


def relation_list(value: str) -> tuple[str, ...] | None:
    """Comma-separated relation ids, or ``all`` (None: no filter).

    >>> relation_list(" P19, P36 ,")
    ('P19', 'P36')
    >>> relation_list("ALL") is None
    True
    """
    if value.strip().lower() == "all":
        return None
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    if not names:
        raise argparse.ArgumentTypeError("empty: give a comma-separated list or 'all'")
    return names
