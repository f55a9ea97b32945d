"""docs/extending.md, "Adding a backend": its python blocks run, in order, in one namespace."""
from __future__ import annotations

import json

from tests.docs import EXTENDING as DOC
from tests.docs import python_blocks


def test_adding_a_backend_example_runs(tmp_path, monkeypatch, capsys):
    code = python_blocks("backend")
    assert len(code) == 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "extending_backend"}
    for block in code:
        exec(compile(block, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "{'France': 0, 'Peru': 1}"           # the lookup backend's answers
    assert namespace["refusal"] == ("toy: this method needs a backend that can generate; "
                                    "backend kind 'lookup' offers score")
    assert printed[1] == namespace["refusal"]
    run = json.loads((tmp_path / "toy-run" / "run.json").read_text())
    assert run["model"]["type"] == "lookup" and run["backend"]["model"] == "capitals"
    assert run["tokens"]["computed"] == 2 * (2 * 5 + 1 + 1)   # 2 prompts x 2 options
    assert run["rows"] == 4 and not (tmp_path / "toy-gen").exists()
