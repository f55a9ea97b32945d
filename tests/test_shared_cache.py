"""tests/shared_cache.py: what the planted fixtures rely on to build a model once for every
pytest-xdist worker of a run (workers stand in as threads here, each with its own basetemp
under the run's folder, as xdist lays them out)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.shared_cache import built_once, digest


class Factory:
    """The part of pytest's tmp_path_factory that built_once reads."""

    def __init__(self, base: Path):
        base.mkdir(parents=True, exist_ok=True)
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


@pytest.fixture
def as_worker(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")


def test_workers_of_one_run_build_once_and_read_the_same_folder(tmp_path, as_worker):
    builds, got = [], []

    def build(folder: Path) -> None:
        builds.append(folder)
        time.sleep(0.2)                   # the others arrive while this one builds
        (folder / "model.bin").write_bytes(b"weights")

    def worker(n: int) -> None:
        got.append(built_once(Factory(tmp_path / f"popen-gw{n}"), "causal", "k1", build))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(set(got)) == 1
    assert (got[0] / "model.bin").read_bytes() == b"weights"
    assert got[0].parent == tmp_path / "built-once"          # the run's, no worker's own
    # another input is another build, beside the first
    other = built_once(Factory(tmp_path / "popen-gw0"), "causal", "k2", build)
    assert len(builds) == 2 and other != got[0]


def test_a_failed_build_is_built_again_from_scratch(tmp_path, as_worker):
    calls = []

    def build(folder: Path) -> None:
        calls.append(sorted(p.name for p in folder.iterdir()))
        (folder / "half").write_text("x")
        if len(calls) == 1:
            raise RuntimeError("killed mid-build")
        (folder / "whole").write_text("y")

    factory = Factory(tmp_path / "popen-gw1")
    with pytest.raises(RuntimeError):
        built_once(factory, "m", "k", build)
    folder = built_once(factory, "m", "k", build)
    assert calls == [[], []]                 # the second build did not see the first's leftovers
    assert sorted(p.name for p in folder.iterdir()) == ["half", "whole"]


def test_without_xdist_the_session_folder_holds_it(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    folder = built_once(Factory(tmp_path / "session"), "w", "k", lambda f: None)
    assert folder.parent == tmp_path / "session" / "built-once"


def test_the_key_reads_every_file_of_a_folder(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.yaml").write_text("one")
    first = digest("--seed", "0", files=[tmp_path / "d"])
    assert digest("--seed", "0", files=[tmp_path / "d"]) == first
    assert digest("--seed", "1", files=[tmp_path / "d"]) != first
    (tmp_path / "d" / "a.yaml").write_text("two")
    assert digest("--seed", "0", files=[tmp_path / "d"]) != first
