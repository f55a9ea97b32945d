"""What every export shares: reading the facts it exports, writing JSON lines, and the
ownership marker (``factprobe_export.json``, :mod:`factprobe.core.markers`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.core.outdir import stamp
from factprobe.core.tables import dumps_json, factprobe_version

MARKER_FILE = "factprobe_export.json"
EXPORT_FORMAT = 1


def jsonl(rows: list[dict]) -> str:
    """One JSON object per line, keys in the order given (the same rows give the same bytes).

    >>> jsonl([{"b": 1, "a": "é"}])
    '{"b": 1, "a": "é"}\\n'
    """
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def safe_name(text: str) -> str:
    """A name made of letters, digits, ``_`` and ``-`` (a file stem, a task name).

    >>> safe_name("rel:birthYear"), safe_name("http://ex.org/P19")
    ('rel_birthYear', 'http_ex_org_P19')
    """
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "x"


def test_facts(facts: pd.DataFrame) -> pd.Series:
    """Which rows are test facts: the ``test`` split, or every row of an unsplit dataset."""
    if "split" in facts.columns and (facts["split"].fillna("") != "").any():
        return facts["split"] == "test"
    return pd.Series(True, index=facts.index)


def write_marker(folder: Path, tool: str, info: dict) -> None:
    """The marker, written last: what was exported, from what, and every file it wrote."""
    body = {"format": EXPORT_FORMAT, "tool": tool,
            "exported_with": f"factprobe {factprobe_version()}", **info}
    (folder / MARKER_FILE).write_text(dumps_json(stamp(body, folder, "export")),
                                      encoding="utf-8")


def need_rows(rows: list, dataset: str, what: str) -> None:
    if not rows:
        raise UserError(f"{dataset} gives no {what} to export (no test facts in the relations "
                        f"asked for); check --relations and the dataset's split column")
