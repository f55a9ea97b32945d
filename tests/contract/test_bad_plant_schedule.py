"""Bad values of plant's schedule and mention flags: one line, exit 2, nothing written."""
from __future__ import annotations

import pytest

from tests.contract.harness import Case, check, expand, run, snapshot


def plant(*args: str) -> tuple[str, ...]:
    return ("plant", "--dataset", "mc", "--out", "planted-new", "--templates", "", *args)


CASES = [
    Case("plant-schedule-epochs-zero", plant("--schedule-epochs", "0"),
         ("--schedule-epochs", ">= 1")),
    Case("plant-schedule-epochs-word", plant("--schedule-epochs", "long"),
         ("--schedule-epochs",)),
    Case("plant-mentions-unknown", plant("--mentions", "alone"),
         ("--mentions", "relation", "other")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_plant_flag(case: Case, workspace):
    before = snapshot(workspace)
    proc = run(expand(case.argv, {"ws": str(workspace)}), cwd=workspace, env=case.env,
               timeout=case.timeout)
    check(proc, before, snapshot(workspace), needles=case.needles,
          new_ok=lambda p: p.startswith(".cache-factprobe"))
    assert "Traceback" not in proc.stdout + proc.stderr
