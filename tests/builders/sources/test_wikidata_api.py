"""factprobe.builders.sources.wikidata_api against a real local HTTP server that speaks wbgetentities."""
from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from tests.wbapi_server import FakeWikidataApi, default_entities

from factprobe.core.errors import UserError
from factprobe.core.retry import RetryPolicy
from factprobe.builders.sources.wikidata_api import EntityNames, fetch_labels_aliases

FAST = RetryPolicy(retries=2, backoff_s=0.01)
CONTACT = "probe-team@example.org"


@pytest.fixture
def api():
    entities, redirects = default_entities()
    server = FakeWikidataApi(entities, redirects).start()
    yield server
    server.stop()


def fetch(api, ids, tmp_path, **kw):
    kw.setdefault("policy", FAST)
    kw.setdefault("progress", False)
    return fetch_labels_aliases(ids, api_url=api.url, cache_dir=tmp_path / "cache",
                                contact=CONTACT, **kw)


def cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").rglob("*.json"))


def test_batches_parameters_and_names(api, tmp_path):
    ids = [f"Q{n}" for n in range(120, 0, -1)]
    got = fetch(api, ids, tmp_path, progress=True)

    assert len(api.requests) == 3
    sent = [qid for r in api.requests for qid in r.ids]
    assert sorted(sent) == sorted(ids) and len(sent) == 120
    for r in api.requests:
        assert r.path == "/w/api.php"
        assert len(r.ids) <= 50
        assert r.params["action"] == "wbgetentities"
        assert r.params["maxlag"] == "5"
        assert r.params["languages"] == "en"
        assert r.params["formatversion"] == "2"
        assert set(r.params["props"].split("|")) == {"labels", "aliases"}
        assert "factprobe" in r.headers["User-Agent"] and CONTACT in r.headers["User-Agent"]

    assert got["Q1"] == EntityNames("item 1", ("alias 1a", "alias 1b"))
    assert got["Q2"] == EntityNames("Zürich", ("東京 test",))
    assert got["Q7"] == EntityNames(None, ())          # only a French label
    assert got["Q11"] == EntityNames("item 11", ())
    assert "Q8" not in got and got.missing == ["Q8"]
    assert got["Q9"] == got["Q100"] == EntityNames("item 100", ("alias 100a", "alias 100b"))
    assert got.redirects == {"Q9": "Q100"}
    assert len(got) == 119
    assert got.retrieval_dates == [time.strftime("%Y-%m-%d", time.gmtime())]


def test_redirect_keyed_under_target(api, tmp_path):
    api.redirect_key = "target"
    got = fetch(api, ["Q9", "Q3"], tmp_path)
    assert got["Q9"] == EntityNames("item 100", ("alias 100a", "alias 100b"))
    assert got.redirects == {"Q9": "Q100"} and got.missing == []


def test_ids_filtered_deduplicated_sorted(api, tmp_path):
    got = fetch(api, ["Q3", "Q3", "P31", "Q0", "Q01", "q4", "foo", "", "Q12 ", "Q1"], tmp_path)
    assert [r.ids for r in api.requests] == [["P31", "Q1", "Q3"]]
    assert got["P31"] == EntityNames("instance of", ("is a", "type"))
    assert set(got) == {"P31", "Q1", "Q3"}


def test_no_ids_no_requests(api, tmp_path):
    assert fetch(api, ["not-an-id"], tmp_path) == {}
    assert api.requests == []


def test_cache_replays_and_refresh_refetches(api, tmp_path):
    ids = [f"Q{n}" for n in range(1, 121)]
    first = fetch(api, ids, tmp_path)
    assert len(api.requests) == 3 and len(cache_files(tmp_path)) == 3

    api.entities.clear()                  # a request now would change the answers
    second = fetch(api, ids, tmp_path)
    assert len(api.requests) == 3
    assert second == first
    assert (second.redirects, second.missing, second.retrieval_dates) == (
        first.redirects, first.missing, first.retrieval_dates)

    third = fetch(api, ids, tmp_path, refresh=True)
    assert len(api.requests) == 6
    assert "Q1" in first and "Q1" not in third and "Q1" in third.missing


def test_cache_key_depends_on_ids_and_url(api, tmp_path):
    fetch(api, ["Q1", "Q2"], tmp_path)
    fetch(api, ["Q1", "Q3"], tmp_path)
    assert len(api.requests) == 2


def test_429_honours_retry_after(api, tmp_path):
    api.fail(1, "429")
    got = fetch(api, ["Q1"], tmp_path)
    assert got["Q1"].label == "item 1"
    assert len(api.requests) == 2
    assert api.requests[1].at - api.requests[0].at >= 1.0


def test_maxlag_honours_retry_after(api, tmp_path):
    api.fail(1, "maxlag")
    got = fetch(api, ["Q1"], tmp_path)
    assert got["Q1"].label == "item 1"
    assert len(api.requests) == 2
    assert api.requests[1].at - api.requests[0].at >= 1.0


def test_non_json_answer_is_retried(api, tmp_path):
    api.fail(1, "html")
    assert fetch(api, ["Q1"], tmp_path)["Q1"].label == "item 1"
    assert len(api.requests) == 2


def test_persistent_500_gives_up(api, tmp_path):
    api.fail(100, "500")
    policy = RetryPolicy(retries=3, backoff_s=0.01)
    start = time.monotonic()
    with pytest.raises(UserError) as err:
        fetch(api, ["Q1"], tmp_path, policy=policy)
    assert time.monotonic() - start < 3
    assert len(api.requests) == policy.retries + 1
    assert api.url in str(err.value) and "HTTP 500" in str(err.value)
    assert cache_files(tmp_path) == []


def test_other_api_error_is_not_retried(api, tmp_path):
    api.fail(5, "apierror")
    with pytest.raises(UserError) as err:
        fetch(api, ["Q1"], tmp_path)
    assert len(api.requests) == 1
    assert "readapidenied" in str(err.value) and "read permission" in str(err.value)
    assert cache_files(tmp_path) == []


def test_failure_mid_run_keeps_earlier_batches_only(api, tmp_path):
    api.script = ["ok"] + ["500"] * (FAST.retries + 1)
    with pytest.raises(UserError):
        fetch(api, [f"Q{n}" for n in range(1, 121)], tmp_path)
    assert len(api.requests) == 1 + FAST.retries + 1
    assert len(cache_files(tmp_path)) == 1
    fetch(api, [f"Q{n}" for n in range(1, 121)], tmp_path)   # resumes: the cached batch is reused
    assert [len(r.ids) for r in api.requests[-2:]] == [50, 20]


def test_unreachable_endpoint(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/w/api.php"
    start = time.monotonic()
    with pytest.raises(UserError) as err:
        fetch_labels_aliases(["Q1"], api_url=url, cache_dir=tmp_path / "cache", policy=FAST,
                             timeout_s=2, progress=False)
    assert time.monotonic() - start < 5
    assert url in str(err.value) and f"after {FAST.retries + 1} attempts" in str(err.value)
    assert cache_files(tmp_path) == []


def test_non_http_url_is_a_user_error(tmp_path):
    with pytest.raises(UserError):
        fetch_labels_aliases(["Q1"], api_url="www.wikidata.org/w/api.php", cache_dir=tmp_path,
                             progress=False)
