"""``--executor ray``, ``--shard I/N`` and ``factprobe merge`` on a real local Ray cluster (one
per module: ``ray.init(num_cpus=2)``), tiny real models and datasets built from the sample graph:
every method's run is the local run, a killed driver resumes with another replica count, a
replica that dies is replaced."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from factprobe.cli.app import main
from factprobe.core.cpus import ray_worker_env
from tests.contract.conftest import BUILD
from tests.contract.harness import run as run_cli

ROOT = Path(__file__).resolve().parents[3]
BUILT = ("facts", "aliases", "mc", "templates", "multiprompt", "fktc")
# method -> (dataset, model, flags): small, but every stage of every method (the multi-prompt
# methods on 4 facts a relation: every stage still runs; on all of them BELIEF-ICL's three runs
# took 270 s of a 19-minute suite, 9 s now, measured 2026-11-27)
METHODS = {
    "zp-lke": ("mc", "gpt2", ["--examples", "2,3", "--response-tokens", "2"]),
    "prompt": ("mc", "gpt2", ["--response-tokens", "2"]),
    "belief": ("multiprompt", "bert", ["--limit", "4"]),
    "belief-icl": ("multiprompt", "gpt2", ["--contexts", "zero,2-relation", "--samples", "3",
                                           "--sample-prompts", "4", "--max-new-tokens", "3",
                                           "--limit", "4"]),
    "monitor": ("fktc", "gpt2", ["--max-new-tokens", "3", "--limit", "3"]),
}


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def build_workspace(ws: Path, tiny_causal_dir: Path, tiny_masked_dir: Path) -> Path:
    """The datasets every method reads, built in ``ws``, and the tiny models beside them."""
    for name, argv in BUILD:
        if name in BUILT:
            proc = run_cli([*argv, "--out", name, "--quiet"], cwd=ws)
            assert proc.returncode == 0, f"building {name}: {proc.stderr}"
    (ws / "gpt2").symlink_to(tiny_causal_dir)
    (ws / "bert").symlink_to(tiny_masked_dir)
    return ws


@pytest.fixture(scope="module")
def ws(tmp_path_factory, tiny_causal_dir, tiny_masked_dir) -> Path:
    return build_workspace(tmp_path_factory.mktemp("scale"), tiny_causal_dir, tiny_masked_dir)


def eval_args(ws: Path, method: str, out: str, *extra: str) -> list[str]:
    dataset, model, flags = METHODS[method]
    return ["eval", method, "--dataset", str(ws / dataset), "--model", str(ws / model),
            "--out", str(ws / out), "--quiet", *flags, *extra]


def outputs(folder: Path) -> pd.DataFrame:
    return pd.read_parquet(folder / "outputs.parquet")


def _floats(values) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values]) \
        if len(values) else np.zeros(0)


def assert_same_run(got: Path, want: Path) -> None:
    """Same rows in the same order, every number (log-probs, probabilities) within 1e-5,
    everything else equal, the same metrics."""
    a, b = outputs(got), outputs(want)
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    for k in a.columns:
        first = next((v for v in a[k] if v is not None), None)
        numeric = a[k].dtype.kind == "f" or (
            isinstance(first, (list, np.ndarray)) and len(first)
            and isinstance(first[0], (float, np.floating)))
        if numeric:
            x, y = _floats(a[k].tolist()), _floats(b[k].tolist())
            assert x.shape == y.shape, k
            assert np.allclose(x, y, rtol=0, atol=1e-5, equal_nan=True), k
        else:
            assert a[k].astype(str).tolist() == b[k].astype(str).tolist(), k
    ma = json.loads((got / "metrics.json").read_text())
    mb = json.loads((want / "metrics.json").read_text())
    assert ma == mb


@pytest.mark.parametrize("method", list(METHODS))
def test_local_ray_and_merged_shards_agree(ray_cluster, ws, method):
    local, ray_run, merged = f"{method}-local", f"{method}-ray", f"{method}-merged"
    assert main(eval_args(ws, method, local)) == 0
    assert main(eval_args(ws, method, ray_run, "--executor", "ray", "--replicas", "2")) == 0
    for i in range(3):
        assert main(eval_args(ws, method, f"{method}-s{i}", "--shard", f"{i}/3")) == 0
    assert main(["merge", *(str(ws / f"{method}-s{i}") for i in (2, 0, 1)),
                 "--out", str(ws / merged), "--quiet"]) == 0
    assert_same_run(ws / ray_run, ws / local)
    assert_same_run(ws / merged, ws / local)
    if method != "monitor":   # its built stages are cut per shard (probes/engine/shards.py)
        assert (ws / merged / "outputs.parquet").read_bytes() == \
            (ws / local / "outputs.parquet").read_bytes()
    info = json.loads((ws / ray_run / "run.json").read_text())["executor"]
    assert info["kind"] == "ray" and info["replicas"] == 2
    # at the niceness of the raylet (started here by the fixture's ray.init), plus an exported
    # RAY_worker_niceness, not 15 more: starved beside any other process
    want = min(19, os.nice(0) + int(ray_worker_env()["RAY_worker_niceness"]))
    assert [r["niceness"] for r in info["per_replica"]] == [want] * 2
    if method == "zp-lke":   # many prefix groups: both replicas get work (MONITOR's few may not)
        assert all(r["chunks"] > 0 and r["tokens"] > 0 for r in info["per_replica"])
    shards = json.loads((ws / merged / "run.json").read_text())["executor"]
    assert [s["index"] for s in shards["per_shard"]] == [0, 1, 2]


def test_replicas_get_balanced_token_loads(ray_cluster, ws):
    per = json.loads((ws / "zp-lke-ray" / "run.json").read_text())["executor"]["per_replica"]
    tokens = sorted(r["tokens"] for r in per)
    assert tokens[0] >= 0.7 * tokens[1]


def test_killed_driver_resumes_with_another_replica_count(ray_cluster, ws):
    out = ws / "killed"
    partial = ws / ".killed.partial"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    argv = eval_args(ws, "zp-lke", "killed", "--executor", "ray", "--replicas", "2",
                     "--ray-address", ray_cluster)
    proc = subprocess.Popen([sys.executable, "-m", "factprobe.cli", *argv], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if partial.is_dir() and len(list(partial.glob("mc-*.parquet"))) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert not out.exists()
    kept = len(list(partial.glob("*.parquet")))
    assert kept >= 3
    assert main(eval_args(ws, "zp-lke", "killed", "--executor", "ray", "--replicas", "1")) == 0
    assert_same_run(out, ws / "zp-lke-local")
    # byte for byte the uninterrupted Ray run's: the local run may use another thread count
    # than a replica (Ray gives an actor one per CPU), which moves log-probs by ~1e-7
    assert (out / "outputs.parquet").read_bytes() == \
        (ws / "zp-lke-ray" / "outputs.parquet").read_bytes()
    sessions = json.loads((out / "run.json").read_text())["sessions"]
    assert sessions["count"] == 2 and sessions["chunks_resumed"] >= 3
    assert not partial.exists()


def test_a_replica_that_dies_is_replaced(ray_cluster, ws, tmp_path, monkeypatch):
    marker = tmp_path / "died"
    monkeypatch.setenv("FACTPROBE_TEST_REPLICA_EXIT", str(marker))
    assert main(eval_args(ws, "zp-lke", "died", "--executor", "ray", "--replicas", "2")) == 0
    assert marker.exists()             # a replica did exit in its second chunk
    assert_same_run(ws / "died", ws / "zp-lke-local")
    info = json.loads((ws / "died" / "run.json").read_text())
    assert sum(r["chunks"] for r in info["executor"]["per_replica"]) == \
        info["sessions"]["chunks_computed"]


def test_merge_refuses_shards_of_other_commands(ray_cluster, ws, capsys):
    assert main(eval_args(ws, "zp-lke", "other-s1", "--shard", "1/3", "--examples", "2")) == 0
    capsys.readouterr()
    code = main(["merge", str(ws / "zp-lke-s0"), str(ws / "other-s1"), str(ws / "zp-lke-s2"),
                 "--out", str(ws / "bad-merge")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "different commands" in err and "method_config" in err
    assert main(["merge", str(ws / "zp-lke-s0"), "--out", str(ws / "bad-merge")]) == 2
    assert "shard(s) 1, 2 of 3 missing" in capsys.readouterr().err
    assert not (ws / "bad-merge").exists()


def test_without_ray_one_line_and_exit_2(ws, tmp_path):
    code = ("import sys; sys.modules['ray'] = None\n"      # as if Ray were not installed
            "from factprobe.cli.app import main\n"
            f"sys.exit(main({eval_args(ws, 'zp-lke', 'noray', '--executor', 'ray')!r}))")
    proc = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("factprobe: error: --executor ray needs Ray: "
                                   "pip install 'factprobe[ray]'")


@pytest.mark.parametrize("value", ["abc", "1.5", ""])
def test_a_garbage_ray_niceness_is_one_line_not_a_crash(ws, value):
    """Ray dies of a segmentation fault on import with a non-numeric RAY_worker_niceness; the
    value is refused first. A new process: a crash must not take the suite with it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_worker_niceness": value}
    proc = subprocess.run([sys.executable, "-m", "factprobe.cli",
                           *eval_args(ws, "zp-lke", f"nice-{value}", "--executor", "ray")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "RAY_worker_niceness" in lines[0] and "Traceback" not in lines[0]
    assert not (ws / f"nice-{value}").exists()
