"""benchmarks/suite_cpu.py's start-up hook: it logs a process's own CPU, imports and test where
the run's variable is set, stays silent where it is not, and is removed without touching a
file of its names that it did not write."""
from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import suite_cpu  # noqa: E402


def _child(site: Path, env: dict, code: str) -> None:
    # the hook as a .pth would load it: first, before the child's own code
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r}); "
                    f"import {suite_cpu.HOOK}; {code}"], env=env, check=True)


def test_the_hook_logs_each_process_and_only_under_the_run(tmp_path):
    files = suite_cpu.install_hook(tmp_path)
    log = tmp_path / "log.jsonl"
    env = {**os.environ, "FACTPROBE_SUITE_CPU_LOG": str(log), "PYTEST_CURRENT_TEST": "t::x (call)"}
    _child(tmp_path, env, "import json; sum(range(3_000_000))")
    _child(tmp_path, {k: v for k, v in env.items() if k != "FACTPROBE_SUITE_CPU_LOG"}, "pass")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == 1
    rec = records[0]
    assert rec["cpu"] > 0 and rec["test"] == "t::x (call)" and not rec["torch"]
    assert suite_cpu.kind(rec) == "other Python process"
    summary = suite_cpu.summarise(records, total_cpu=rec["cpu"] + 1.0, cores=2)
    assert summary["unlogged_cpu_s"] == pytest.approx(1.0)
    assert summary["floor_s"] == pytest.approx((rec["cpu"] + 1.0) / 2)
    assert summary["subprocesses_by_test_file"]["t"]["processes"] == 1
    suite_cpu.remove_hook(files)
    assert not any(f.exists() for f in files)


def test_a_file_of_its_name_that_it_did_not_write_is_kept(tmp_path, capsys):
    mine = tmp_path / f"{suite_cpu.HOOK}.pth"
    mine.write_text("import something_of_mine\n")
    with pytest.raises(SystemExit) as exc:
        suite_cpu.install_hook(tmp_path)
    assert exc.value.code == 2 and "was not written by" in capsys.readouterr().err
    suite_cpu.remove_hook([mine])
    assert mine.read_text() == "import something_of_mine\n"
    assert not (tmp_path / f"{suite_cpu.HOOK}.py").exists()


def test_a_site_it_cannot_write_is_one_line(tmp_path, capsys):
    not_a_folder = tmp_path / "site"
    not_a_folder.write_text("a file where the folder should be\n")
    with pytest.raises(SystemExit) as exc:
        suite_cpu.install_hook(not_a_folder)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: cannot write the hook") and \
        len(err.strip().splitlines()) == 1
    assert not_a_folder.read_text() == "a file where the folder should be\n"


def test_the_process_kinds_examples():
    # benchmarks/ is not a package module: the doctest walk of tests/test_doctests.py misses it
    result = doctest.testmod(suite_cpu)
    assert result.attempted >= 4 and result.failed == 0
