"""The in-process harness (tests/inprocess.py) reports what a new process would, and
leaves nothing of one run behind for the next."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from tests.contract.harness import run, run_process
from tests.inprocess import needs_process, run_in_process

# an argparse error, a user error from a command's run, --help on stdout, a good command
PARITY = [
    ["build", "mc", "--facts", "aliases", "--out", "out", "--choices", "1x"],
    ["build", "mc", "--facts", "nope", "--out", "out"],
    ["eval", "zp-lke", "--dataset", "mc", "--model", "userfile.txt", "--examples", "2",
     "--out", "out"],
    ["merge", "--help"],
    ["build", "mc", "--facts", "aliases", "--out", "mc2", "--choices", "5", "--min-facts",
     "10", "--min-objects", "5", "--train", "5", "--test", "6"],
]


@pytest.mark.parametrize("argv", PARITY, ids=lambda a: "-".join(a[:2] + a[-1:]))
def test_in_process_reports_what_the_console_script_does(argv, workspace, tmp_path):
    other = tmp_path / "other"
    import shutil
    shutil.copytree(workspace, other, symlinks=True)
    inside, outside = run(argv, cwd=workspace), run_process(argv, cwd=other)
    assert inside.returncode == outside.returncode
    assert inside.stdout == outside.stdout
    # the same lines on stderr, the folder names aside
    assert inside.stderr.replace(str(workspace), "WS") == outside.stderr.replace(str(other), "WS")
    assert sorted(p.name for p in workspace.iterdir()) == sorted(p.name for p in other.iterdir())


def _misbehaving(argv):
    """What a command might do that a new process would not pass on to the next."""
    warnings.warn("a library's warning")
    logging.getLogger("some.library").warning("a library's log line")
    os.write(2, b"written to fd 2 from C\n")
    print("to stdout")
    os.environ["FACTPROBE_TEST_LEFTOVER"] = "1"
    os.chdir("/")
    signal.signal(signal.SIGTERM, lambda *a: None)
    from factprobe.core.redact import remember
    remember("a-remembered-secret")
    return 3


def test_a_run_is_captured_and_leaves_nothing_behind(tmp_path):
    cwd, env, handler = os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGTERM)
    from factprobe.core import redact
    proc = run_in_process(["x"], tmp_path, {"FACTPROBE_CASE": "1"}, 30, main=_misbehaving)
    assert proc.returncode == 3 and proc.stdout == "to stdout\n"
    lines = proc.stderr.splitlines()
    assert any("a library's warning" in ln for ln in lines)     # not kept by pytest's recorder
    assert "a library's log line" in lines                      # not kept by pytest's handler
    assert "written to fd 2 from C" in lines
    assert os.getcwd() == cwd and dict(os.environ) == env
    assert signal.getsignal(signal.SIGTERM) == handler
    assert "a-remembered-secret" not in redact._seen
    again = run_in_process(["x"], tmp_path, {}, 30, main=_misbehaving)
    assert any("a library's warning" in ln for ln in again.stderr.splitlines())  # not "once"


def test_an_uncaught_exception_is_a_traceback_and_exit_1(tmp_path):
    def crash(argv):
        raise RuntimeError("boom")
    proc = run_in_process(["x"], tmp_path, {}, 30, main=crash)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "boom" in proc.stderr


def test_a_hung_command_times_out(tmp_path):
    def hang(argv):
        try:
            time.sleep(30)
        except Exception:       # a command's broad handler must not swallow the deadline
            return 2
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_in_process(["x"], tmp_path, {}, 0.5, main=hang)
    assert time.monotonic() - start < 10


def test_variables_read_at_import_send_a_case_to_a_process():
    assert needs_process({"PYTHONPATH": "x"}) and needs_process({"HF_ENDPOINT": "x"})
    assert not needs_process({"OPENAI_API_KEY": "x"}) and not needs_process(None)
