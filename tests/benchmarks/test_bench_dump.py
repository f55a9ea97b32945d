"""benchmarks/bench_dump.py end to end at a toy size: it writes the synthetic dumps, times the
build against bzip2 -dc, and the build's facts are exactly the generator's best-rank facts."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_dump_runs_and_checks_the_facts(tmp_path):
    out = tmp_path / "dump.jsonl"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_dump.py"),
                           "--entities", "300,600", "--repeat", "1", "--work", str(tmp_path),
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sizes, summary = rows[:-1], rows[-1]
    assert [r["entities"] for r in sizes] == [300, 600]
    for r in sizes:
        assert r["facts_equal_expected"] and 0 < r["facts"] <= r["best_rank_facts_written"]
        assert r["runs"][0]["bzip2"]["seconds"] > 0 and r["tree_rss_mb_max"] > 0
    assert summary["memory_ratio"] > 0 and set(summary["time_ratio_vs_bzip2"]) == {"300", "600"}
    costs = summary["parse_costs"]
    # the raw-line test and the typed decoder read the same statements
    assert costs["typed_skip"]["statements"] == costs["raw_test_first"]["statements"] > 0
