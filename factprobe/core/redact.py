"""Keeping secrets out of everything factprobe prints or writes.

Two kinds of secret reach factprobe: tokens in the environment (``OPENAI_API_KEY``,
``HF_TOKEN``) and credentials inside a URL the user gives (``https://user:pass@host/``, or a
``?api_key=...`` query parameter). :func:`redact_url` is the form of a URL that may be shown or
recorded (messages, ``dataset.json``, provenance, cache entries and keys); it also remembers the
credentials it removed, so that :func:`scrub` masks them, and the environment's tokens, wherever
else they turn up: an LLM server that echoes the key in its answer, an error text that quotes
the URL, a message printed by a library.
"""
from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"
# The variables factprobe reads a secret from (huggingface_hub also reads the second name).
SECRET_ENVS = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# Query parameters that carry a credential by their name, judged by its last word (api_key,
# subscription-key, X-Amz-Signature, access_token...): ``author`` or ``keyword`` are no secret,
# and masking them would make two different requests share one cache key.
_KEYLIKE = re.compile(r"(?i)^(.*[-_.])?(api-?key|apikey|key|token|accesstoken|auth|"
                      r"authorization|secret|password|passwd|pwd|sig|signature|credential|"
                      r"session|sessionid|sessiontoken)$")
# ``scheme://userinfo@`` anywhere in a text (a URL quoted by a library's message).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]+@")
# Shorter values would mask ordinary words everywhere: local servers take any key, and
# OPENAI_API_KEY=EMPTY or =none is common. Real keys are 20+ characters; a short URL password
# is still masked inside the URL itself (redact_url works on its structure).
_MIN_SECRET = 8
_seen: set[str] = set()


def remember(value: str | None) -> None:
    """Mask ``value`` (and its %-encoded forms) from now on."""
    if value and len(value) >= _MIN_SECRET:
        _seen.update({value, unquote(value), quote(value, safe="")})


def known() -> list[str]:
    """Every secret to mask, longest first (so a secret holding another is masked whole)."""
    found = set(_seen)
    for name in SECRET_ENVS:
        value = os.environ.get(name, "")
        if len(value) >= _MIN_SECRET:
            found.add(value)
    return sorted(found, key=lambda s: (-len(s), s))


def redact_url(url: str) -> str:
    """``url`` with its password or user info and key-like query values masked (and
    remembered for :func:`scrub`); unchanged, character for character, when it holds none.

    >>> redact_url("https://me:s3cret@host:8080/sparql?x=1&api_key=abcd1234")
    'https://***@host:8080/sparql?x=1&api_key=***'
    >>> redact_url("https://query.wikidata.org/sparql?format=json")
    'https://query.wikidata.org/sparql?format=json'
    >>> redact_url("http://h/v1#access_token=abcd1234")
    'http://h/v1#access_token=***'
    >>> redact_url("http://h/q?author=me&keyword=x&X-Amz-Signature=abcd&subscription-key=efgh")
    'http://h/q?author=me&keyword=x&X-Amz-Signature=***&subscription-key=***'
    """
    try:
        parts = urlsplit(url)
    except ValueError:      # not a URL: nothing structured to redact, but userinfo-like text
        return _USERINFO.sub(lambda m: m.group(1) + MASK + "@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        remember(password or user)
        remember(userinfo)
        netloc = f"{MASK}@{hostport}"
    query, fragment = _mask_pairs(parts.query), _mask_pairs(parts.fragment)
    if netloc == parts.netloc and query == parts.query and fragment == parts.fragment:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _mask_pairs(text: str) -> str:
    """``a=1&api_key=s`` with the values of key-like names masked (and remembered); a fragment
    too, where OAuth's implicit flow puts ``#access_token=...``."""
    if "=" not in text:
        return text
    masked = []
    for piece in text.split("&"):
        name, eq, value = piece.partition("=")
        if eq and value and _KEYLIKE.match(unquote(name).replace("_", "-")):
            remember(value)
            piece = f"{name}={MASK}"
        masked.append(piece)
    return "&".join(masked)


def is_redacted(url: str) -> bool:
    """Whether ``url`` is a form :func:`redact_url` masked (its credentials are gone).

    >>> is_redacted("https://***@host/sparql"), is_redacted("https://host/sparql")
    (True, False)
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.netloc.startswith(MASK + "@") or any(
        v == MASK for text in (parts.query, parts.fragment)
        for _, v in parse_qsl(text, keep_blank_values=True))


def scrub(text: str) -> str:
    """``text`` with every known secret and any URL's user info masked.

    >>> remember("sk-live-0123456789")
    >>> scrub("key sk-live-0123456789 at http://u:p@h/x")
    'key *** at http://***@h/x'
    """
    for secret in known():
        if secret in text:
            text = text.replace(secret, MASK)
    if "@" in text:
        text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return text
