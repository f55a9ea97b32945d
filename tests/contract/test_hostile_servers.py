"""Servers that would take the machine: every HTTP client factprobe has, against every way an
answer can be endless or enormous (tests/hostile_server.py, on 127.0.0.1).

Each case runs the real console script with ``--timeout 5`` (2 where it retries) and must end
in one line, exit 2, under 1.5 GB of memory and 60 s (see measured.py), with nothing written at
``--out``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import WIKIDATA_MINI
from tests.contract.conftest import SAMPLE, TEMPLATES
from tests.contract.harness import run
from tests.contract.measured import check_refused, run_measured
from tests.hostile_server import HostileServer

CLIENTS = {
    # client -> (the answer's shape, the command line; {url} is the server's base URL)
    "sparql": ("sparql", ["build", "facts", "--source", "sparql", "--endpoint", "{url}/query",
                          "--relations", "P36"]),
    "wbapi": ("wbapi", ["build", "aliases", "--facts", "wdfacts", "--via", "wikidata",
                        "--api-url", "{url}/w/api.php"]),
    "llm": ("chat", ["build", "templates", "--facts", "sfacts", "--templates-dir",
                     str(TEMPLATES), "--llm-base-url", "{url}/v1", "--llm-model", "m",
                     "--paraphrases", "1", "--cache-dir", "llm-cache"]),
}


@dataclass(frozen=True)
class Hostile:
    client: str
    mode: str
    needles: tuple[str, ...]
    retries: int = 0
    interval: float = 0.5
    extra: tuple[str, ...] = ()
    timeout: int = 5


TOO_LARGE = ("sent an answer larger than 100 MB", "--max-answer-mb")
LATE = ("no answer within 5 s", "--timeout, for the whole answer")
LATE_2 = ("no answer within 2 s", "--timeout, for the whole answer")
CASES = [Hostile(c, m, n, interval=i) for c in CLIENTS for m, n, i in (
    ("stream", LATE, 0.5),           # a valid-looking answer whose rows never stop
    ("headers", LATE, 4.0),          # headers a byte at a time, each inside the read timeout
    ("flood", TOO_LARGE, 0.5),       # rows as fast as the socket takes them
    ("flood-length", TOO_LARGE, 0.5),  # ... after announcing 50 GB
)] + [
    # gzip that inflates to 1 GB: the Action API and chat clients inflate (under the cap);
    # SPARQL asks for no compression, so the bytes are not JSON
    Hostile("wbapi", "gzip", TOO_LARGE),
    Hostile("llm", "gzip", TOO_LARGE),
    Hostile("sparql", "gzip", ("not JSON",)),
    # with the default retries every attempt is cut at --timeout and the command ends (a
    # 2-second deadline: the four attempts at 5 s took 28 s of the suite, and test their count
    # and the deadline just the same)
    Hostile("sparql", "stream", ("4 attempts",) + LATE_2, retries=3, timeout=2),
    Hostile("llm", "stream", ("4 attempts",) + LATE_2, retries=3, timeout=2),
    # the cap is the user's to set
    Hostile("sparql", "flood", ("larger than 2 MB", "--max-answer-mb 2"),
            extra=("--max-answer-mb", "2")),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Datasets the clients need: facts with Wikidata ids, and facts of the sample graph."""
    ws = tmp_path_factory.mktemp("hostile-inputs")
    for name, argv in (("wdfacts", ["--path", str(WIKIDATA_MINI), "--relations", "P36"]),
                       ("sfacts", ["--path", str(SAMPLE), "--relations", "rel:capital"])):
        proc = run(["build", "facts", "--source", "rdf", *argv, "--out", name, "--quiet"],
                   cwd=ws)
        assert proc.returncode == 0, proc.stderr
    return ws


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.client}-{c.mode}"
                         + (f"-retries{c.retries}" if c.retries else "")
                         + ("-cap" if c.extra else ""))
def test_hostile_server_ends_in_one_line(case: Hostile, inputs: Path, tmp_path: Path):
    shape, argv = CLIENTS[case.client]
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("wdfacts", "sfacts"):
        (ws / name).symlink_to(inputs / name)
    # the server gives up by itself after 90 s, so a failing test leaves nothing running
    with HostileServer(case.mode, shape, interval=case.interval, max_seconds=90) as server:
        base = server.url.rsplit("/", 1)[0]
        m = run_measured([a.format(url=base) for a in argv]
                         + ["--timeout", str(case.timeout), "--retries", str(case.retries), "--out", "out",
                            *case.extra], cwd=ws, timeout=100)
    check_refused(m, case.needles)
    assert not (ws / "out").exists()
    assert not any((ws / "llm-cache").rglob("*.json")), "a refused answer was cached"


def test_max_answer_mb_takes_a_positive_number(tmp_path: Path):
    m = run_measured(["build", "facts", "--source", "sparql", "--endpoint",
                      "http://127.0.0.1:9/query", "--relations", "P36", "--max-answer-mb", "0",
                      "--out", "out"], cwd=tmp_path)
    assert m.returncode == 2 and "Traceback" not in m.stderr
    assert "--max-answer-mb: '0' must be a number of MB > 0" in m.stderr, m.stderr


@pytest.mark.slow
@pytest.mark.parametrize("mode, needles", [
    ("flood", ("sent an API answer larger than 100 MB", "HF_ENDPOINT")),
    ("gzip", ("sent an API answer larger than 100 MB",)),
    ("stream", ("no complete answer within 5 s", "HF_HUB_ETAG_TIMEOUT")),
])
def test_hostile_hub_ends_in_one_line(mode: str, needles: tuple, tmp_path: Path):
    """hf:// from a Hub (HF_ENDPOINT) whose API answers never end or never stop coming."""
    with HostileServer(mode, "sparql", max_seconds=90) as server:
        m = run_measured(["build", "mc", "--facts", "hf://some-org/some-data", "--out", "out"],
                         cwd=tmp_path, timeout=100,
                         env={"HF_ENDPOINT": server.url.rsplit("/", 1)[0],
                              "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf"),
                              "HF_HUB_ETAG_TIMEOUT": "5"})
    check_refused(m, ("hf://some-org/some-data", *needles))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("status", [400, 500])
def test_hub_error_answers_are_reported_as_such(status: int, tmp_path: Path):
    """A Hub that answers 400/500 is not 'unreachable': the line says what it answered."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            body = b'{"error": "Something broke on our side (ref 1234)"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        m = run_measured(["build", "mc", "--facts", "hf://some-org/some-data", "--out", "out"],
                         cwd=tmp_path, timeout=100,
                         env={"HF_ENDPOINT": f"http://127.0.0.1:{httpd.server_address[1]}",
                              "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")})
    finally:
        httpd.shutdown()
        httpd.server_close()
    check_refused(m, (f"answered HTTP {status}", "Something broke on our side (ref 1234)"))
    assert "unreachable" not in m.stderr
