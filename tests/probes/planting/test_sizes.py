"""`factprobe plant` fits the sizes that depend on a graph's text (the causal block, the masked
statements per step) when they are not given, records what it fitted, and trains exactly as
if that value had been given."""
from __future__ import annotations

import json

import pytest

from factprobe.probes.planting.sizes import BLOCK, MASKED_BATCH
from tests.evaluators.cli.test_eval_cli import mc_dir, run  # noqa: F401  (a fixture)
from tests.throughput.test_threads import _folder_bytes

TINY = ["--epochs", "1", "--layers", "1", "--width", "32", "--heads", "2", "--vocab-size",
        "300", "--templates", "", "--threads", "1"]


@pytest.mark.parametrize("masked,key,shipped", [(False, "block", BLOCK),
                                                (True, "batch_size", MASKED_BATCH)])
def test_a_small_graph_gets_smaller_sizes_recorded_and_trained_as_given(
        mc_dir, tmp_path, masked, key, shipped):  # noqa: F811
    extra = ["--masked"] if masked else []
    proc = run("plant", "--dataset", str(mc_dir), *TINY, *extra, "--out", str(tmp_path / "fit"))
    assert proc.returncode == 0, proc.stderr
    fitted = json.loads((tmp_path / "fit" / "planted.json").read_text())["config"][key]
    # the test graph is a few dozen facts: its epoch fills less than the shipped size's steps
    assert isinstance(fitted, int) and 0 < fitted < shipped
    flag = "--block" if key == "block" else "--batch-size"
    proc = run("plant", "--dataset", str(mc_dir), *TINY, *extra, flag, str(fitted),
               "--out", str(tmp_path / "given"))
    assert proc.returncode == 0, proc.stderr
    assert _folder_bytes(tmp_path / "fit") == _folder_bytes(tmp_path / "given")
    proc = run("plant", "--dataset", str(mc_dir), *TINY, *extra, flag, str(shipped),
               "--out", str(tmp_path / "shipped"))
    if proc.returncode == 0:     # a given size is kept, even where it is too big to fit
        config = json.loads((tmp_path / "shipped" / "planted.json").read_text())["config"]
        assert config[key] == shipped
    else:                        # or refused in one line: longer than an epoch of text
        assert proc.returncode == 2 and "--block" in proc.stderr, proc.stderr
