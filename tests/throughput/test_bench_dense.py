"""benchmarks/bench_dump.py --dense end to end at a toy size: a dense dump (several facts per
entity over twenty relations), the build's facts exactly the generator's, and the rates the
issue asks for (MB of JSON per CPU-second, facts per second)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_dump_dense_mode(tmp_path):
    out = tmp_path / "dump.jsonl"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_dump.py"), "--dense",
                           "--entities", "300,600", "--repeat", "1", "--work", str(tmp_path),
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sizes, summary = rows[:-1], rows[-1]
    assert summary["shape"] == "dense" and all(r["shape"] == "dense" for r in sizes)
    for r in sizes:
        assert r["facts_equal_expected"] and len(r["relations"]) == 20
        assert r["facts"] >= 3 * r["entities"]               # dense: several facts an entity
    assert set(summary["facts_per_s"]) == {"300", "600"}
    assert all(v > 0 for v in summary["build_cpu_mb_per_s"].values())
    assert summary["facts_per_entity"]["600"] >= 3
    assert (tmp_path / "dense-600.json.bz2").is_file()
