"""Running ``factprobe`` inside the test process, as :func:`factprobe.cli.app.main`, the function
the console script calls: the same exit code, stdout and stderr as a fresh interpreter, without
paying a fresh interpreter's start-up (torch, transformers, pandas) for every command a test
runs (the contract tables run hundreds). :func:`factprobe_cli` is what tests call.

What a fresh process would not share with the case before it is isolated or reset around each
run: the working folder and the environment; the Python-level and file-descriptor-level
stdout and stderr (a library writing to fd 2 from C is counted, as in a real process); the
warning filters and the once-only registries (pytest records warnings instead of printing them);
the logging handlers (pytest's capture handler would swallow what ``logging.lastResort`` prints,
and a library's handler keeps the stream it was created with); the signal handlers; torch's
thread count; what factprobe remembers for the life of a process (secrets to mask, warnings
already printed); and Hugging Face's offline switch, which huggingface_hub reads from the
environment once, at import.

A variable that a library reads only when it is imported (``PYTHONPATH``, ``HF_*``,
``TRANSFORMERS_*``...) cannot be set for one in-process run: :func:`needs_process` sends such a
case to a real process instead.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from pathlib import Path

# Read once, at import, by a library (or by the interpreter): setting one per case in-process
# would do nothing, so a case that sets one runs in a real process.
IMPORT_TIME_ENV = ("PYTHON", "HF_", "HUGGING", "TRANSFORMERS_", "TOKENIZERS_", "OMP_", "MKL_",
                   "TORCH", "CUDA", "RAY_", "TQDM_")
# The interpreter's own default warning filters (python -W unset, not a debug build): what the
# console script starts with, before any library adds its own.
_DEFAULT_FILTERS = (("default", DeprecationWarning, "__main__"),
                    ("ignore", DeprecationWarning, None),
                    ("ignore", PendingDeprecationWarning, None),
                    ("ignore", ImportWarning, None),
                    ("ignore", ResourceWarning, None))
_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None),
                             getattr(signal, "SIGPIPE", None)) if s is not None)


class CaseTimeout(BaseException):
    """Raised in the command when its time is up; a BaseException, so that no ``except
    Exception`` of the command can turn it into a user error."""


def needs_process(env: dict | None) -> bool:
    """A case whose extra environment a library reads at import time."""
    return any(k.startswith(IMPORT_TIME_ENV) for k in (env or {}))


@contextlib.contextmanager
def _env_and_cwd(env: dict, cwd: Path):
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@contextlib.contextmanager
def _fd_captured(fd: int):
    """What the process writes to ``fd`` (below Python's sys streams), as a list of one str."""
    out: list[str] = []
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(fd)
        os.dup2(tmp.fileno(), fd)
        try:
            yield out
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def _print_warning(msg) -> None:
    """The interpreter's own way of showing a warning (warnings._showwarnmsg_impl, which
    pytest's recorder has replaced by the time a test runs)."""
    file = msg.file if msg.file is not None else sys.stderr
    try:
        file.write(warnings._formatwarnmsg(msg))
    except OSError:
        pass


@contextlib.contextmanager
def _warnings_as_in_a_new_process():
    with warnings.catch_warnings():   # restores filters and both hooks below on the way out
        warnings.resetwarnings()   # also invalidates every module's once-only registry
        for action, category, module in reversed(_DEFAULT_FILTERS):
            warnings.filterwarnings(action, category=category, module=module or "")
        warnings.showwarning = warnings._showwarning_orig
        warnings._showwarnmsg_impl = _print_warning
        yield


@contextlib.contextmanager
def _logging_to(stream):
    """Root without handlers (so ``logging.lastResort`` prints to the current sys.stderr, as in
    a new process) and every library's stream handler writing to ``stream``."""
    root = logging.getLogger()
    saved_root = root.handlers[:], root.level
    root.handlers[:] = []
    root.setLevel(logging.WARNING)
    moved = []
    for logger in list(logging.Logger.manager.loggerDict.values()):
        for h in getattr(logger, "handlers", ()):
            if type(h) is logging.StreamHandler:
                moved.append((h, h.setStream(stream)))
    try:
        yield
    finally:
        for h, old in moved:
            h.setStream(old)
        root.handlers[:] = saved_root[0]
        root.setLevel(saved_root[1])


def _once_memories() -> list[set]:
    """factprobe's module-level memories of what a process has already done: a new process
    starts with them empty (found with grep for module-level sets and dicts; the others are
    caches of pure functions)."""
    from factprobe.core import outdir, redact
    return [redact._seen,     # secrets to mask, learnt from URLs seen
            outdir._SAID]     # warnings about --out, printed once


@contextlib.contextmanager
def _process_state(offline: bool):
    """Signal handlers, torch's threads, redaction's memory, the Hub's offline switch (on for
    a run whose environment sets HF_HUB_OFFLINE=1, as huggingface_hub would have read it)."""
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    memories = [(m, set(m)) for m in _once_memories()]
    for memory, _ in memories:
        memory.clear()
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    patched = []
    for mod_name in ("huggingface_hub.constants", "datasets.config"):
        mod = sys.modules.get(mod_name)
        if offline and mod is not None and hasattr(mod, "HF_HUB_OFFLINE"):
            patched.append((mod, mod.HF_HUB_OFFLINE))
            mod.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        for memory, saved in memories:
            memory.clear()
            memory.update(saved)
        if threads is not None:
            torch.set_num_threads(threads)
        for mod, value in patched:
            mod.HF_HUB_OFFLINE = value


@contextlib.contextmanager
def _deadline(seconds: float):
    """Interrupt a command that outlives ``seconds`` (only from the main thread, where signals
    are delivered): a hung case fails instead of hanging the suite."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _fire(signum, frame):
        raise CaseTimeout(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_in_process(argv: list[str], cwd: Path, env: dict, timeout: float, main=None
                   ) -> subprocess.CompletedProcess:
    """``factprobe argv`` through :func:`factprobe.cli.app.main` (or ``main``: the harness's
    own tests pass a function that misbehaves), as the console script runs it
    (``sys.exit(main())``): exit code, stdout and stderr as a subprocess would report them."""
    if main is None:
        from factprobe.cli.app import main
    out, err = io.StringIO(), io.StringIO()
    streams = sys.stdout, sys.stderr
    offline = env.get("HF_HUB_OFFLINE") == "1"
    with _env_and_cwd(env, cwd), _process_state(offline), _fd_captured(1) as fd_out, \
            _fd_captured(2) as fd_err, _warnings_as_in_a_new_process(), _logging_to(err):
        sys.stdout, sys.stderr = out, err
        try:
            with _deadline(timeout):
                code = main(list(argv))
        except SystemExit as exc:   # argparse (--help, a bad flag) and sys.exit in a command
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=err)
                code = 1
        except CaseTimeout:
            raise subprocess.TimeoutExpired(["factprobe", *argv], timeout) from None
        except BaseException:        # what the interpreter prints for an uncaught exception
            err.write(traceback.format_exc())
            code = 1
        finally:
            sys.stdout, sys.stderr = streams
    return subprocess.CompletedProcess(["factprobe", *argv], code,
                                       out.getvalue() + fd_out[0], err.getvalue() + fd_err[0])


def factprobe_cli(args, cwd: Path, env: dict | None = None, timeout: float = 300
                  ) -> subprocess.CompletedProcess:
    """``factprobe args`` in ``cwd`` with ``env`` added to this process's environment: in this
    process, or in a new one (``python -m factprobe.cli.app``) where ``env`` sets a variable
    read at import."""
    if needs_process(env) or os.environ.get("FACTPROBE_TEST_PROCESSES") == "1":
        # the second: every command in a new process, to compare both ways (or time them)
        return subprocess.run([sys.executable, "-m", "factprobe.cli.app", *args], cwd=cwd,
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    return run_in_process(list(args), Path(cwd), dict(env or {}), timeout)
