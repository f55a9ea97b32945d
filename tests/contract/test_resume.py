"""A resumed run is the run it claims to be.

The real command line is killed with SIGKILL once some chunks are checkpointed; the rerun must
give exactly the bytes of an uninterrupted run, with the same model (tokens summed over both
sessions), and with another model re-planted at the same path (the old checkpoints are
discarded with one line that says why, and the result is a clean run of the new model).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from factprobe.probes.backends import KINDS, BackendConfig
from factprobe.probes.engine import runner
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
from tests.contract.harness import factprobe_exe, run

# Many small chunks (3 relations x 10 seeds x 5 example counts, two stages): a kill lands
# between checkpoints long before the end, whatever the machine's speed.
EVAL = ["eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "1,2,3,4,5",
        "--seeds", ",".join(map(str, range(10))), "--response-tokens", "2", "--quiet"]
RESULT_FILES = ("outputs.parquet", "prompts.parquet", "metrics.json")


def _env(ws: Path) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "FACTPROBE_CACHE_DIR": str(ws / ".cache-factprobe")}


def _kill_after_checkpoints(ws: Path, out: str, chunks: int = 3, keep_out: bool = False
                            ) -> None:
    """Start the eval and SIGKILL it once ``chunks`` chunks are checkpointed."""
    partial = ws / f".{out}.partial"
    proc = subprocess.Popen(factprobe_exe() + EVAL + ["--out", out], cwd=ws, env=_env(ws),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while len(list(partial.glob("mc-*.parquet"))) < chunks:
            assert proc.poll() is None, f"the run ended before it was killed: " \
                                        f"{proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=60)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert keep_out or not (ws / out).exists()           # nothing half-written
    assert len(list(partial.glob("mc-*.parquet"))) >= chunks


def _eval(ws: Path, out: str) -> subprocess.CompletedProcess:
    proc = run(EVAL + ["--out", out], cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert not (ws / f".{out}.partial").exists()
    return proc


def _same_run(ws: Path, a: str, b: str) -> tuple[dict, dict]:
    for name in RESULT_FILES:
        assert (ws / a / name).read_bytes() == (ws / b / name).read_bytes(), name
    ra, rb = (json.loads((ws / x / "run.json").read_text()) for x in (a, b))
    assert ra["tokens"] == rb["tokens"] and ra["tokens"]["computed"] > 0
    assert ra["rows"] == rb["rows"]
    return ra, rb


def _replant(ws: Path, seed: int) -> None:
    """Another model at the same path, as a re-plant leaves it: same architecture, so the
    weight file has the same size, and copied with its modification times kept."""
    from transformers import AutoTokenizer

    from factprobe.probes.planting.model_factory import causal_model, save
    tok = AutoTokenizer.from_pretrained(ws / "model")
    other = save(causal_model(tok, layers=2, width=64, seed=seed), tok, ws / "other-model")
    old = (ws / "model" / "model.safetensors").stat()
    shutil.rmtree(ws / "model")
    shutil.copytree(other, ws / "model")              # copy2: mtimes come along
    shutil.rmtree(other)
    assert (ws / "model" / "model.safetensors").stat().st_size == old.st_size


def test_killed_then_resumed_is_byte_identical(workspace):
    """Over a previous run folder: the kill leaves it as it was, the rerun replaces it."""
    previous = {p.name: p.read_bytes() for p in (workspace / "run").iterdir()}
    _kill_after_checkpoints(workspace, "run", keep_out=True)
    assert {p.name: p.read_bytes() for p in (workspace / "run").iterdir()} == previous
    _eval(workspace, "run")
    _eval(workspace, "clean")
    resumed, clean = _same_run(workspace, "run", "clean")
    assert resumed["sessions"]["count"] == 2 and clean["sessions"]["count"] == 1
    assert resumed["sessions"]["chunks_resumed"] >= 3
    total = resumed["sessions"]["chunks_resumed"] + resumed["sessions"]["chunks_computed"]
    assert total == clean["sessions"]["chunks_computed"]
    assert set(resumed["timings_s"]) == set(clean["timings_s"]) == {"mc", "response", "total"}


def test_resumed_with_a_replanted_model_is_a_clean_run_of_it(workspace):
    _kill_after_checkpoints(workspace, "resumed")
    _replant(workspace, seed=1)
    proc = _eval(workspace, "resumed")
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "starting over" in lines[0], proc.stderr
    assert "model.safetensors" in lines[0]
    _eval(workspace, "clean")
    resumed, _ = _same_run(workspace, "resumed", "clean")
    assert resumed["sessions"] == {"count": 1, "chunks_computed": 300, "chunks_resumed": 0}
    # and it really is another model: the first run's numbers are gone
    before = pd.read_parquet(workspace / "run" / "outputs.parquet")
    after = pd.read_parquet(workspace / "resumed" / "outputs.parquet")
    key = ["fact_id", "option"]
    mine = after[(after.stage == "mc") & (after.n_examples == 2) & (after.seed == 0)]
    merged = before[before.stage == "mc"].merge(mine, on=key, suffixes=("_a", "_b"))
    assert len(merged) and (merged.logprob_a - merged.logprob_b).abs().max() > 1e-3


# ---------------------------------------------------------------- in-process, other changes

def _facts():
    from tests.probes.engine.test_runner import facts_many
    return facts_many()


def _plan():
    return plan(_facts(), ZPLKEConfig(n_examples=(3,), response_tokens=2))




def _kill_in_third_chunk(cfg: BackendConfig, out: Path) -> None:
    from tests.probes.engine.test_runner import killable
    with pytest.raises(KeyboardInterrupt):
        run_eval(EvalConfig("zp-lke", "d", str(out), progress=False), cfg, _plan(),
                 ZPLKEConfig(), {}, kinds=killable({"n": 0, "kill": True}))
    assert len(list(runner.checkpoint_folder(out).glob("mc-*.parquet"))) == 2


@pytest.mark.parametrize("change", ["batch_size", "dtype", "no_identity"])
def test_other_settings_start_over(tiny_causal_dir, tmp_path, monkeypatch, capsys, change):
    monkeypatch.setattr(runner, "CHUNK", 2)
    first = BackendConfig(str(tiny_causal_dir), batch_size=8)
    out = tmp_path / "run"
    _kill_in_third_chunk(first, out)
    second = {"batch_size": BackendConfig(str(tiny_causal_dir), batch_size=2),
              "dtype": BackendConfig(str(tiny_causal_dir), batch_size=8, dtype="bfloat16"),
              "no_identity": first}[change]
    if change == "no_identity":        # checkpoints of a factprobe that did not record it
        (runner.checkpoint_folder(out) / "identity.json").unlink()
    capsys.readouterr()
    run_eval(EvalConfig("zp-lke", "d", str(out), progress=False), second, _plan(),
             ZPLKEConfig(), {}, kinds=KINDS)
    err = capsys.readouterr().err
    assert "starting over" in err and len(err.strip().splitlines()) == 1
    assert {"batch_size": "batch_size 8 -> 2", "dtype": "dtype float32 -> bfloat16",
            "no_identity": "do not say which model"}[change] in err
    clean = tmp_path / "clean"
    run_eval(EvalConfig("zp-lke", "d", str(clean), progress=False), second, _plan(),
             ZPLKEConfig(), {}, kinds=KINDS)
    assert (out / "outputs.parquet").read_bytes() == (clean / "outputs.parquet").read_bytes()
    info = json.loads((out / "run.json").read_text())
    assert info["sessions"]["count"] == 1 and info["sessions"]["chunks_resumed"] == 0


def test_a_moved_model_still_resumes(tiny_causal_dir, tmp_path, monkeypatch, capsys):
    """The key is the model, not its path: the same files elsewhere resume the run."""
    monkeypatch.setattr(runner, "CHUNK", 2)
    out = tmp_path / "run"
    _kill_in_third_chunk(BackendConfig(str(tiny_causal_dir)), out)
    moved = shutil.copytree(tiny_causal_dir, tmp_path / "moved")
    capsys.readouterr()
    run_eval(EvalConfig("zp-lke", "d", str(out), progress=False), BackendConfig(str(moved)),
             _plan(), ZPLKEConfig(), {}, kinds=KINDS)
    assert "starting over" not in capsys.readouterr().err
    info = json.loads((out / "run.json").read_text())
    assert info["sessions"]["count"] == 2 and info["sessions"]["chunks_resumed"] == 2


def test_file_hash_memo_sees_an_in_place_rewrite(tmp_path):
    """Same inode, same size, the modification time put back: the change time still moves,
    so the remembered hash is not reused."""
    from factprobe.core.cache import ResponseCache
    from factprobe.probes.backends.identity import file_hash, sha256_problem
    cache = ResponseCache(tmp_path / "cache", "file-sha256", sha256_problem)
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"a" * 1000)
    first = file_hash(f, cache)
    assert file_hash(f, cache) == first                     # remembered
    st = f.stat()
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    while probe.stat().st_ctime_ns <= st.st_ctime_ns:       # wait for the clock to tick
        probe.write_bytes(b"")
    with open(f, "r+b") as fh:
        fh.write(b"b" * 1000)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_ino == st.st_ino and f.stat().st_mtime_ns == st.st_mtime_ns
    assert file_hash(f, cache) != first
