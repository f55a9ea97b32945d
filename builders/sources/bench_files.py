"""What the benchmark importers (lama, popqa, entityquestions, bear, pararel) share: reading the
authors' files line by line with one clear line for a malformed one (file, line, field), the
record of what was read (each file's sha256, lines and rows, the release the layout is), and the
hand-over to assembly as a :class:`SourceResult` whose extra columns become fact columns.

Each importer parses its own format and hands rows to a :class:`BenchRows`; labels, answers,
aliases and de-duplication then happen in :func:`factprobe.builders.datasets.facts.assemble_facts`
like for every other source.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.tables import OPTIONAL_FACT_FIELDS
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.collect import Collector
from factprobe.builders.sources.common import SKIP_BAD_HINT, natural_key, text_frame

# the facts' optional evidence columns are kept by assembly itself (core/tables.py)
OPTIONAL = {name for name, _ in OPTIONAL_FACT_FIELDS}
# No released line comes near this (LAMA's longest T-REx lines, many evidences, are some tens of
# kB); a line longer than this is not one of the format's, and is not read into memory whole.
MAX_LINE_BYTES = 16 << 20
RAW = ["relation_id", "subject_id", "object_id", "subject", "object"]
RELATION_FILE = re.compile(r"^P\d+$")
# a \uD800-\uDFFF escape: JSON lets a line spell half a surrogate pair, which decodes to a
# string no Parquet file can hold; only lines that have one are checked in full
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
LONE_SURROGATE = "holds a lone surrogate escape (\\udXXX): not valid Unicode text"
# build import-templates reads every line or none: a bad template line is fixed, not skipped
TEMPLATES_HINT = "fix the line (build import-templates reads every template line)"


def valid_unicode(value: str) -> bool:
    """False for a string holding half a surrogate pair (JSON's ``"\\ud800"``).

    >>> valid_unicode("Zürich 東京 😀"), valid_unicode("bad \\ud800")
    (True, False)
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def bad_relation_code(code: str) -> bool:
    """Whether a relation id read from a file's contents (PopQA's ``prop``, LAMA's
    ``relations.jsonl``, lm-pub-quiz's relation codes) cannot be one: a relation id is shown in
    tables and template ids (``<relation>/b1``), so it is one printable line without ``/``.

    >>> [bad_relation_code(c) for c in ("P19", "place of birth", "a\\nb", "a/b", " ")]
    [False, False, True, True, True]
    """
    return not code.strip() or not code.isprintable() or "/" in code


def relation_files(folder: Path, suffix: str = ".jsonl") -> list[Path]:
    """``P<id><suffix>`` files of ``folder``, in natural order (P17 before P101)."""
    return sorted((f for f in folder.glob(f"P*{suffix}")
                   if f.is_file() and RELATION_FILE.match(f.name[:-len(suffix)])),
                  key=lambda f: natural_key(f.name))


def need_folder(path: str | None, fmt: str, what: str) -> Path:
    """``path`` as a folder, or one line saying what ``--source fmt`` reads."""
    p = Path(path or "").expanduser()
    if not path or not p.is_dir():
        raise UserError(f"{path or '(no --path)'} is not a folder; --source {fmt} reads {what}")
    return p


class BenchRows:
    """The rows one import keeps: the raw columns, the extra (fact) columns, aliases, and the
    record of each file read. ``where(file, line)`` names a place in messages."""

    def __init__(self, fmt: str, relations, extra: dict[str, Any], *, limit: int | None,
                 skip_bad: bool, hint: str = SKIP_BAD_HINT):
        self.fmt = fmt
        self.hint = hint      # what the message tells to do (import-templates has no --skip-bad)
        self.extra = dict(extra)                       # name -> Arrow type
        names = RAW + [n for n in self.extra if n != "split"] + (
            ["split"] if "split" in self.extra else [])
        self.take = Collector(relations, names, limit=limit, skip_bad=skip_bad)
        self.rows: dict[str, list] = {n: [] for n in names}
        self.files: dict[str, dict] = {}
        self.skipped: dict[str, int] = {}              # reason -> rows not imported
        self.relation_meta: dict[str, dict[str, str]] = {}
        self._last_bad: str | None = None

    def bad(self, where: str, problem: str) -> None:
        # A line is checked field by field, so one line can report several bad fields; with
        # --skip-bad it is still one bad line (lines of a file are reported in order).
        if where == self._last_bad:
            return
        self._last_bad = where
        self.take.bad_line(where, problem, hint=self.hint)

    def skip(self, reason: str) -> None:
        """A row the format's own rules leave out (counted and printed, never silent)."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(self, relation: str, values: dict[str, Any]) -> bool:
        """Keep one row of ``relation`` (under --relations and --limit); False when not kept."""
        if not self.take.keeps(relation):
            return False
        values = {**values, "relation_id": relation}
        for name, column in self.rows.items():
            column.append(values.get(name))
        return True

    def file_read(self, path: Path, lines: int, rows: int, root: Path) -> None:
        try:
            name = str(path.relative_to(root)) if path != root else path.name
        except ValueError:   # a file beside the folder (LAMA's relations.jsonl beside TREx/)
            name = path.name
        self.files[name] = {"sha256": sha256(path), "lines": lines, "rows": rows}

    def result(self, root: Path, release: str, extra_provenance: dict | None = None
               ) -> SourceResult:
        self.take.check(str(root))
        triples = pd.DataFrame({n: pd.Series(v, dtype=object) for n, v in self.rows.items()})
        provenance = {"type": self.fmt, "path": str(root), "release": release,
                      "files": self.files, "relations": self.take.read(),
                      "skipped": dict(sorted(self.skipped.items())), "bad_lines": self.take.bad,
                      **(extra_provenance or {})}
        meta = {"relation_id": self.take.read()}
        meta["label"] = [self.relation_meta.get(r, {}).get("label", "") for r in meta["relation_id"]]
        meta["description"] = [self.relation_meta.get(r, {}).get("description", "")
                               for r in meta["relation_id"]]
        dropped = {"bad_lines": self.take.bad, **{f"skipped_{k}": v for k, v in
                                                   sorted(self.skipped.items())}}
        return SourceResult(triples=triples, aliases=self.take.aliases(),
                            relations=text_frame(meta), provenance=provenance, dropped=dropped,
                            source_tag=self.fmt,
                            extra_columns={k: v for k, v in self.extra.items()
                                           if k != "split" and k not in OPTIONAL})


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def json_lines(path: Path, rows: BenchRows) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-empty line; a line that is not a JSON object is one
    line naming ``path:line`` (or skipped and counted with --skip-bad). A line longer than
    :data:`MAX_LINE_BYTES` is refused whatever --skip-bad says: the file is no release."""
    with open(path, "rb") as fh:
        n = 0
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            n += 1
            if len(raw) > MAX_LINE_BYTES:
                raise UserError(f"{path}:{n}: a line longer than {MAX_LINE_BYTES >> 20} MB: "
                                f"not a {rows.fmt} file as released")
            if not raw.strip():
                continue
            try:
                obj = jsonsafe.loads(raw)
            except ValueError:
                rows.bad(f"{path}:{n}", "not a JSON line")
                continue
            if not isinstance(obj, dict):
                rows.bad(f"{path}:{n}", "not a JSON object")
                continue
            if _SURROGATE_ESCAPE.search(raw) and not valid_unicode(
                    json.dumps(obj, ensure_ascii=False)):
                rows.bad(f"{path}:{n}", LONE_SURROGATE)
                continue
            yield n, obj


def text_field(obj: dict, key: str, where: str, rows: BenchRows, *, label: bool = False
               ) -> str | None:
    """``obj[key]`` as text (a number is written as text); None after reporting a bad field.
    A ``label`` present but null or empty is ``""``: not a malformed line but a fact without a
    label, which assembly drops and counts (``rows_without_subject_label``), as for every
    source."""
    value = obj.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if label and key in obj and (value is None or (isinstance(value, str) and not value.strip())):
        return ""
    if not isinstance(value, str) or not value.strip():
        what = "missing" if key not in obj else f"not a non-empty text ({type(value).__name__})"
        rows.bad(where, f"field {key!r} {what}")
        return None
    if not valid_unicode(value):
        rows.bad(where, f"field {key!r} {LONE_SURROGATE}")
        return None
    return value


def text_list(obj: dict, key: str, where: str, rows: BenchRows) -> list[str] | None:
    """``obj[key]`` as a list of texts (absent: empty); None after reporting a bad field."""
    value = obj.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        rows.bad(where, f"field {key!r} is not a list of texts")
        return None
    if not all(valid_unicode(v) for v in value):
        rows.bad(where, f"field {key!r} {LONE_SURROGATE}")
        return None
    return value
