"""The response cache stores only answers of the expected shape, and reads back only those."""
from __future__ import annotations

import json

import pytest

from factprobe.core.cache import ResponseCache, request_key
from factprobe.core.errors import UserError
from factprobe.core.retry import RetryPolicy


def has_text(payload) -> str | None:
    return None if isinstance(payload, dict) and isinstance(payload.get("text"), str) else "has no text"


NO_WAIT = RetryPolicy(retries=2, backoff_s=0.0)


def entries(tmp_path) -> list:
    return sorted(tmp_path.rglob("*.json"))


def test_a_good_answer_is_stored_and_replayed(tmp_path):
    cache = ResponseCache(tmp_path, "ns", has_text)
    key = request_key("a", "b")
    entry = cache.retrieve(key, lambda: {"text": "hi"}, NO_WAIT, "asking", endpoint="x")
    assert entry["response"] == {"text": "hi"} and entry["endpoint"] == "x"
    assert cache.get(key) == entry
    assert not list(tmp_path.rglob("*.tmp-*"))


def test_an_answer_of_the_wrong_shape_is_retried_then_refused_and_never_stored(tmp_path):
    cache = ResponseCache(tmp_path, "ns", has_text)
    answers = iter([{"text": None}, {"oops": 1}, {"text": "late"}])
    calls = []

    def call():
        calls.append(1)
        return next(answers)

    # the third attempt is good: retried like a 5xx, and only the good answer is stored
    entry = cache.retrieve("k" * 64, call, NO_WAIT, "asking", sleep=lambda s: None)
    assert entry["response"] == {"text": "late"} and len(calls) == 3
    with pytest.raises(UserError, match="asking failed after 3 attempts: the answer has no text"):
        cache.retrieve("j" * 64, lambda: {"text": 5}, NO_WAIT, "asking", sleep=lambda s: None)
    assert [p.name for p in entries(tmp_path)] == ["k" * 64 + ".json"]


def test_a_narrower_check_applies_to_one_request(tmp_path):
    cache = ResponseCache(tmp_path, "ns", has_text)
    short = lambda p: "is too short" if len(p["text"]) < 3 else None  # noqa: E731
    with pytest.raises(UserError, match="is too short"):
        cache.retrieve("k" * 64, lambda: {"text": "hi"}, RetryPolicy(retries=0), "asking",
                       check=short)
    assert not entries(tmp_path)
    cache.retrieve("k" * 64, lambda: {"text": "hi"}, NO_WAIT, "asking")
    assert cache.get("k" * 64) is not None and cache.get("k" * 64, short) is None


@pytest.mark.parametrize("content", [
    b'{"retrieved": "2024-01-01T00:00:00Z", "resp',                        # truncated
    b'\xff\xfe{}',                                                         # not UTF-8
    b'[1, 2]',                                                             # not an entry
    b'{"response": {"text": "hi"}}',                                       # no date
    b'{"retrieved": "2024-01-01T00:00:00Z", "response": {"text": null}}',  # not an answer
])
def test_a_bad_entry_on_disk_is_a_miss_and_is_overwritten(tmp_path, content):
    cache = ResponseCache(tmp_path, "ns", has_text)
    key = "ab" + "c" * 62
    path = tmp_path / "ns" / "ab" / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert cache.get(key) is None
    cache.retrieve(key, lambda: {"text": "fresh"}, NO_WAIT, "asking")
    assert json.loads(path.read_text())["response"] == {"text": "fresh"}


def test_a_cache_folder_that_is_a_file_is_one_clear_error(tmp_path):
    (tmp_path / "f").write_text("mine")
    with pytest.raises(UserError, match="is a file, not a folder"):
        ResponseCache(tmp_path / "f", "ns", has_text)
    cache = ResponseCache(tmp_path / "d", "ns", has_text)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ns").write_text("in the way")
    with pytest.raises(UserError, match="cannot write the response cache"):
        cache.retrieve("k" * 64, lambda: {"text": "hi"}, NO_WAIT, "asking")
    assert (tmp_path / "f").read_text() == "mine"


def test_no_folder_means_no_cache(tmp_path):
    cache = ResponseCache(None, "ns", has_text)
    entry = cache.retrieve("k" * 64, lambda: {"text": "hi"}, NO_WAIT, "asking")
    assert entry["response"] == {"text": "hi"} and cache.get("k" * 64) is None
