"""The paraphrase builder against a local OpenAI-compatible server with scripted answers:
parsing, filters and their counts, asking again, retries, the cache replay, the review, and the
API key never leaving the process."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.errors import UserError
from factprobe.builders.templates.filters import FilterConfig
from factprobe.builders.templates.llm import ChatClient, LLMConfig
from factprobe.builders.templates.paraphrase import TemplatesConfig, build_templates
from tests.llm_server import ScriptedChat, user_message

ONE_RELATION = """relation: "ex:capital"
label: capital
description: seat of government of a country
subject_category: country
object_category: city
templates:
  - {id: m1, style: statement, text: "The capital of [X] is [Y]."}
  - {id: m2, style: question, text: "What is the capital of [X]? [Y]."}
  - {id: m3, style: check, text: "[Y] is the capital of [X]. True or false?"}
"""

# Answers in the order the builder asks: m1 three times, then m2 three times (m3 is a
# fact-checking frame and is not paraphrased).
SCRIPT = [
    # m1, ask 1 (3 wanted): fenced, with trailing text, and one of each kind of bad item
    '```json\n["[Y] is where the government of [X] sits.", "the capital of [X] is [Y]", '
    '"The capital of [X] is [Y] city.", "[X] has no capital.", 42, '
    '"[X]\'s seat of power is [Y]."]\n```\nHope this helps!',
    # m1, ask 2 (1 wanted): prose, not a list
    "I cannot help with that.",
    # m1, ask 3 (1 wanted): a generous answer; the surplus item is not needed
    '["[X] is governed from [Y].", "[Y] hosts the parliament of [X]."]',
    # m2, ask 1 (3 wanted)
    '["Which city is the capital of [X]?", "Name the capital of [X].", '
    '"What is the capital of [X]?", "What city serves as the seat of government of [X]?", '
    '"Where is [Y] located?"]',
    # m2, ask 2 (2 wanted): empty answer
    "",
    # m2, ask 3 (2 wanted): one more, then the cap of 3 asks is reached: 1 missing
    '["In which city does the government of [X] sit?"]',
]

EXPECTED = [
    ("ex:capital/m1", "statement", "manual", "", "The capital of [X] is [Y]."),
    ("ex:capital/m1/p01", "statement", "llm:scripted", "ex:capital/m1",
     "[Y] is where the government of [X] sits."),
    ("ex:capital/m1/p02", "statement", "llm:scripted", "ex:capital/m1",
     "[X]'s seat of power is [Y]."),
    ("ex:capital/m1/p03", "statement", "llm:scripted", "ex:capital/m1",
     "[X] is governed from [Y]."),
    ("ex:capital/m2", "question", "manual", "", "What is the capital of [X]? [Y]."),
    ("ex:capital/m2/p01", "question", "llm:scripted", "ex:capital/m2",
     "What city serves as the seat of government of [X]? [Y]."),
    ("ex:capital/m2/p02", "question", "llm:scripted", "ex:capital/m2",
     "In which city does the government of [X] sit? [Y]."),
    ("ex:capital/m3", "check", "manual", "", "[Y] is the capital of [X]. True or false?"),
]


@pytest.fixture
def templates_dir(tmp_path) -> Path:
    d = tmp_path / "templates"
    d.mkdir()
    (d / "ex_capital.yaml").write_text(ONE_RELATION)
    return d


def _cfg(tmp_path, templates_dir, base_url, **kw) -> TemplatesConfig:
    llm = LLMConfig(model="scripted", base_url=base_url, cache_dir=str(tmp_path / "cache"),
                    retries=kw.pop("retries", 2), timeout_s=kw.pop("timeout_s", 10.0))
    return TemplatesConfig(out=str(tmp_path / kw.pop("out", "out")),
                           templates_dir=str(templates_dir), paraphrases=3, max_requests=3,
                           llm=llm, progress=False, **kw)


def test_parsing_filters_asking_again_and_replay(tmp_path, templates_dir):
    with ScriptedChat(SCRIPT) as server:
        out, summary = build_templates(_cfg(tmp_path, templates_dir, server.url))
        requests = list(server.requests)
    rows = pq.read_table(out / "templates.parquet").to_pylist()
    assert [(r["template_id"], r["style"], r["origin"], r["parent_id"], r["template"])
            for r in rows] == EXPECTED
    assert all(r["relation_id"] == "ex:capital" for r in rows)

    # asked for what was still missing, with a new seed on every ask
    asked = [user_message(r) for r in requests]
    assert len(asked) == 6
    assert ["Write 3" in a for a in asked] == [True, False, False, True, False, False]
    assert "Write 1 different paraphrases" in asked[1] and "Write 2 different questions" in asked[4]
    assert "Template: The capital of [X] is [Y]." in asked[0]
    assert "Question: What is the capital of [X]?" in asked[3] and "[Y]." not in asked[3].split(
        "Question:")[1].splitlines()[0]
    # the relation's meaning and categories travel with every request
    assert all("capital (seat of government of a country)" in a and "a country" in a and
               "a city" in a for a in asked)
    seeds = [r["json"]["seed"] for r in requests]
    assert len(set(seeds[:3])) == 3
    assert {r["json"]["model"] for r in requests} == {"scripted"}

    manifest = json.loads((out / "dataset.json").read_text())
    counts = manifest["counts"]
    assert counts["dropped"] == {"not_text": 1, "placeholders": 1, "y_not_last": 0,
                                 "not_a_question": 2, "too_short": 0, "too_long": 0,
                                 "duplicate": 2, "bleu": 2}
    assert counts["not_a_list"] == 2 and counts["requests"] == 6
    assert counts["shortfall"] == {"ex:capital/m2": 1} and counts["missing"] == 1
    assert summary["asked"] == 6 and summary["shortfall"] == {"ex:capital/m2": 1}

    # a rebuild without an endpoint replays the cache: same bytes, no request
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with ScriptedChat([]) as silent:
        cfg = _cfg(tmp_path, templates_dir, None)
        out2, summary2 = build_templates(cfg)
        assert silent.requests == []
    assert summary2["replayed"] == 6 and summary2["asked"] == 0
    assert {p.name: p.read_bytes() for p in out2.iterdir()} == before
    # cache entries are small JSON files holding the request and the answer only
    entries = list((tmp_path / "cache" / "chat").rglob("*.json"))
    assert len(entries) == 6
    for e in entries:
        data = json.loads(e.read_text())
        assert set(data) == {"retrieved", "request", "response"}
        assert set(data["response"]) == {"text"}


def test_retries_on_429_and_5xx_honour_retry_after(tmp_path, templates_dir):
    waits = []
    script = [("status", 429, {"Retry-After": "0"}, '{"error": {"message": "slow down"}}'),
              ("status", 503, {"Retry-After": "0"}, "overloaded"),
              '["[Y] is where the government of [X] sits."]']
    with ScriptedChat(script, default=lambda req: "[]") as server:
        cfg = _cfg(tmp_path, templates_dir, server.url)
        client = ChatClient(cfg.llm, sleep=waits.append)
        answer = client.ask([{"role": "user", "content": "hi"}], 0, "test")
        assert answer.text == '["[Y] is where the government of [X] sits."]'
        assert len(server.requests) == 3
    assert waits == [0.0, 0.0]


def test_failing_endpoint_is_one_error_and_leaves_the_cache_clean(tmp_path, templates_dir):
    script = [("status", 500, {}, "boom")] * 3
    with ScriptedChat(script) as server:
        with pytest.raises(UserError, match="failed after 3 attempts: HTTP 500"):
            client = ChatClient(_cfg(tmp_path, templates_dir, server.url).llm,
                                sleep=lambda s: None)
            client.ask([{"role": "user", "content": "hi"}], 0, "test")
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.json"))


def test_not_a_chat_completion_is_retried_then_reported(tmp_path, templates_dir):
    script = [("raw", "<html>proxy error</html>")] * 2
    with ScriptedChat(script) as server:
        client = ChatClient(_cfg(tmp_path, templates_dir, server.url, retries=1).llm,
                            sleep=lambda s: None)
        with pytest.raises(UserError, match="after 2 attempts"):
            client.ask([{"role": "user", "content": "hi"}], 0, "test")


def test_cache_miss_without_endpoint(tmp_path, templates_dir):
    with pytest.raises(UserError, match="no cached answer for ex:capital/m1"):
        build_templates(_cfg(tmp_path, templates_dir, None))
    assert not (tmp_path / "out").exists()


def test_api_key_is_sent_but_never_stored_or_shown(tmp_path, templates_dir, monkeypatch):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    with ScriptedChat(default=lambda req: '["[Y] is where the government of [X] sits."]'
                      ) as server:
        out, _ = build_templates(_cfg(tmp_path, templates_dir, server.url))
        assert server.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    stored = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert stored and not any(secret.encode() in b or b"SECRET" in b for b in stored)
    # an endpoint that echoes the key in its error: the message masks it
    echo = ('{"error": {"message": "Incorrect API key provided: ' + secret + '"}}')
    with ScriptedChat([("status", 401, {}, echo), ("status", 400, {}, echo)]) as server:
        client = ChatClient(_cfg(tmp_path, templates_dir, server.url).llm)
        with pytest.raises(UserError) as err:
            client.ask([{"role": "user", "content": "x"}], 0, "test")
        assert "OPENAI_API_KEY" in str(err.value) and "SECRET" not in str(err.value)
        with pytest.raises(UserError) as err:
            client.ask([{"role": "user", "content": "y"}], 0, "test")
        assert "HTTP 400" in str(err.value) and "SECRET" not in str(err.value)


def test_review_out_then_in(tmp_path, templates_dir):
    with ScriptedChat(SCRIPT) as server:
        build_templates(_cfg(tmp_path, templates_dir, server.url,
                             review_out=str(tmp_path / "review.csv")))
    text = (tmp_path / "review.csv").read_text()
    lines = text.splitlines()
    assert lines[0] == "decision,template_id,relation_id,style,origin,template"
    assert len(lines) == 1 + len(EXPECTED) and all(ln.startswith("keep,") for ln in lines[1:])
    (tmp_path / "review.csv").write_text(text.replace("keep,ex:capital/m1/p02,", "drop,"
                                                      "ex:capital/m1/p02,"))
    out, _ = build_templates(_cfg(tmp_path, templates_dir, None, out="reviewed",
                                  review_in=str(tmp_path / "review.csv")))
    ids = pq.read_table(out / "templates.parquet").column("template_id").to_pylist()
    assert ids == [e[0] for e in EXPECTED if e[0] != "ex:capital/m1/p02"]
    review = json.loads((out / "dataset.json").read_text())["counts"]["review"]
    assert review == {"kept": len(EXPECTED) - 1, "dropped": 1, "unreviewed": 0}


def test_y_last_filter(tmp_path, templates_dir):
    with ScriptedChat(SCRIPT) as server:
        cfg = _cfg(tmp_path, templates_dir, server.url)
        cfg = TemplatesConfig(**{**cfg.__dict__, "filters": FilterConfig(y_last=True)})
        out, _ = build_templates(cfg)
    rows = pq.read_table(out / "templates.parquet").to_pylist()
    llm_rows = [r["template"] for r in rows if r["origin"] != "manual"]
    assert "[Y] is where the government of [X] sits." not in llm_rows
    assert json.loads((out / "dataset.json").read_text())["counts"]["dropped"]["y_not_last"] >= 1


def test_env_key_absent_uses_placeholder(tmp_path, templates_dir, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedChat(default=lambda req: "[]") as server:
        ChatClient(_cfg(tmp_path, templates_dir, server.url).llm).ask(
            [{"role": "user", "content": "x"}], 0, "t")
        assert server.requests[0]["headers"]["authorization"] == "Bearer EMPTY"
    assert os.environ.get("OPENAI_API_KEY") is None


def test_a_failed_rebuild_leaves_the_cache_and_dataset_as_they_were(tmp_path, templates_dir):
    with ScriptedChat(SCRIPT) as server:
        out, _ = build_templates(_cfg(tmp_path, templates_dir, server.url))
    cache = tmp_path / "cache"
    before = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    dataset = {p.name: p.read_bytes() for p in out.iterdir()}
    # four paraphrases each: the first asks replay, the first new ask fails for good
    with ScriptedChat(default=lambda req: ("status", 500, {}, "down")) as server:
        cfg = _cfg(tmp_path, templates_dir, server.url, retries=0)
        cfg = TemplatesConfig(**{**cfg.__dict__, "paraphrases": 4})
        with pytest.raises(UserError, match="HTTP 500"):
            build_templates(cfg)
    assert {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()} == before
    assert {p.name: p.read_bytes() for p in out.iterdir()} == dataset
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
