"""Two promises of every command, on the small workspace of real datasets and tiny models:

- ``--quiet`` is quiet: every sub-command accepts it, and a good command run with it prints
  nothing at all, on a pipe or on a terminal (progress bars are drawn only on a terminal, so
  the terminal case is run under a pseudo-terminal);
- ``factprobe report`` works on an ordinary mix of runs: BELIEF and BELIEF-ICL cover different
  facts by design, one run has --limit and another not; the report compares them on the facts
  they share and says so.
"""
from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from pathlib import Path

import pandas as pd
import pytest

from tests.contract.harness import factprobe_exe, run

LIMIT = ("--limit", "2")
# One good command per sub-command (each runs in the workspace; names are its folders).
GOOD = {
    "build facts": ["build", "facts", "--source", "csv", "--path", "triples.csv",
                    "--relations", "all", "--out", "q-facts"],
    "build aliases": ["build", "aliases", "--facts", "facts", "--via", "graph",
                      "--out", "q-aliases"],
    "build mc": ["build", "mc", "--facts", "aliases", "--choices", "5", "--min-facts", "10",
                 "--min-objects", "5", "--train", "5", "--test", "6", "--out", "q-mc"],
    "build templates": ["build", "templates", "--facts", "aliases", "--templates-dir",
                        "{templates}", "--paraphrases", "0", "--out", "q-templates"],
    "build misprimes": ["build", "misprimes", "--facts", "aliases", "--out", "q-misprimes"],
    "build multiprompt": ["build", "multiprompt", "--facts", "aliases", "--templates",
                          "templates", "--out", "q-mp"],
    "build fktc": ["build", "fktc", "--facts", "aliases", "--templates", "templates",
                   "--out", "q-fktc"],
    "build import-templates": ["build", "import-templates", "--format", "pararel", "--path",
                               "{bench}/pararel/data", "--out", "q-imported"],
    "eval zp-lke": ["eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "2",
                    "--response-tokens", "2", *LIMIT, "--out", "q-zp"],
    "eval prompt": ["eval", "prompt", "--dataset", "mc", "--model", "model",
                    "--templates", "templates", *LIMIT, "--out", "q-prompt"],
    "eval belief": ["eval", "belief", "--dataset", "multiprompt", "--model", "mlm", *LIMIT,
                    "--out", "q-belief"],
    "eval belief-icl": ["eval", "belief-icl", "--dataset", "multiprompt", "--model", "model",
                        "--samples", "2", "--max-new-tokens", "2", *LIMIT, "--out", "q-icl"],
    "eval monitor": ["eval", "monitor", "--dataset", "fktc", "--model", "model",
                     "--max-new-tokens", "2", *LIMIT, "--out", "q-monitor"],
    "plant": ["plant", "--dataset", "mc", "--epochs", "1", "--layers", "1", "--width", "32",
              "--heads", "2", "--vocab-size", "300", "--templates", "", "--out", "q-plant"],
    "report": ["report", "--results", "run", "--out", "q-report"],
    "publish": ["publish", "mc", "--repo-id", "me/mc", "--dry-run", "q-hub"],
    # an endpoint source is not read at init (sized from the shipped values), so no server
    "init": ["init", "q-init", "--source", "sparql", "--endpoint", "http://127.0.0.1:9/query",
             "--relations", "ex:capital"],
    "export lm-eval": ["export", "lm-eval", "mc", "q-lmeval", "--examples", "2"],
    "export lm-pub-quiz": ["export", "lm-pub-quiz", "mc", "q-pubquiz", "--templates",
                           "{templates}"],
    "merge": ["merge", "shard", "--out", "q-merged"],
    "build refresh": ["build", "refresh", "--dataset", "facts", "--source", "rdf", "--path",
                      str(Path(__file__).parents[2] / "data" / "kg" / "sample.ttl"),
                      "--out", "q-refresh"],
    "diff": ["diff", "facts", "aliases", "--out", "q-diff"],
}


def leaf_commands() -> dict[str, object]:
    """Every runnable sub-command of the parser, by its words ("build mc", "report")."""
    import argparse

    from factprobe.cli.app import build_parser

    def walk(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return {" ".join(words): parser}
        out = {}
        for name, sub in subs[0].choices.items():
            out.update(walk(sub, words + [name]))
        return out
    return walk(build_parser(), [])


def test_every_command_accepts_quiet_and_is_tried_here():
    leaves = leaf_commands()
    for words, parser in leaves.items():
        assert any("--quiet" in a.option_strings for a in parser._actions), words
    # network sources and commands of their own tests are not run here: say which
    untried = set(leaves) - set(GOOD)
    assert untried <= {"build nobel"}, f"add a --quiet case for {sorted(untried)}"


def _argv(words: str, workspace: Path) -> list[str]:
    from tests.contract.conftest import TEMPLATES
    bench = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
    return [a.format(templates=TEMPLATES, bench=bench) for a in GOOD[words]]


@pytest.fixture
def quiet_ws(workspace):
    (workspace / "triples.csv").write_text(
        "subject,relation,object\nFrance,capital,Paris\nPeru,capital,Lima\n")
    return workspace


@pytest.mark.parametrize("words", list(GOOD))
def test_quiet_prints_nothing(words, quiet_ws):
    proc = run([*_argv(words, quiet_ws), "--quiet"], cwd=quiet_ws, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == "", (proc.stdout, proc.stderr)


def run_on_terminal(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (where progress bars are drawn); returns (exit
    code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    # a terminal of 0 columns (a fresh pseudo-terminal's size) draws empty bars
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "FACTPROBE_CACHE_DIR": str(cwd / ".cache-factprobe")}
    proc = subprocess.Popen(factprobe_exe() + argv, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=slave, text=True, env=env)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:                      # the other end closed
            break
        if not chunk:
            break
        got += chunk
    out = proc.stdout.read()
    code = proc.wait(timeout=600)
    os.close(master)
    return code, out, got.decode("utf-8", "replace")


@pytest.mark.parametrize("words", ["eval zp-lke", "report"])
def test_quiet_on_a_terminal_draws_no_progress(words, quiet_ws):
    code, out, term = run_on_terminal(_argv(words, quiet_ws), quiet_ws)
    assert code == 0, term
    assert "%|" in term, term                    # the bars are there without --quiet
    code, out, term = run_on_terminal(
        [a + "2" if a.startswith("q-") else a for a in _argv(words, quiet_ws)] + ["--quiet"],
        quiet_ws)
    assert code == 0 and out == "" and term == "", (out, term)


def test_report_on_an_ordinary_mix_of_runs(workspace):
    ws = workspace
    runs = {"belief": ["eval", "belief", "--dataset", "multiprompt", "--model", "mlm",
                       "--out", "mix/belief"],
            "icl": ["eval", "belief-icl", "--dataset", "multiprompt", "--model", "model",
                    "--contexts", "zero", "--samples", "0", "--max-new-tokens", "2",
                    "--out", "mix/icl"],
            "zp-limited": ["eval", "zp-lke", "--dataset", "mc", "--model", "model",
                           "--examples", "2", "--response-tokens", "0", "--limit", "3",
                           "--out", "mix/zp-limited"]}
    for name, argv in runs.items():
        proc = run([*argv, "--quiet"], cwd=ws, timeout=600)
        assert proc.returncode == 0, (name, proc.stderr)
    proc = run(["report", "--results", "mix", "run", "--out", "rep", "--no-plots",
                "--bootstrap", "50"], cwd=ws, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "wrote rep/report.md"
    comp = pd.read_csv(ws / "rep" / "tables" / "comparisons.csv")
    report = (ws / "rep" / "report.md").read_text()

    def facts(folder, stage):
        o = pd.read_parquet(ws / folder / "outputs.parquet")
        return set(o.loc[o["stage"] == stage, "fact_id"].dropna())
    # BELIEF keeps the pairs whose gold is one token of the masked model; BELIEF-ICL all pairs
    belief, icl = facts("mix/belief", "prompts"), facts("mix/icl", "greedy")
    import json
    kept = json.loads((ws / "mix" / "belief" / "metrics.json").read_text())["pairs"]
    assert kept < len(icl)
    row = comp[(comp["family"] == "BELIEF")].iloc[0]
    assert row["n"] == kept <= len(belief & icl)
    assert f"BELIEF on {_name(ws, 'multiprompt')}: the settings cover different facts" in report
    # the --limit run against the full one: on the limited run's facts
    zp = comp[comp["family"] == "multiple choice"].iloc[0]
    limited, full = facts("mix/zp-limited", "mc"), facts("run", "mc")
    assert limited < full and zp["n"] == len(limited)
    assert f"zp-lke:zp-limited {len(limited)}" in report and f"zp-lke:run {len(full)}" in report


def _name(ws: Path, dataset: str) -> str:
    import json
    return json.loads((ws / dataset / "dataset.json").read_text())["name"]
