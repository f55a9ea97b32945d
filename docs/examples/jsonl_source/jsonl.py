"""Facts from a JSON-lines file, one triple a line: ``subject``, ``relation``, ``object`` (ids)
and optionally ``subject_label`` and ``object_label`` (without one, the id is the label)."""
from __future__ import annotations

import json
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.collect import Collector
from factprobe.builders.sources.common import text_frame

KEYS = ("subject", "relation", "object")


def read_jsonl(path: str, relations: list[str] | None = None, *, limit: int | None = None,
               skip_bad: bool = False) -> SourceResult:
    """The triples of ``relations`` (None: all) in ``path``; the collector keeps the asked
    relations, at most ``limit`` rows of each, and fails on a bad line or skips and counts it."""
    if not Path(path).is_file():
        raise UserError(f"{path} not found; pass a file of JSON lines with {', '.join(KEYS)}")
    take = Collector(relations, ["relation_id", "subject_id", "object_id", "subject", "object"],
                     limit=limit, skip_bad=skip_bad)
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                take.bad_line(f"{path}:{n}", "not a JSON line")
                continue
            if not isinstance(row, dict) or not all(
                    isinstance(row.get(k), str) and row[k] for k in KEYS):
                take.bad_line(f"{path}:{n}", f"needs {', '.join(KEYS)} as text")
                continue
            if take.keeps(row["relation"]):
                values = (row["relation"], row["subject"], row["object"],
                          row.get("subject_label", row["subject"]),
                          row.get("object_label", row["object"]))
                for column, value in zip(take.cols.values(), values):
                    column.append(value)
                take.cols.row_done()
    take.check(path)
    return SourceResult(triples=take.cols.frame(),
                        relations=text_frame({"relation_id": take.read()}),
                        provenance={"type": "jsonl", "path": str(path),
                                    "sha256": file_sha256(path), "bad_lines": take.bad},
                        dropped={"bad_lines": take.bad}, source_tag="jsonl")


def read_config(cfg) -> SourceResult:
    """The sources table's reader: the build's ``FactsConfig`` (its flags) -> the facts."""
    return read_jsonl(cfg.path, cfg.relations, limit=cfg.limit, skip_bad=cfg.skip_bad)
