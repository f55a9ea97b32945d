"""docs/extending.md, "Adding a source": its Python blocks run, in order, as written; the
module block is the source module (registered as ``factprobe.builders.sources.jsonl`` while
they run, as the page says it would be), and it and the table block show exactly the files of
docs/examples/jsonl_source/ that tests/test_extending.py adds to a copy of the repository."""
from __future__ import annotations

import contextlib
import io
import sys
import types

from tests.docs import EXTENDING, python_blocks

EXAMPLE = EXTENDING.parent / "examples" / "jsonl_source"
MODULE = "factprobe.builders.sources.jsonl"


def _run(blocks: list[str]) -> tuple[dict, str]:
    namespace: dict = {"__name__": "extending_source"}
    module = types.ModuleType(MODULE)
    out = io.StringIO()
    sys.modules[MODULE] = module
    try:
        with contextlib.redirect_stdout(out):
            for block in blocks:
                where = module.__dict__ if block.lstrip().startswith('"""') else namespace
                exec(compile(block, "docs/extending.md", "exec"), where)
    finally:
        del sys.modules[MODULE]
    return namespace, out.getvalue()


def test_the_worked_source_example_builds_facts(tmp_path, monkeypatch):
    blocks = python_blocks("source")
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace, printed = _run(blocks)
    facts = namespace["facts"]
    rows = sorted(zip(facts["relation_id"].to_pylist(), facts["subject"].to_pylist(),
                      facts["object"].to_pylist()))
    # --relations P1376 keeps two of the three lines
    assert rows == [("P1376", "Berlin", "Germany"), ("P1376", "Paris", "France")]
    assert (tmp_path / "jsonl-facts" / "dataset.json").is_file()
    # what the page says each print shows is what it shows
    expected = [line[2:] for block in blocks for line in block.splitlines()
                if line.startswith("# ")]
    assert printed.splitlines() == expected


def test_the_page_shows_the_example_files():
    blocks = python_blocks("source")
    assert (EXAMPLE / "jsonl.py").read_text() in blocks
    entry = [line for line in (EXAMPLE / "sources_entry.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    table = next(b for b in blocks if '"jsonl": Source(' in b).splitlines()
    assert entry and all(line in table for line in entry)
