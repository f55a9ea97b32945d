"""Starting a real server for a test: a free port on 127.0.0.1, a process waited for until its
URL answers, and `transformers serve` (the test extra's OpenAI-compatible endpoint)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_answering(proc: subprocess.Popen, url: str, timeout: float, what: str,
                   output: Callable[[], str] = lambda: "") -> None:
    """Until ``url`` answers; the process is killed and a RuntimeError names ``what`` (and the
    tail of ``output()``) if it exits first or ``timeout`` seconds pass."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"{what} did not start: {output()[-2000:]}") from None
            time.sleep(0.3)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextlib.contextmanager
def transformers_serving(model: str, hf_home: Path, timeout: float) -> Iterator[str]:
    """``transformers serve MODEL`` offline on CPU with ``HF_HOME=hf_home``; its API root."""
    exe = Path(sys.executable).with_name("transformers")
    if not exe.exists():
        pytest.fail("the 'transformers' command is missing: pip install 'transformers[serving]'")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HOME": str(hf_home), "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen([str(exe), "serve", model, "--host", "127.0.0.1", "--port",
                             str(port), "--device", "cpu"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_answering(proc, f"http://127.0.0.1:{port}/health", timeout, "transformers serve",
                       lambda: proc.stderr.read() if proc.stderr else "")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)
