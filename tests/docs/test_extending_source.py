"""docs/extending.md, "Adding a source": its Python blocks run, in order, as written."""
from __future__ import annotations

import contextlib
import io

from tests.docs import python_blocks


def test_the_worked_source_example_builds_facts(tmp_path, monkeypatch):
    blocks = python_blocks("source")
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "extending_source"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, "docs/extending.md", "exec"), namespace)
    facts = namespace["facts"]
    rows = sorted(zip(facts["relation_id"].to_pylist(), facts["subject"].to_pylist(),
                      facts["object"].to_pylist()))
    # --relations P1376 keeps two of the three lines
    assert rows == [("P1376", "Berlin", "Germany"), ("P1376", "Paris", "France")]
    assert (tmp_path / "jsonl-facts" / "dataset.json").is_file()
    # what the page says each print shows is what it shows
    expected = [line[2:] for block in blocks for line in block.splitlines()
                if line.startswith("# ")]
    assert out.getvalue().splitlines() == expected
