"""Building ``factprobe``'s parser is cheap: ``--help`` and a mistyped flag, for every command,
import none of the heavy libraries (each costs a fraction of a second, pandas and torch whole
seconds); those load in the command's run function only.

Checked in a fresh interpreter (this test process has long imported them all): one child walks
the parser's whole command tree, asks each command for ``--help`` and gives it an unknown flag,
and reports which heavy modules ``sys.modules`` then holds.
"""
from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "pyarrow", "numpy", "torch", "datasets", "transformers", "duckdb",
         "matplotlib", "scipy", "sklearn", "ray", "tokenizers", "safetensors")

_CHILD = r"""
import argparse, contextlib, io, json, sys
from factprobe.cli.app import build_parser, main

def commands(parser, path=()):
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, path + (name,))

codes = {}
for path in list(commands(build_parser())):
    for extra in ("--help", "--no-such-flag"):
        argv = [*path, extra]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
        codes[" ".join(argv)] = code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in set(sys.argv[1].split(",")))
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_help_and_flag_errors_import_no_heavy_library():
    proc = subprocess.run([sys.executable, "-c", _CHILD, ",".join(HEAVY)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    codes = got["codes"]
    # the walk reached every group and leaf (build facts, eval zp-lke, export ...): at least
    # as many commands as today, each answering --help with 0 and a bad flag with 2
    assert {"build facts --help", "eval zp-lke --help", "eval monitor --help", "plant --help",
            "report --help", "publish --help", "init --help", "merge --help",
            "export --help"} <= set(codes)
    assert len(codes) >= 2 * 20
    assert {a: c for a, c in codes.items() if a.endswith("--help") and c != 0} == {}
    assert {a: c for a, c in codes.items() if a.endswith("--no-such-flag") and c != 2} == {}
    assert got["heavy"] == [], f"building the parser imported {got['heavy'][:10]}"
