"""URL credentials and the environment's tokens are masked; nothing else is."""
from __future__ import annotations

import pytest

from factprobe.core import redact
from factprobe.core.cache import request_key


@pytest.mark.parametrize("url", [
    "https://query.wikidata.org/sparql",
    "https://www.wikidata.org/w/api.php?format=json&author=me&keyword=x",
    "http://127.0.0.1:7878/query",
    "https://api.openai.com/v1",
])
def test_a_url_without_credentials_is_kept_as_is(url):
    # the cache key is made from the redacted URL: ordinary URLs keep the keys they had
    assert redact.redact_url(url) == url
    assert request_key(redact.redact_url(url), "q") == request_key(url, "q")


@pytest.mark.parametrize("url, shown, secret", [
    ("http://me:pw-1234567@h/q", "http://***@h/q", "pw-1234567"),
    ("http://sk-abcdefgh123@h/v1", "http://***@h/v1", "sk-abcdefgh123"),
    ("http://me:p%40ssword9@h/q", "http://***@h/q", "p@ssword9"),
    ("http://h/q?api_key=k-12345678&x=1", "http://h/q?api_key=***&x=1", "k-12345678"),
    ("http://h/v1?api-key=k-12345678", "http://h/v1?api-key=***", "k-12345678"),
    ("http://h/q?X-Amz-Signature=abcdef0123", "http://h/q?X-Amz-Signature=***", "abcdef0123"),
    ("http://h/v1#access_token=t-12345678", "http://h/v1#access_token=***", "t-12345678"),
])
def test_credentials_are_masked_and_remembered(url, shown, secret):
    assert redact.redact_url(url) == shown
    assert redact.is_redacted(shown)
    assert secret not in redact.scrub(f"the server said {secret} to us")


def test_short_placeholder_keys_mask_nothing(monkeypatch):
    """Local servers take any key: OPENAI_API_KEY=EMPTY must not mask the word everywhere."""
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    monkeypatch.setenv("HF_TOKEN", "hf_Zx8Cv7Bn6Mm5Ll4Kk3Jj")
    text = "EMPTY set, none at all; token hf_Zx8Cv7Bn6Mm5Ll4Kk3Jj"
    assert redact.scrub(text) == "EMPTY set, none at all; token ***"


def test_user_info_quoted_in_any_text_is_masked():
    assert redact.scrub("cannot reach http://u:x@h:1/q (refused)") == \
        "cannot reach http://***@h:1/q (refused)"
