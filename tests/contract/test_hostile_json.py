"""JSON nested too deeply, wherever factprobe reads JSON: a SPARQL answer, a Wikidata API
answer, an LLM response body and an LLM message's text (from a real local server), a T-REx
line (with and without orjson), an FKTC import, a Wikidata dump line, a LPAQA template file, a
dataset's ``dataset.json``, a Hub layout file, a model's ``config.json``, ``run.json`` and
``planted.json`` read by report and merge, and YAML (a superset of JSON: template files,
``--card-meta``). Each ends in one line and exit 2 (the harness's
contract: no traceback, nothing of the workspace changed), never a ``RecursionError``; a
deep answer is never cached. Then: a deep cache entry on disk is a miss, not a crash, and
``build templates --refresh`` replaces cached answers.

(A table: one row per case, read row by row.)
"""
from __future__ import annotations

import bz2
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq
import pytest

from tests import wikidata_dump_fixture as fx
from tests.conftest import WIKIDATA_MINI
from tests.contract.harness import Case, check, expand, run, snapshot
from tests.contract.hostile import (  # noqa: F401 (fixtures)
    server,
    DEEP_ARRAY,
    DEEP_OBJECT,
    FixedAnswer,
    chat_completion,
    hide_orjson,
    medium,
)

NEW_OK = lambda p: p.startswith(".cache-factprobe")  # noqa: E731 - a failed run may fill the cache
YAML = 'relation: P1\ntemplates:\n  - {id: m1, style: statement, text: "[X] is in [Y]."}\n'
TREX_OK = '{"sub_uri": "Q1", "sub_label": "a", "obj_uri": "Q2", "obj_label": "b"}\n'
RESULTS = {"head": {"vars": ["s", "o"]}, "results": {"bindings": []}}


def put(rel: str, data: str | bytes) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return setup


def copy_with(src: str, dst: str, rel: str, data: str) -> Callable[[Path], None]:
    """A copy of the workspace's ``src`` folder as ``dst`` with the file ``rel`` replaced."""
    def setup(ws: Path) -> None:
        shutil.copytree(ws / src, ws / dst)
        (ws / dst / rel).write_text(data, encoding="utf-8")
    return setup


def deepen(src: str, dst: str, rel: str) -> Callable[[Path], None]:
    """A copy of ``src`` whose JSON file ``rel`` gains a key nested 500 deep."""
    def setup(ws: Path) -> None:
        shutil.copytree(ws / src, ws / dst)
        p = ws / dst / rel
        p.write_text(medium(json.loads(p.read_text(encoding="utf-8"))), encoding="utf-8")
    return setup


def both(*setups: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        for s in setups:
            s(ws)
    return setup


@dataclass(frozen=True)
class Served:
    """A case whose command talks to the local server, which answers ``body``."""
    case: Case
    body: str = ""
    ctype: str = "application/json"


def sparql(*args: str) -> tuple[str, ...]:
    return ("build", "facts", "--source", "sparql", "--endpoint", "{srv}/query", "--relations",
            "P36", "--retries", "0", "--out", "out", *args)


def templates(*args: str) -> tuple[str, ...]:
    return ("build", "templates", "--templates-dir", "td", "--paraphrases", "1", "--llm-model",
            "m", "--llm-base-url", "{srv}/v1", "--retries", "0", "--cache-dir",
            ".cache-factprobe/llm", "--out", "out", *args)


SPARQL_TYPE = "application/sparql-results+json"
SERVED = [
    Served(Case("sparql-answer-deep-array", sparql(), ("nested",)), DEEP_ARRAY, SPARQL_TYPE),
    Served(Case("sparql-answer-deep-object", sparql(), ("nested",)), DEEP_OBJECT, SPARQL_TYPE),
    Served(Case("sparql-answer-500-deep-in-an-extra-key", sparql(), ("nested",)),
           medium(RESULTS), SPARQL_TYPE),
    Served(Case("nobel-sparql-answer-deep", ("build", "nobel", "--endpoint", "{srv}/query",
                                             "--retries", "0", "--out", "out"), ("nested",)),
           DEEP_ARRAY, SPARQL_TYPE),
    Served(Case("aliases-graph-answer-deep",
                ("build", "aliases", "--facts", "wdfacts", "--via", "graph", "--endpoint",
                 "{srv}/query", "--retries", "0", "--out", "out"), ("nested",)),
           DEEP_OBJECT, SPARQL_TYPE),
    Served(Case("wikidata-api-answer-deep",
                ("build", "aliases", "--facts", "wdfacts", "--api-url", "{srv}/w/api.php",
                 "--retries", "0", "--out", "out"), ("nested",)), DEEP_ARRAY),
    Served(Case("wikidata-api-answer-500-deep",
                ("build", "aliases", "--facts", "wdfacts", "--api-url", "{srv}/w/api.php",
                 "--retries", "0", "--out", "out"), ("nested",)), medium({"entities": {}})),
    Served(Case("llm-body-deep", templates(), ("nested",), setup=put("td/P1.yaml", YAML)),
           DEEP_ARRAY),
    Served(Case("llm-body-deep-object", templates(), ("nested",),
                setup=put("td/P1.yaml", YAML)), DEEP_OBJECT),
    Served(Case("llm-body-deep-in-usage", templates(), ("nested",),
                setup=put("td/P1.yaml", YAML)),
           chat_completion("[]")[:-1] + ', "usage": ' + DEEP_ARRAY + "}"),
    Served(Case("llm-content-deep-list", templates(), ("nested",),
                setup=put("td/P1.yaml", YAML)), chat_completion(DEEP_ARRAY)),
    Served(Case("llm-content-unclosed-brackets", templates(), ("nested",),
                setup=put("td/P1.yaml", YAML)), chat_completion("[" * 200_000)),
    Served(Case("llm-content-deep-after-a-sentence", templates(), ("nested",),
                setup=put("td/P1.yaml", YAML)),
           chat_completion('Sure! ["[X] is in [Y]."] and ' + DEEP_OBJECT)),
]

TREX = ("build", "facts", "--source", "trex", "--path", "tx", "--relations", "all", "--out",
        "out")
DUMP = bz2.compress(b'[\n{"id": "Q1", "x": ' + DEEP_ARRAY.encode() + b"},\n"
                    + b"\n".join(fx.json_dump(fx.ENTITIES).split(b"\n")[1:]))

FILES = [
    Case("trex-line-deep-orjson", TREX, ("P1.jsonl:2", "nested"),
         setup=put("tx/P1.jsonl", TREX_OK + DEEP_ARRAY + "\n")),
    Case("trex-line-deep-without-orjson", TREX, ("P1.jsonl:2", "nested"),
         setup=put("tx/P1.jsonl", TREX_OK + DEEP_OBJECT + "\n"), env={"PYTHONPATH": "{shim}"}),
    Case("trex-line-500-deep-without-orjson", TREX, ("P1.jsonl:2", "nested"),
         setup=put("tx/P1.jsonl", TREX_OK + medium(json.loads(TREX_OK)) + "\n"),
         env={"PYTHONPATH": "{shim}"}),
    Case("fktc-import-line-deep", ("build", "fktc", "--import", "imp", "--out", "out"),
         ("P17-subclass.json:2",),
         setup=put("imp/P17-subclass.json", '{"relations": ["Where is [X]?"]}\n'
                   + DEEP_OBJECT + "\n")),
    Case("dump-line-deep", ("build", "facts", "--quiet", "--source", "wikidata-dump", "--path",
                            "d.json.bz2", "--relations", "P36,P37", "--out", "out"),
         ("d.json.bz2", "line 2", "nested"), setup=put("d.json.bz2", DUMP)),
    Case("lpaqa-templates-line-deep", ("eval", "prompt", "--dataset", "mc", "--model", "model",
                                       "--templates", "lp", "--dry-run", "--out", "out"),
         ("P36.jsonl:1",), setup=put("lp/P36.jsonl", DEEP_ARRAY + "\n")),
    Case("dataset-json-deep", ("build", "mc", "--facts", "deep", "--out", "out"),
         ("dataset.json", "nested"), setup=copy_with("aliases", "deep", "dataset.json",
                                                     DEEP_ARRAY)),
    Case("dataset-json-500-deep", ("build", "misprimes", "--facts", "deep", "--out", "out"),
         ("dataset.json", "nested"), setup=deepen("aliases", "deep", "dataset.json")),
    Case("dataset-json-deep-eval", ("eval", "zp-lke", "--dataset", "deep", "--model", "model",
                                    "--examples", "2", "--out", "out"), ("dataset.json",),
         setup=copy_with("mc", "deep", "dataset.json", DEEP_OBJECT)),
    Case("hub-layout-deep", ("build", "mc", "--facts", "hub", "--out", "out"),
         ("factprobe_layout.json",), setup=put("hub/factprobe_layout.json", DEEP_ARRAY)),
    Case("model-config-deep", ("eval", "zp-lke", "--dataset", "mc", "--model", "deepmodel",
                               "--examples", "2", "--out", "out"), ("config.json",),
         setup=copy_with("model", "deepmodel", "config.json", DEEP_ARRAY)),
    Case("report-run-json-deep", ("report", "--results", "deeprun", "--out", "rep"),
         ("run.json",), setup=copy_with("run", "deeprun", "run.json", DEEP_ARRAY)),
    Case("report-run-json-500-deep", ("report", "--results", "deeprun", "--out", "rep"),
         ("run.json",), setup=deepen("run", "deeprun", "run.json")),
    Case("report-metrics-json-deep", ("report", "--results", "deeprun", "--out", "rep"),
         ("metrics.json",), setup=copy_with("run", "deeprun", "metrics.json", DEEP_OBJECT)),
    Case("report-planted-json-deep", ("report", "--results", "run", "--planted", "p.json",
                                      "--out", "rep"), ("p.json",),
         setup=put("p.json", DEEP_ARRAY)),
    Case("templates-yaml-deep", ("build", "templates", "--templates-dir", "td", "--paraphrases",
                                 "0", "--out", "out"), ("P1.yaml", "nested"),
         setup=put("td/P1.yaml", "relation: P1\ntemplates: " + DEEP_ARRAY + "\n")),
    Case("card-meta-yaml-deep", ("publish", "mc", "--repo-id", "me/mc", "--card-meta", "m.yaml",
                                 "--dry-run", "pub"), ("m.yaml", "nested"),
         setup=put("m.yaml", "pretty_name: " + DEEP_ARRAY + "\n")),
    Case("merge-run-json-deep", ("merge", "deepshard", "--out", "merged"), ("run.json",),
         setup=copy_with("shard", "deepshard", "run.json", DEEP_ARRAY)),
]



def _run(case: Case, ws: Path, names: dict) -> None:
    if case.setup:
        case.setup(ws)
    before = snapshot(ws)
    env = {k: v.format(**names) for k, v in case.env.items()}
    proc = run(expand(case.argv, {"ws": str(ws), **names}), cwd=ws, env=env, timeout=120)
    assert "RecursionError" not in proc.stderr, proc.stderr
    check(proc, before, snapshot(ws), needles=case.needles, new_ok=NEW_OK)


NETWORK = ("sparql", "wbgetentities", "chat")   # the caches of answers from a server


def _cached(ws: Path) -> list[Path]:
    root = ws / ".cache-factprobe"
    return sorted(p for p in root.rglob("*.json") if p.parent.parent.name in NETWORK)


@pytest.mark.parametrize("served", SERVED, ids=lambda s: s.case.id)
def test_deep_json_from_a_server(served: Served, workspace, wd_facts, server):
    shutil.copytree(wd_facts, workspace / "wdfacts")
    server.status, server.ctype, server.body = 200, served.ctype, served.body
    _run(served.case, workspace, {"srv": server.url})
    assert _cached(workspace) == [], "a deep answer was cached"


@pytest.mark.parametrize("case", FILES, ids=lambda c: c.id)
def test_deep_json_in_a_file(case: Case, workspace, tmp_path):
    _run(case, workspace, {"shim": hide_orjson(tmp_path / "shim")})


def test_the_shim_hides_orjson(tmp_path):
    """The without-orjson cases run the fallback reader, not orjson."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", "import factprobe.builders.sources.trex as t; "
                           "print(t.JSON_PARSER)"], capture_output=True, text=True,
                          env={"PYTHONPATH": hide_orjson(tmp_path / "shim"),
                               "PATH": "/usr/bin:/bin"},
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout.strip() == "json", proc.stderr


def test_cases_are_named_once():
    ids = [s.case.id for s in SERVED] + [c.id for c in FILES]
    assert len(ids) == len(set(ids))


# ----------------------------------------------------------------------- caches

def _templates_argv(url: str, *extra: str) -> list[str]:
    return ["build", "templates", "--templates-dir", "td", "--paraphrases", "1", "--llm-model",
            "m", "--llm-base-url", url, "--retries", "0", "--cache-dir",
            ".cache-factprobe/llm", *extra]


def _texts(folder: Path) -> list[str]:
    return pq.read_table(folder / "templates.parquet").column("template").to_pylist()


def test_a_deep_cache_entry_is_asked_again_and_replaced(workspace, server):
    """An entry an older factprobe stored unchecked (a deep answer) is a miss: the command
    asks again, and the good answer replaces it."""
    put("td/P1.yaml", YAML)(workspace)
    server.status, server.ctype = 200, "application/json"
    server.body = chat_completion('["[X] lies in [Y]."]')
    first = run(_templates_argv(server.url + "/v1", "--out", "a"), cwd=workspace)
    assert first.returncode == 0, first.stderr
    [entry] = _cached(workspace)
    data = json.loads(entry.read_text())
    entry.write_text(json.dumps({**data, "response": {"text": "[" * 5000 + "]" * 5000}}))
    asked = len(server.requests)
    second = run(_templates_argv(server.url + "/v1", "--out", "b"), cwd=workspace)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    assert len(server.requests) == asked + 1
    assert json.loads(entry.read_text())["response"]["text"] == '["[X] lies in [Y]."]'
    # the same entry made unreadable (nested past the decoder) is a miss as well
    entry.write_text('{"retrieved": "2026-01-01T00:00:00Z", "response": ' + DEEP_ARRAY + "}")
    third = run(_templates_argv(server.url + "/v1", "--out", "c"), cwd=workspace)
    assert third.returncode == 0 and "Traceback" not in third.stderr, third.stderr


def test_a_deep_sparql_cache_entry_is_fetched_again(workspace, flaky_proxy):
    argv = ["build", "facts", "--source", "sparql", "--endpoint", flaky_proxy.url, "--relations",
            "P36", "--retries", "0"]
    first = run([*argv, "--out", "a"], cwd=workspace)
    assert first.returncode == 0, first.stderr
    entries = _cached(workspace)
    assert entries
    for e in entries:
        e.write_text(DEEP_OBJECT)
    second = run([*argv, "--out", "b"], cwd=workspace)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    assert all(json.loads(e.read_text())["response"]["results"] for e in entries)


def test_templates_refresh_asks_again_and_replaces_the_cache(workspace, server):
    put("td/P1.yaml", YAML)(workspace)
    server.status, server.ctype = 200, "application/json"
    server.body = chat_completion('["[X] lies in [Y]."]')
    assert run(_templates_argv(server.url + "/v1", "--out", "a"), cwd=workspace).returncode == 0
    server.body = chat_completion('["[Y] holds [X] within."]')
    asked = len(server.requests)
    replay = run(_templates_argv(server.url + "/v1", "--out", "b"), cwd=workspace)
    assert replay.returncode == 0, replay.stderr
    assert len(server.requests) == asked                       # replayed, not asked
    assert "[X] lies in [Y]." in _texts(workspace / "b")
    fresh = run(_templates_argv(server.url + "/v1", "--refresh", "--out", "c"), cwd=workspace)
    assert fresh.returncode == 0, fresh.stderr
    assert len(server.requests) == asked + 1
    assert "[Y] holds [X] within." in _texts(workspace / "c")
    # the refreshed answer replaced the cached one: a replay without the server gives it
    offline = run(["build", "templates", "--templates-dir", "td", "--paraphrases", "1",
                   "--llm-model", "m", "--cache-dir", ".cache-factprobe/llm", "--out", "d"],
                  cwd=workspace)
    assert offline.returncode == 0, offline.stderr
    assert "[Y] holds [X] within." in _texts(workspace / "d")


def test_templates_refresh_without_an_endpoint_is_refused(workspace):
    put("td/P1.yaml", YAML)(workspace)
    before = snapshot(workspace)
    proc = run(["build", "templates", "--templates-dir", "td", "--paraphrases", "1",
                "--llm-model", "m", "--cache-dir", ".cache-factprobe/llm", "--refresh",
                "--out", "out"], cwd=workspace)
    check(proc, before, snapshot(workspace), needles=("--refresh", "--llm-base-url"),
          new_ok=NEW_OK)
