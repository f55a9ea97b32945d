"""Lanes (factprobe.core.lanes): units of work spread over threads of one torch thread each, and
``factprobe eval`` on them: the same outputs.parquet bytes on one lane, on two, and with a core
held by another process, for every method (real tiny models, datasets built from the sample
graph)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from factprobe.cli.app import main
from factprobe.core.lanes import Lanes
from tests.probes.engine.test_scale import METHODS, build_workspace, eval_args


def test_results_come_back_in_item_order_whoever_computed_them():
    def slow_first(i):
        time.sleep(0.5 if i == 0 else 0.001)    # long enough for a helper to start
        return i * i, threading.current_thread().name
    with Lanes(3) as lanes:
        got = lanes.map(slow_first, range(12))
    assert [v for v, _ in got] == [i * i for i in range(12)]
    assert len({name for _, name in got}) >= 2          # the helpers took a share


def test_never_more_threads_at_once_than_lanes_even_when_units_split():
    running, most, lock = [0], [0], threading.Lock()

    def leaf(x):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.005)
        with lock:
            running[0] -= 1
        return x

    with Lanes(2) as lanes:
        # a unit that splits into units (a chunk into its forward passes) while every lane is
        # busy: its parts run on its own thread, no deadlock
        got = lanes.map(lambda k: sum(lanes.map(leaf, range(k * 5, k * 5 + 5))), range(6))
    assert got == [sum(range(k * 5, k * 5 + 5)) for k in range(6)]
    assert most[0] <= 2


def test_the_first_error_is_raised_and_the_helpers_stop():
    seen = []

    def fail_at_3(i):
        seen.append(i)
        if i == 3:
            raise ValueError("unit 3")
        time.sleep(0.01)
        return i
    with Lanes(2) as lanes:
        with pytest.raises(ValueError, match="unit 3"):
            lanes.map(fail_at_3, range(50))
        assert len(seen) < 50                       # no new unit after the error
        assert lanes.map(lambda i: i, range(4)) == [0, 1, 2, 3]   # the lanes are free again


def test_one_lane_computes_on_the_callers_thread_alone():
    with Lanes(1) as lanes:
        names = lanes.map(lambda _: threading.current_thread().name, range(5))
    assert set(names) == {threading.current_thread().name}


def test_torch_computes_on_one_thread_in_every_lane():
    """at::set_num_threads is the process's: a thread started later takes it at its first
    parallel operation, so the lanes compute on one thread each (checked, not assumed)."""
    code = ("import json, torch\n"
            "from factprobe.cli.threads import apply_threads\n"
            "from factprobe.core.lanes import Lanes\n"
            "rec = apply_threads(2, lanes=True)\n"
            "def unit(_):\n"
            "    x = torch.randn(256, 256)\n"
            "    (x @ x).sum()\n"
            "    return torch.get_num_threads()\n"
            "with Lanes(rec['threads']) as lanes:\n"
            "    got = lanes.map(unit, range(8))\n"
            "print(json.dumps([rec, got, torch.get_num_threads()]))")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    rec, got, main_threads = json.loads(out)
    assert rec["threads"] == 2 and rec["per_lane"] == 1 and rec["chosen_by"] == "--threads"
    assert got == [1] * 8 and main_threads == 1


@pytest.fixture(scope="module")
def ws(tmp_path_factory, tiny_causal_dir, tiny_masked_dir):
    return build_workspace(tmp_path_factory.mktemp("lanes"), tiny_causal_dir, tiny_masked_dir)


def _spin(core: int) -> subprocess.Popen:
    code = "import os; os.sched_setaffinity(0, {%d})\nwhile True: pass" % core
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.parametrize("method", list(METHODS))
def test_eval_writes_the_same_bytes_on_one_lane_and_on_two(ws, method):
    # --batch-size 2: a group's forward passes and batches of prompts are several units each,
    # so two lanes split groups as well as chunks
    extra = ["--batch-size", "2"]
    runs = {"one": ["--threads", "1"], "two": ["--threads", "2"]}
    if method == "zp-lke" and hasattr(os, "sched_setaffinity"):
        runs["two, a core held"] = ["--threads", "2"]
    for name, flags in runs.items():
        spinner = _spin(max(os.sched_getaffinity(0))) if "held" in name else None
        try:
            assert main(eval_args(ws, method, f"{method}-{name}", *extra, *flags)) == 0
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    first = ws / f"{method}-one"
    for name in runs:
        got = ws / f"{method}-{name}"
        assert (got / "outputs.parquet").read_bytes() == \
            (first / "outputs.parquet").read_bytes(), name
        assert (got / "metrics.json").read_bytes() == (first / "metrics.json").read_bytes()
        run = json.loads((got / "run.json").read_text())
        assert run["tokens"] == json.loads((first / "run.json").read_text())["tokens"]
        assert run["threads"]["threads"] == int(runs[name][1]) and \
            run["threads"]["per_lane"] == 1


def _hammer(call, rounds: int = 400) -> list[str]:
    """Two threads calling the tokenizer at once, one with padding and one without; what went
    wrong."""
    errors: list[str] = []

    def padded():
        for _ in range(rounds):
            try:
                enc = call(["a b", "a b c d e f g"], padding=True)
                if len({len(ids) for ids in enc["input_ids"]}) != 1:
                    errors.append("unpadded rows")
            except Exception as exc:             # noqa: BLE001 - what the race raises
                errors.append(repr(exc))

    def plain():
        for _ in range(rounds):
            try:
                call(["a", "a b c"], add_special_tokens=False)
            except Exception as exc:             # noqa: BLE001
                errors.append(repr(exc))
    threads = [threading.Thread(target=padded), threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_two_lanes_tokenizing_at_once_get_what_each_asked(tiny_masked_dir):
    """A fast tokenizer keeps its padding setting in one Rust object: a masked backend's
    padded call beside an unpadded one on another lane would get unpadded rows (BELIEF
    failed so on two lanes); the backend's tokenize takes a lock every copy shares."""
    import copy

    from factprobe.probes.backends import KINDS
    from factprobe.probes.backends.config import BackendConfig
    backend = KINDS["hf-masked"].load(BackendConfig(model=str(tiny_masked_dir),
                                                    kind="hf-masked"))
    a, b = backend, copy.copy(backend)
    calls = iter([a.tokenize, b.tokenize])
    first, second = next(calls), next(calls)
    assert _hammer(lambda texts, **kw: (first if kw.get("padding") else second)(texts, **kw)) \
        == []
