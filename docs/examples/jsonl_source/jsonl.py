"""Facts from a JSON-lines file, one triple a line: ``subject``, ``relation``, ``object`` (ids)
and optionally ``subject_label`` and ``object_label`` (without one, the id is the label). The
field names are the source's own flag, ``--jsonl-keys``, for files that name them otherwise."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from factprobe.core.errors import UserError

if TYPE_CHECKING:  # `build facts --help` imports this module for its flags: no pandas there
    from factprobe.builders.datasets.facts import SourceResult

KEYS = ("subject", "relation", "object")


def read_jsonl(path: str, relations: list[str] | None = None, *, limit: int | None = None,
               skip_bad: bool = False, keys: tuple[str, str, str] = KEYS) -> SourceResult:
    """The triples of ``relations`` (None: all) in ``path``; the collector keeps the asked
    relations, at most ``limit`` rows of each, and fails on a bad line or skips and counts it."""
    from factprobe.core.tables import file_sha256
    from factprobe.builders.datasets.facts import SourceResult
    from factprobe.builders.sources.collect import Collector
    from factprobe.builders.sources.common import text_frame
    if not Path(path).is_file():
        raise UserError(f"{path} not found; pass a file of JSON lines with {', '.join(keys)}")
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
                    isinstance(row.get(k), str) and row[k] for k in keys):
                take.bad_line(f"{path}:{n}", f"needs {', '.join(keys)} as text")
                continue
            subject, relation, obj = (row[k] for k in keys)
            if take.keeps(relation):
                values = (relation, subject, obj, row.get(f"{keys[0]}_label", subject),
                          row.get(f"{keys[2]}_label", obj))
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
    own = cfg.option(NAME, JsonlOptions())
    return read_jsonl(cfg.path, cfg.relations, limit=cfg.limit, skip_bad=cfg.skip_bad,
                      keys=own.keys)


NAME = "jsonl"    # the key of this source's own options (the entry's flags=) in cfg.options


@dataclass(frozen=True)
class JsonlOptions:
    keys: tuple[str, str, str] = KEYS

    def params(self) -> dict:
        return {"jsonl_keys": list(self.keys)}


OPTIONS = JsonlOptions


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("jsonl source")
    g.add_argument("--jsonl-keys", default=",".join(KEYS), metavar="SUBJECT,RELATION,OBJECT",
                   help="the field names of a line (subject,relation,object)")


def read_flags(args: argparse.Namespace) -> JsonlOptions:
    keys = tuple(k.strip() for k in args.jsonl_keys.split(","))
    if len(keys) != 3 or not all(keys):
        raise UserError(f"--jsonl-keys {args.jsonl_keys!r}: give three field names, "
                        f"e.g. subject,relation,object")
    return JsonlOptions(keys)
