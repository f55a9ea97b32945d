"""The harness itself: a good command passes through, a known bad one is held to the contract.
Each family of bad inputs has its own module beside this one (``test_bad_*.py``)."""
from __future__ import annotations

import pytest

from tests.contract.harness import Case, check, expand, run, snapshot

CASES = [
    Case("mc-missing-facts", ("build", "mc", "--facts", "nope", "--out", "{ws}/out"),
         ("nope",)),
    Case("eval-missing-dataset", ("eval", "zp-lke", "--dataset", "nope", "--model", "model",
                                  "--out", "{ws}/out"), ("nope",)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_contract(case: Case, workspace):
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    proc = run(expand(case.argv, {"ws": str(workspace)}), cwd=workspace, env=case.env,
               timeout=case.timeout)
    check(proc, before, snapshot(workspace), needles=case.needles,
          new_ok=lambda p: p.startswith(".cache-factprobe"))


def test_good_command_passes(workspace):
    proc = run(["build", "mc", "--facts", "aliases", "--out", "mc2", "--choices", "5",
                "--min-facts", "10", "--min-objects", "5", "--train", "5", "--test", "6",
                "--quiet"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "mc2" / "facts.parquet").is_file()
