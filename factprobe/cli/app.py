"""The ``factprobe`` console script: parses the command line, runs one command, and turns a
:class:`~factprobe.core.errors.UserError` into one line on stderr and exit code 2.

Whatever the command prints (its messages, a library's warnings, progress bars) passes through
:func:`~factprobe.core.redact.scrub`: a token of the environment or a URL's credentials never
reaches the terminal or a log, whichever layer's message quoted it."""
from __future__ import annotations

import argparse
import sys

from factprobe.core.errors import UserError
from factprobe.core.redact import scrub
from factprobe.cli.outputs import guarded_outputs


class OneLineParser(argparse.ArgumentParser):
    """argparse prints the whole usage before an error; one line says it better."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    from factprobe.cli import build as build_cli
    from factprobe.cli.common import common_flags
    common = common_flags()
    parser = OneLineParser(
        prog="factprobe",
        description="Build factual-knowledge probing datasets from knowledge graphs and probe "
                    "language models with them.")
    from factprobe.core.digests import factprobe_version  # not tables: that imports pyarrow
    parser.add_argument("--version", action="version", version=factprobe_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build_cli.register(sub, common)
    from factprobe.cli import evaluate as cli_eval
    cli_eval.register(sub, common)
    from factprobe.cli import plant as cli_plant
    cli_plant.register(sub, common)
    from factprobe.cli import report as report_cli
    report_cli.register(sub, common)
    from factprobe.cli import publish as cli_publish
    cli_publish.register(sub, common)
    from factprobe.cli import init as cli_init
    cli_init.register(sub, common)
    from factprobe.cli import export as cli_export
    cli_export.register(sub, common)
    from factprobe.cli import merge as cli_merge
    cli_merge.register(sub, common)
    from factprobe.cli.refresh import add_diff
    add_diff(sub, common)
    return parser


class _Scrubbed:
    """A text stream that masks secrets in what is written to it."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Scrubbed(sys.stdout), _Scrubbed(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # before any command imports torch, which reads the choice once (core/kernels.py)
    from factprobe.core.kernels import pin
    pin(getattr(args, "kernels", "portable"))
    try:
        with guarded_outputs(args):
            message = args.run(args)
    except UserError as exc:
        print(f"factprobe: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path the system refuses before any check could (name too long)
        from factprobe.cli.outputs import no_space_line
        if no_space_line(args, exc):
            print(f"factprobe: error: {no_space_line(args, exc)}", file=sys.stderr)
            return 2
        where = f": {exc.filename}" if exc.filename else ""
        print(" ".join(f"factprobe: error: {exc.strerror or exc}{where}".split()),
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("factprobe: interrupted; nothing half-written was left behind", file=sys.stderr)
        return 130
    if message and not getattr(args, "quiet", False):
        print(message, file=sys.stderr)
    return 0


def console() -> None:
    """The console script and ``python -m factprobe.cli``: :func:`main`, then, where a model's
    libraries are loaded, exit without Python's last garbage collections walking every object
    torch and transformers made (0.97 s of such a process's exit, 0.17 s frozen, measured): a
    pipeline's model stages each paid it. Every file was closed and every output moved into
    place before ``main`` returned; exit handlers still run. Only there: DuckDB (nanobind)
    checks at exit that its objects were freed and would print frozen cycles as leaks. Not in
    ``main``: a caller's own process (a test, a notebook) goes on and needs its collections."""
    code = main()
    if "torch" in sys.modules and "duckdb" not in sys.modules:
        import gc
        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
