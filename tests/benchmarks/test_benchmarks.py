"""The benchmark scripts run end to end at toy sizes, and their correctness checks hold.

The benchmarks compare factprobe with lm-evaluation-harness and with plain transformers
loops; the figures in docs/benchmarks.md are only worth something if those comparisons score
the same pairs the same way. These runs are far too small to time anything: they guard the
scripts against rot and assert the equalities the published figures rest on.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY_MODEL = ["--layers", "1", "--width", "32", "--tokenizer-vocab", "400", "--vocab", "512",
              "--threads", "1"]


def run_script(name: str, *args: str, tmp_path: Path) -> str:
    """Run one benchmark script; the text of what it wrote to --json."""
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args,
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_text()


@pytest.mark.slow
def test_zp_lke_benchmark_scores_equal_lm_eval_and_plain(tmp_path):
    pytest.importorskip("lm_eval")
    res = json.loads(run_script(
        "bench_zp_lke.py", "--relations", "2", "--facts", "2", "--choices", "6", "--examples",
        "4", "--plain-facts", "0", *TINY_MODEL, tmp_path=tmp_path))
    assert res["pairs"] == 2 * 2 * 6
    assert res["lm_eval"]["max_abs_diff_vs_factprobe"] < 1e-4
    assert res["plain"]["max_abs_diff_vs_factprobe"] < 1e-4
    assert res["factprobe_eval_cli"]["max_abs_diff_vs_score"] < 1e-4
    fp = res["factprobe"]
    # the shared prefix is computed once per relation, not once per option
    assert fp["tokens_computed"] <= fp["tokens_bound"] < fp["tokens_full_sequence"]
    assert res["lm_eval"]["tokens_computed"] > fp["tokens_computed"]


@pytest.mark.slow
def test_generate_benchmark_matches_transformers_and_lm_eval(tmp_path):
    pytest.importorskip("lm_eval")
    res = json.loads(run_script(
        "bench_generate.py", "--greedy-prompts", "3", "--sample-prompts", "1", "--samples", "3",
        "--monitor-facts", "2", *TINY_MODEL, tmp_path=tmp_path))
    greedy = res["belief_icl_greedy"]
    assert greedy["same_tokens_as_plain"] == 1.0
    assert greedy["same_text_as_lm_eval"] == 1.0
    monitor = res["monitor_teacher_forced"]
    assert monitor["prompts"] == 2 * 13
    assert monitor["max_abs_diff_vs_lm_eval"] < 1e-4
    assert monitor["max_abs_diff_vs_plain"] < 1e-4
    assert res["belief_icl_samples"]["samples"] == 3


@pytest.mark.slow
def test_build_benchmarks_run_on_a_small_graph(tmp_path):
    text = run_script("bench_build_facts.py", "--facts", "3000", "--relations", "6", "--work",
                      str(tmp_path), tmp_path=tmp_path)
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["benchmark"] for r in rows] == ["build facts --source trex",
                                             "build facts --source csv"]
    # both layouts hold the same triples, so both builds keep the same facts
    assert rows[0]["facts"] == rows[1]["facts"] > 0
    assert all(r["peak_rss_mb"] > 0 for r in rows)


@pytest.mark.slow
def test_build_mc_benchmark_runs(tmp_path):
    row = json.loads(run_script("bench_build_mc.py", "--facts", "20000", "--relations", "4",
                                "--work", str(tmp_path), tmp_path=tmp_path))
    assert row["facts"] == 20000 and row["relations_kept"] >= 1 and row["rows"] > 0


@pytest.mark.slow
def test_plant_benchmark_times_both_paths_and_the_new_one_on_any_threads(tmp_path):
    """bench_plant.py keeps the training path before issue 30 to time it: on a tiny graph it
    times both, and today's path plants the same weights and log on one thread and on two,
    causal and masked (what docs/benchmarks.md's planting ratios rest on)."""
    from factprobe.cli.app import main
    graph = ROOT / "data" / "kg" / "sample.ttl"
    for argv in (["build", "facts", "--source", "rdf", "--path", str(graph), "--relations",
                  "rel:capital,rel:birthYear", "--out", str(tmp_path / "facts")],
                 ["build", "mc", "--facts", str(tmp_path / "facts"), "--out",
                  str(tmp_path / "mc"), "--choices", "10", "--min-facts", "20",
                  "--min-objects", "10", "--train", "8", "--test", "16"]):
        assert main([*argv, "--quiet"]) == 0
    res = json.loads(run_script("bench_plant.py", "--dataset", str(tmp_path / "mc"),
                                "--epochs", "2", "--repeat", "1", "--width", "32",
                                "--vocab-size", "600", "--block", "64", tmp_path=tmp_path))
    for kind in ("causal", "masked"):
        assert res[kind]["whole"]["same_bits_1_and_2_threads"] is True, kind
        assert res[kind]["epoch"]["steps_per_epoch"] > 0
        assert res[kind]["epoch"]["steps_new_2_wall"] > 0 and res[kind]["whole"]["old_s"] > 0
    assert res["causal"]["epoch"]["tokenise_old"] > 0 and res["masked"]["epoch"]["masks_old"] > 0


@pytest.mark.slow
def test_engines_benchmark_agrees_across_engines(tiny_llama_dir, sample_datasets, tmp_path):
    """The same tiny ZP-LKE plan through the local backend, the local backend split over
    memory and disk, and (where installed) llama.cpp's server: the split one scores exactly as
    the whole, the server within 1e-3 with the same argmax."""
    res = json.loads(run_script(
        "bench_engines.py", "--model", str(tiny_llama_dir), "--dataset",
        str(sample_datasets / "sample-mc"), "--limit", "1", "--examples", "4",
        tmp_path=tmp_path))
    assert res["local"]["tokens_computed"] > 0 and res["local"]["seconds"] > 0
    split = res["device_map"]
    assert "disk" in split["placement"] and split["questions"] > 0
    assert split["argmax_agreement"] == 1.0 and split["max_abs_diff"] < 1e-5
    served = res["llama_cpp"]
    if "skipped" not in served:
        assert served["scoring"] == "forced" and served["questions"] == split["questions"]
        assert served["argmax_agreement"] >= 0.99 and served["max_abs_diff"] < 1e-3
        assert served["requests"] >= served["questions"]


@pytest.mark.slow
def test_kernels_benchmark_runs_both_modes_and_each_repeats_its_bits(tmp_path):
    from factprobe.core.kernels import can_pin, cpu_vendor
    res = json.loads(run_script("bench_kernels.py", "--layers", "1", "--width", "64",
                                "--batch", "2", "--seq", "16", "--reps", "1", "--repeat", "2",
                                tmp_path=tmp_path))
    assert res["bits_repeat"] == {"portable": True, "native": True}
    if can_pin():
        assert res["portable"]["kernels"] == {"aten": "AVX2", "onednn_max_isa": "AVX2",
                                              "mkl_cbwr": "AVX2", "vendor": cpu_vendor()}
        assert res["native"]["kernels"]["mkl_cbwr"] == "native"
    assert res["forward_ratio"] > 0 and res["train_step_ratio"] > 0
