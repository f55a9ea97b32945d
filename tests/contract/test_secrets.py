"""Secrets never reach a message or a file: credentials in a URL (user info, a key-like query
parameter) given to ``--endpoint``, ``--api-url`` or ``--llm-base-url``, and the tokens of the
environment (``OPENAI_API_KEY``, ``HF_TOKEN``) echoed back by a server, in an error or in a
successful answer. Each case runs the real command against real local servers and then greps
stdout, stderr and every file under the workspace (the response caches included; Parquet
tables decoded, since their pages may be compressed) for the secret.

(A table: one row per case, read row by row.)
"""
from __future__ import annotations

import base64
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest

from tests.conftest import WIKIDATA_MINI
from tests.contract.harness import run, snapshot
from tests.contract.hostile import FixedAnswer, chat_completion, server  # noqa: F401
from tests.wbapi_server import FakeWikidataApi, default_entities

KEY = "sk-proj-Q7w8e9r0t1y2u3i4"          # OPENAI_API_KEY
HF = "hf_Zx8Cv7Bn6Mm5Ll4Kk3Jj"             # HF_TOKEN
PASSWORD = "pw-Hunter2-Zq9Xw8"             # in a URL's user info
QKEY = "qk-7a6b5c4d3e2f1g0h"               # in a URL's query string
SECRETS = (KEY, HF, PASSWORD, QKEY)
YAML = 'relation: P1\ntemplates:\n  - {id: m1, style: statement, text: "[X] is in [Y]."}\n'


def with_userinfo(url: str, user: str = "me") -> str:
    """``url`` (or ``{placeholder}/path``, an http URL once filled) with user info."""
    scheme, _, rest = url.rpartition("://")
    return f"{scheme or 'http'}://{user}:{PASSWORD}@{rest}"


def leaks(ws: Path, proc, before: dict) -> list[str]:
    """Where a secret shows: the command's output, or a file it wrote or changed."""
    found = []
    for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        found += [f"{name}: {s}" for s in SECRETS if s in text]
    after = snapshot(ws)
    for rel, digest in after.items():
        if before.get(rel) == digest or digest[0] == "dir":
            continue
        path = ws / rel
        data = path.read_bytes()
        texts = [data.decode("utf-8", "replace")]
        if path.suffix == ".parquet":
            texts.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
        for s in SECRETS:
            forms = (s, quote(s, safe=""), base64.b64encode(s.encode()).decode())
            if any(f in t for f in forms for t in texts):
                found.append(f"{rel}: {s}")
    return found


@dataclass(frozen=True)
class Secret:
    id: str
    argv: tuple[str, ...]
    code: int                       # the exit code the command must end with
    body: str = ""                  # what the fixed server answers (status, body)
    status: int = 200
    env: tuple = ()
    needles: tuple[str, ...] = ()   # in stderr (e.g. the redacted URL)


def templates(url: str, *args: str) -> tuple[str, ...]:
    return ("build", "templates", "--templates-dir", "td", "--paraphrases", "2", "--llm-model",
            "m", "--llm-base-url", url, "--retries", "0", "--cache-dir", ".cache-factprobe/llm",
            "--review-out", "review.csv", "--out", "out", *args)


def echo(secret: str) -> str:
    """A chat completion whose paraphrases quote ``secret``."""
    return chat_completion(f'["[X] lies in [Y] ({secret}).", "[X] sits in [Y], says {secret}."]')


def echo_error(*secrets: str) -> str:
    return json.dumps({"error": {"message": "Incorrect API key provided: " + " ".join(secrets)}})


CASES = [
    # the LLM endpoint
    Secret("llm-userinfo-500", templates(with_userinfo("{srvhost}/v1")), 2, "oops", 500,
           needles=("***@127.0.0.1",)),
    Secret("llm-userinfo-404-echoing", templates(with_userinfo("{srvhost}/v1")), 2,
           echo_error(KEY, PASSWORD), 404, env=(("OPENAI_API_KEY", KEY),)),
    Secret("llm-key-400-echoing", templates("{srv}/v1"), 2, echo_error(KEY), 400,
           env=(("OPENAI_API_KEY", KEY),)),
    Secret("llm-key-echoed-in-an-answer", templates("{srv}/v1"), 0, echo(KEY),
           env=(("OPENAI_API_KEY", KEY),)),
    Secret("llm-url-password-echoed-in-an-answer", templates(with_userinfo("{srvhost}/v1")), 0,
           echo(PASSWORD)),
    Secret("llm-query-key-echoed", templates("{srv}/v1?api-key=" + QKEY), 0,
           chat_completion(f'["[X] lies in [Y] {QKEY}."]')),
    Secret("llm-hf-token-echoed", templates("{srv}/v1"), 0,
           chat_completion(f'["[X] lies in [Y] {HF}."]'), env=(("HF_TOKEN", HF),)),
    Secret("llm-url-not-http-with-password", templates("ftp://me:" + PASSWORD + "@host/v1"), 2,
           needles=("--llm-base-url",)),
    # SPARQL endpoints
    Secret("sparql-userinfo-unreachable",
           ("build", "facts", "--source", "sparql", "--endpoint",
            with_userinfo("{closedhost}/query"), "--relations", "P36", "--retries", "0", "--out",
            "out"), 2, needles=("***@",)),
    Secret("sparql-userinfo-404", ("build", "facts", "--source", "sparql", "--endpoint",
                                   with_userinfo("{srvhost}/query"), "--relations", "P36",
                                   "--retries", "0", "--out", "out"), 2, "no", 404,
           needles=("***@",)),
    Secret("sparql-query-token-403", ("build", "facts", "--source", "sparql", "--endpoint",
                                      "{srv}/query?access_token=" + QKEY, "--relations", "P36",
                                      "--retries", "0", "--out", "out"), 2, "no", 403,
           needles=("access_token=***",)),
    Secret("nobel-userinfo-500", ("build", "nobel", "--endpoint", with_userinfo("{srvhost}/query"),
                                  "--retries", "0", "--out", "out"), 2, "no", 500),
    Secret("sparql-userinfo-not-a-url", ("build", "facts", "--source", "sparql", "--endpoint",
                                         "http://me:" + PASSWORD + "@[::1/query", "--relations",
                                         "P36", "--retries", "0", "--out", "out"), 2),
    # init writes the endpoint into committed files: credentials there are refused
    Secret("init-endpoint-with-password", ("init", "repo", "--source", "sparql", "--endpoint",
                                           with_userinfo("{srvhost}/query"), "--relations",
                                           "P36"), 2, needles=("credentials", "***@")),
    Secret("init-endpoint-with-query-key", ("init", "repo", "--source", "sparql", "--endpoint",
                                            "{srv}/query?api_key=" + QKEY, "--relations", "P36"),
           2, needles=("credentials",)),
    # the Wikidata API
    Secret("wikidata-api-userinfo-404",
           ("build", "aliases", "--facts", "wdfacts", "--api-url",
            with_userinfo("{srvhost}/w/api.php"), "--retries", "0", "--out", "out"), 2, "no", 404),
]



@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_no_secret_is_printed_or_written(case: Secret, workspace, wd_facts, server,
                                         closed_port_url):
    shutil.copytree(wd_facts, workspace / "wdfacts")
    (workspace / "td").mkdir()
    (workspace / "td" / "P1.yaml").write_text(YAML)
    server.status, server.body = case.status, case.body
    names = {"srv": server.url, "closed": closed_port_url.rsplit("/", 1)[0]}
    names.update({k + "host": v.split("://", 1)[1] for k, v in list(names.items())})
    argv = [a.format(**names) for a in case.argv]
    before = snapshot(workspace)
    proc = run(argv, cwd=workspace, env=dict(case.env))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == case.code, proc.stderr
    if case.code == 2:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for n in case.needles:
        assert n in proc.stderr, proc.stderr
    assert leaks(workspace, proc, before) == []


def test_cases_are_named_once():
    assert len({c.id for c in CASES}) == len(CASES)


def _sparql_ok(workspace: Path, url: str, out: str):
    before = snapshot(workspace)
    proc = run(["build", "facts", "--source", "sparql", "--endpoint", url, "--relations", "P36",
                "--retries", "0", "--out", out], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert leaks(workspace, proc, before) == []
    return json.loads((workspace / out / "dataset.json").read_text())


def test_endpoint_credentials_work_and_are_recorded_masked(workspace, flaky_proxy):
    """user:password@ is sent as HTTP Basic (urllib would take it for the host name), and
    dataset.json, its provenance and the cache hold the URL with the credentials masked."""
    manifest = _sparql_ok(workspace, with_userinfo(flaky_proxy.url), "a")
    assert manifest["source"]["endpoint"] == flaky_proxy.url.replace("://", "://***@")
    sent = flaky_proxy.requests[-1]["headers"].get("Authorization", "")
    assert base64.b64decode(sent.split()[-1]).decode() == f"me:{PASSWORD}"
    # a key in the query string: masked in the record, sent as given
    manifest = _sparql_ok(workspace, flaky_proxy.url + "?access_token=" + QKEY, "b")
    assert manifest["source"]["endpoint"].endswith("?access_token=***")
    # aliases cannot reuse a masked endpoint: one line saying to pass --endpoint again
    before = snapshot(workspace)
    proc = run(["build", "aliases", "--facts", "a", "--via", "graph", "--retries", "0",
                "--out", "al"], cwd=workspace)
    assert proc.returncode == 2 and "--endpoint" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert leaks(workspace, proc, before) == []
    proc = run(["build", "aliases", "--facts", "a", "--via", "graph", "--retries", "0",
                "--endpoint", with_userinfo(flaky_proxy.url), "--out", "al"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr


def test_wikidata_api_query_key_is_masked_in_the_cache(workspace, wd_facts):
    api = FakeWikidataApi(*default_entities()).start()
    try:
        shutil.copytree(wd_facts, workspace / "wdfacts")
        before = snapshot(workspace)
        proc = run(["build", "aliases", "--facts", "wdfacts", "--api-url",
                    api.url + "?token=" + QKEY, "--retries", "0", "--out", "out"],
                   cwd=workspace)
        assert proc.returncode == 0, proc.stderr
        assert leaks(workspace, proc, before) == []
        assert api.requests and all(r.params.get("token") == QKEY for r in api.requests)
    finally:
        api.stop()
