"""Thread counts chosen from the work and the machine (factprobe.core.cpus), the --threads flag of
plant and eval, and where the choice is recorded (planted.json, run.json)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from factprobe.core import cpus
from tests.evaluators.cli.test_eval_cli import mc_dir, run  # noqa: F401  (a fixture)
from tests.evaluators.cli.test_eval_cli import ROOT
from tests.inprocess import factprobe_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"),
                                reason="needs Linux CPU affinity")


def test_free_cores_leaves_out_a_core_held_by_another_process():
    assert cpus.free_cores(2, 0.0) == 2
    assert cpus.free_cores(2, 1.0) == 1        # one core held: one thread, not two
    assert cpus.free_cores(2, 0.5) == 1        # a half-busy core would be the straggler
    assert cpus.free_cores(2, 1.9) == 1        # never zero
    assert cpus.free_cores(16, 3.0) == 13
    assert cpus.free_cores(4, None) == 4       # unmeasurable: the cores we may use


def test_the_flag_wins_and_the_work_caps():
    got = cpus.choose_threads(3)
    assert (got.threads, got.chosen_by, got.busy_cores) == (3, "--threads", None)
    assert 1 <= got.cores <= len(os.sched_getaffinity(0))
    capped = cpus.choose_threads("auto", work_cap=1, sample_s=0.05)
    assert capped.threads == 1 and capped.chosen_by == "auto" and capped.work_cap == 1


def test_the_default_never_follows_the_load(monkeypatch):
    """The same inputs give the same bytes on a busy and a quiet machine: without --threads
    the count is OMP_NUM_THREADS or the cores we may use, whatever the load."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    spinner = _spin(min(os.sched_getaffinity(0)))
    try:
        got = cpus.choose_threads(None)
    finally:
        spinner.kill()
        spinner.wait()
    assert (got.threads, got.chosen_by, got.busy_cores) == (cpus.available_cores(), "cores",
                                                           None)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert (cpus.choose_threads(None).threads, cpus.choose_threads(None).chosen_by) == (
        3, "OMP_NUM_THREADS")
    assert cpus.choose_threads(None, work_cap=1).threads == 1     # plant's one thread holds


def _spin(core: int) -> subprocess.Popen:
    code = "import os; os.sched_setaffinity(0, {%d})\nwhile True: pass" % core
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_process_spinning_on_our_core_counts_as_busy():
    core = min(os.sched_getaffinity(0))
    spinner = _spin(core)
    try:
        time.sleep(0.3)
        code = ("import os, json; os.sched_setaffinity(0, {%d}); from factprobe.core import cpus; "
                "print(json.dumps(cpus.busy_cores(0.5)))" % core)
        busy = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                         text=True, check=True).stdout)
    finally:
        spinner.kill()
        spinner.wait()
    # The spinner holds the one core this child may use; its own sleep is not counted.
    assert busy is not None and busy >= 0.6


def test_own_use_is_not_counted_as_another_process():
    # A process measuring itself while it computes would otherwise always find the machine
    # busy and drop to one thread.
    code = ("import os, json, threading, time; from factprobe.core import cpus\n"
            "stop = False\n"
            "def spin():\n"
            "    while not stop: sum(range(1000))\n"
            "t = threading.Thread(target=spin); t.start(); time.sleep(0.05)\n"
            "b = cpus.busy_cores(0.5); stop = True; t.join(); print(json.dumps(b))")
    # the child on one core it alone is pinned to; whatever else runs there counts, so compare
    # with the same measurement of an idle child
    core = max(os.sched_getaffinity(0))
    pin = "import os; os.sched_setaffinity(0, {%d})\n" % core
    spinning = json.loads(subprocess.run([sys.executable, "-c", pin + code], capture_output=True,
                                         text=True, check=True).stdout)
    idle = json.loads(subprocess.run(
        [sys.executable, "-c", pin + "import json; from factprobe.core import cpus; "
         "print(json.dumps(cpus.busy_cores(0.5)))"], capture_output=True, text=True,
        check=True).stdout)
    assert spinning is not None and idle is not None
    assert spinning <= idle + 0.35


def test_eval_records_the_thread_choice_in_run_json(mc_dir, tiny_causal_dir,  # noqa: F811
                                                    tmp_path):
    base = ["eval", "zp-lke", "--dataset", str(mc_dir), "--model", str(tiny_causal_dir),
            "--examples", "2", "--response-tokens", "2", "--limit", "2"]
    proc = run(*base, "--out", str(tmp_path / "flag"), "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    got = json.loads((tmp_path / "flag" / "run.json").read_text())["threads"]
    assert got["threads"] == 1 and got["chosen_by"] == "--threads"
    proc = run(*base, "--out", str(tmp_path / "auto"), "--threads", "auto")
    assert proc.returncode == 0, proc.stderr
    got = json.loads((tmp_path / "auto" / "run.json").read_text())["threads"]
    assert got["chosen_by"] == "auto" and 1 <= got["threads"] <= got["cores"]
    assert got["cores"] <= len(os.sched_getaffinity(0)) and got["busy_cores"] is not None
    proc = run(*base, "--out", str(tmp_path / "default"))
    assert proc.returncode == 0, proc.stderr
    got = json.loads((tmp_path / "default" / "run.json").read_text())["threads"]
    assert got["chosen_by"] in ("OMP_NUM_THREADS", "cores") and got["busy_cores"] is None


def _folder_bytes(folder):
    """Every file's bytes, planted.json's with its own --out path taken out."""
    files = {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.is_file()}
    if "planted.json" in files:
        files["planted.json"] = files["planted.json"].replace(str(folder).encode(), b"OUT")
    return files


@pytest.mark.parametrize("masked", [False, True], ids=["causal", "masked"])
def test_plant_bytes_do_not_depend_on_its_threads(mc_dir, tmp_path, masked):  # noqa: F811
    # The micro-batches run on as many threads as are free; every file they write, the
    # weights and planted.json, is the same on one thread and on two.
    args = ["plant", "--dataset", str(mc_dir), "--epochs", "2", "--layers", "1", "--width",
            "32", "--heads", "2", "--vocab-size", "300", "--templates", "", "--batch-size", "3",
            *(["--masked"] if masked else [])]
    for threads in ("1", "2", "auto"):
        proc = run(*args, "--out", str(tmp_path / threads), "--threads", threads)
        assert proc.returncode == 0, proc.stderr
    one = _folder_bytes(tmp_path / "1")
    assert "model.safetensors" in one and "planted.json" in one
    assert _folder_bytes(tmp_path / "2") == one and _folder_bytes(tmp_path / "auto") == one
    assert "threads" not in json.loads(one["planted.json"])["config"]


def test_plant_micro_batches_decide_its_bytes_and_are_recorded(mc_dir, tmp_path):  # noqa: F811
    args = ["plant", "--dataset", str(mc_dir), "--epochs", "2", "--layers", "1", "--width",
            "32", "--heads", "2", "--vocab-size", "300", "--templates", "", "--threads", "1"]
    for k in ("1", "2"):
        proc = run(*args, "--out", str(tmp_path / k), "--micro-batches", k)
        assert proc.returncode == 0, proc.stderr
    one, two = _folder_bytes(tmp_path / "1"), _folder_bytes(tmp_path / "2")
    assert one["model.safetensors"] != two["model.safetensors"]
    assert json.loads(two["planted.json"])["config"]["micro_batches"] == 2
    proc = factprobe_cli([*args, "--out", str(tmp_path / "talk"), "--threads", "2",
                          "--epochs", "1"], cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "steps an epoch on 2 threads" in proc.stderr


@pytest.mark.parametrize("cmd", [["plant", "--dataset", "x", "--out", "y"],
                                 ["eval", "zp-lke", "--dataset", "x", "--model", "m",
                                  "--out", "y"]])
def test_threads_must_be_positive(cmd, tmp_path):
    proc = run(*cmd, "--threads", "0")
    assert proc.returncode == 2
    assert "--threads" in proc.stderr and "Traceback" not in proc.stderr


def test_threads_is_refused_with_ray(mc_dir, tiny_causal_dir, tmp_path):  # noqa: F811
    proc = run("eval", "zp-lke", "--dataset", str(mc_dir), "--model", str(tiny_causal_dir),
               "--out", str(tmp_path / "r"), "--examples", "2", "--executor", "ray",
               "--threads", "2")
    assert proc.returncode == 2 and "--cpus-per-replica" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r").exists()
