"""Servers that would take the machine: every HTTP client factprobe has, against every way an
answer can be endless or enormous (tests/hostile_server.py, on 127.0.0.1).

Each case runs the real console script with ``--timeout 5`` and must end in one line, exit 2,
under 1.5 GB of memory and 60 s (see measured.py), with nothing written at ``--out``.
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


TOO_LARGE = ("sent an answer larger than 100 MB", "--max-answer-mb")
LATE = ("no complete answer within 5 s", "--timeout")
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
    # with the default retries the whole command still ends within the minute
    Hostile("sparql", "stream", ("4 attempts",) + LATE, retries=3),
    Hostile("llm", "stream", ("4 attempts",) + LATE, retries=3),
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
                         + ["--timeout", "5", "--retries", str(case.retries), "--out", "out",
                            *case.extra], cwd=ws, timeout=100)
    check_refused(m, case.needles)
    assert not (ws / "out").exists()
    assert not any((ws / "llm-cache").rglob("*.json")), "a refused answer was cached"


def test_max_answer_mb_takes_a_positive_number(tmp_path: Path):
    m = run_measured(["build", "facts", "--source", "sparql", "--endpoint",
                      "http://127.0.0.1:9/query", "--relations", "P36", "--max-answer-mb", "0",
                      "--out", "out"], cwd=tmp_path)
    assert m.returncode == 2 and "--max-answer-mb" in m.stderr and "Traceback" not in m.stderr
