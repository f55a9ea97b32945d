"""Checking what a user gives as a service address or contact before any request is built.

A URL or header with a space, a control character or a broken host would otherwise fail deep
inside urllib or requests (``ValueError: Invalid IPv6 URL``, ``InvalidHeader``) or, worse, be
retried as if the service were down.
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from factprobe.core.errors import UserError
from factprobe.core.redact import redact_url

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def http_url(url: str, flag: str, example: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host; else a :class:`UserError` that
    names ``flag`` and shows ``example``. Credentials in it are remembered, to be masked
    wherever they would be printed or written (:mod:`factprobe.core.redact`), this message first.

    >>> http_url("http://127.0.0.1:7878/query", "--endpoint", "http://host:port/query")
    'http://127.0.0.1:7878/query'
    >>> http_url("http://[::1/q", "--endpoint", "http://host:port/query")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: --endpoint 'http://[::1/q' is not a valid URL (Invalid IPv6 URL); give e.g. http://host:port/query
    """
    shown = redact_url(url)
    if _CONTROL.search(url) or " " in url:
        raise UserError(f"{flag} {shown!r} holds a space or control character; give e.g. "
                        f"{example}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is what raises for a bad one
    except ValueError as exc:
        raise UserError(f"{flag} {shown!r} is not a valid URL ({exc}); give e.g. {example}"
                        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"{flag} {shown!r} is not an http(s) URL; give e.g. {example}")
    return url


def header_text(value: str, what: str) -> str:
    """``value`` if it can go into an HTTP header (one line of text).

    >>> header_text("me@example.org", "--contact")
    'me@example.org'
    """
    if _CONTROL.search(value):
        raise UserError(f"{what} must be one line of text without control characters")
    if not value.isascii():
        raise UserError(f"{what} {value!r} must be ASCII (it goes into the HTTP User-Agent "
                        f"header)")
    return value
