"""Shared fixtures: a real Oxigraph SPARQL server on 127.0.0.1 and a flaky proxy in front of it."""
from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _share_cores_among_workers() -> None:
    """Under pytest-xdist, each worker gets its share of the cores for torch's threads.

    Torch starts one intra-op thread per core in every process: two workers on two cores ran
    four threads, and a thread that is not running holds up its barrier (the collapse issue 30
    measured). tests/planted on two workers took 122 s so and 34 s with one thread each. Set
    before anything imports torch (it reads the variable once); a count the user exported wins.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or "OMP_NUM_THREADS" in os.environ:
        return
    from factprobe.core.cpus import available_cores
    os.environ["OMP_NUM_THREADS"] = str(max(1, available_cores() // max(1, int(workers))))


_share_cores_among_workers()

# The command line holds torch to its portable kernels before importing it (core/kernels.py);
# a test that runs a command in this process, where some other test imported torch first,
# must compute with the same kernels as one that starts the command in a new process.
from factprobe.core.kernels import pin  # noqa: E402

pin()

DATA = Path(__file__).parent / "data"

# Whole modules that run the real command line many times or start servers and models: `make
# test-fast` (pytest -m "not slow") leaves them out; `make test` runs everything. Measured with
# `pytest --durations=0`: these hold about nine tenths of the suite's time.
SLOW_MODULES = ("tests/contract/", "tests/benchmarks/", "tests/evaluators/cli/",
                "tests/evaluators/report/test_report_cli.py",
                "tests/evaluators/report/test_report_html.py",
                "tests/builders/templates/test_templates.py",
                "tests/builders/templates/test_llm_serve.py",
                "tests/builders/sources/test_graph_sources.py",
                "tests/builders/sources/test_dump_runs.py",
                "tests/builders/sources/test_dump_ray.py",
                "tests/builders/publish/test_cards.py", "tests/builders/core/test_provenance.py",
                "tests/evaluators/exports/test_lm_eval_export.py",
                "tests/evaluators/exports/test_lm_pub_quiz_export.py",
                "tests/probes/engine/test_scale.py", "tests/probes/engine/test_device_map_runs.py",
                "tests/planted/",
                # a real completions server with a model in it, models loaded through
                # accelerate with disk offload, a DVC repository, headless Chromium: 3-13 s a
                # case, the half of test-fast's time that was not unit tests (2026-11-27)
                "tests/probes/backends/test_openai.py", "tests/probes/backends/test_device_map.py",
                "tests/evaluators/test_init_plots_page.py",
                "tests/evaluators/report/test_report_layout.py")


# The longest units of work, longest first: under pytest-xdist they start at once on separate
# workers instead of last (xdist's own order puts files with many tests first, and the four
# whole pipelines, four tests in two files, came last, three of them one after another on one
# worker: 489 s of a 846 s run, 2026-11-27). Measured with the suite's --durations on 2 cores.
LONGEST_FIRST = ("tests/probes/engine/test_scale.py",
                 "tests/evaluators/cli/test_init_planting.py",
                 "tests/evaluators/cli/test_own_graph_doc.py",
                 "tests/contract/test_hostile_servers.py",
                 "tests/probes/backends/test_openai.py")
# Files whose tests share nothing (no module fixture, no order): each test is a unit of its
# own, so the three init pipelines run side by side. Every other file stays on one worker in
# order (some files' later tests read what their earlier ones ran).
INDEPENDENT_TESTS = ("tests/evaluators/cli/test_init_planting.py",)


@pytest.hookimpl(optionalhook=True)   # xdist's hook; absent under `-p no:xdist`
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, but each test of INDEPENDENT_TESTS a unit of its own. (xdist's
    `loadgroup` marks do not reach the scheduler under pytest 9: xdist rewrites a node id field
    that pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in INDEPENDENT_TESTS else path
    return Units(config, log)


# The checkout's bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (this project's
# sandboxes set it): without a cache every xdist worker compiled and assertion-rewrote the
# ~240 test modules again (collection 8.8 CPU-s a worker, 5.3 with the cache), and every
# command a test starts compiled factprobe's modules again (0.3 of an eval's 6.3 CPU-s).
# __pycache__ is git- and dvc-ignored. Only the checkout's own sources, and test modules only
# while they are collected: a test that imports a file of its tmp folder still leaves no cache.
_SOURCES = ("factprobe", "builders", "probes", "evaluators")


def pytest_sessionstart(session):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return                    # the controller compiled them before it started the workers
    import compileall
    root = Path(__file__).resolve().parent.parent
    for name in _SOURCES:
        compileall.compile_dir(root / name, quiet=2, workers=1)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = before


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parent.parent
    rels = {}
    for item in items:
        rel = rels[item] = item.path.resolve().relative_to(root).as_posix()
        if rel.startswith(SLOW_MODULES):
            item.add_marker(pytest.mark.slow)
    # a stable sort: every other file keeps its place and its tests their order
    rank = {rel: i for i, rel in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(rels[item], len(rank)))


WIKIDATA_MINI = DATA / "wikidata_mini.ttl"

# dvc.yaml's dataset stages, in an order that builds each one's inputs first
SAMPLE_STAGES = ("facts", "aliases", "mc", "templates", "misprimes", "multiprompt", "fktc",
                 "nobel")


@pytest.fixture(scope="session")
def sample_repo(tmp_path_factory) -> Path:
    """A copy of the repository's pipeline with its sample datasets built by dvc.yaml's own
    commands (tests/sample_repo.py): a fresh checkout has no data/datasets (`dvc repro`
    writes them), and no test may depend on it having run."""
    from tests.sample_repo import build_sample_repo
    return build_sample_repo(tmp_path_factory.mktemp("sample-repo"), SAMPLE_STAGES)


@pytest.fixture(scope="session")
def sample_datasets(sample_repo) -> Path:
    """The sample repository's data/datasets folder (sample-facts, sample-aliases, sample-mc...)."""
    return sample_repo / "data" / "datasets"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _oxigraph() -> str:
    exe = shutil.which("oxigraph") or str(Path(sys.executable).with_name("oxigraph"))
    if not Path(exe).exists():
        pytest.fail("the oxigraph server binary is missing: pip install oxigraph (it is in the "
                    "test extra)")
    return exe


@contextlib.contextmanager
def oxigraph_serving(rdf: Path, db: Path) -> Iterator[str]:
    """``oxigraph serve-read-only`` on 127.0.0.1 with ``rdf`` loaded into ``db``; its URL."""
    exe = _oxigraph()
    subprocess.run([exe, "load", "--location", str(db), "--file", str(rdf)],
                   check=True, capture_output=True)
    port = _free_port()
    proc = subprocess.Popen([exe, "serve-read-only", "--location", str(db), "--bind",
                             f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/query"
    deadline = time.time() + 20
    try:
        while True:
            try:
                urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=1).read()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    pytest.fail("oxigraph server did not start")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def oxigraph_url(tmp_path_factory) -> str:
    """``oxigraph serve-read-only`` loaded with the Wikidata-shaped test graph."""
    with oxigraph_serving(WIKIDATA_MINI, tmp_path_factory.mktemp("oxigraph")) as url:
        yield url


class FlakyProxy:
    """Forwards POSTs to a SPARQL server after answering the first requests with scripted
    failures: ``script`` is a list like ``[(429, {"Retry-After": "1"}), (503, {})]``; a third
    item is the body to send instead of ``scripted failure`` (a 200 of the wrong shape)."""

    def __init__(self, target: str):
        self.target = target
        self.script: list[tuple[int, dict]] = []
        self.requests: list[dict] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.requests.append({"time": time.monotonic(), "headers": dict(self.headers),
                                       "body": body})
                if proxy.script:
                    code, headers, *body = proxy.script.pop(0)
                    self.send_response(code)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body[0] if body else b"scripted failure")
                    return
                req = urllib.request.Request(proxy.target, data=body, headers={
                    "Content-Type": self.headers["Content-Type"],
                    "Accept": self.headers.get("Accept", "*/*")})
                with urllib.request.urlopen(req) as resp:
                    payload = resp.read()
                    ctype = resp.headers["Content-Type"]
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/query"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def flaky_proxy(oxigraph_url):
    proxy = FlakyProxy(oxigraph_url)
    yield proxy
    proxy.close()


@pytest.fixture
def closed_port_url() -> str:
    return f"http://127.0.0.1:{_free_port()}/query"


@pytest.fixture
def silent_url():
    """A port that accepts connections (the kernel's backlog does) and never answers: every
    request to it ends in the client's timeout."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


# Small random-weight models with locally trained tokenizers, saved once per session.
TEXT = [
    "Albert Einstein 1879, Niels Bohr 1885, Marie Curie 1867, Max Planck 1858",
    "The capital of France is Paris. The capital of Japan is Tokyo.",
    "France Paris, Germany Berlin, Italy Rome, Spain Madrid, Japan Tokyo, Peru Lima",
    "Q: What is the capital of Peru?\nA: Lima.",
] * 20


@pytest.fixture(scope="session")
def tiny_causal_dir(tmp_path_factory):
    from factprobe.probes.planting.model_factory import causal_model, save, train_tokenizer
    tok = train_tokenizer(TEXT, vocab_size=400)
    return save(causal_model(tok, layers=2, width=64), tok, tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    from factprobe.probes.planting.model_factory import causal_model, save, train_tokenizer
    tok = train_tokenizer(TEXT, vocab_size=400)
    return save(causal_model(tok, layers=2, width=64, arch="llama"), tok,
                tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="session")
def tiny_masked_dir(tmp_path_factory):
    from factprobe.probes.planting.model_factory import masked_model, save, train_tokenizer
    tok = train_tokenizer(TEXT, vocab_size=400, masked=True)
    return save(masked_model(tok), tok, tmp_path_factory.mktemp("bert"))
