"""Read triples from a CSV or TSV file with a header row.

Required columns ``subject``, ``relation``, ``object``; optional ``subject_label``,
``object_label``, ``relation_label``, ``subject_aliases`` and ``object_aliases`` (aliases
separated by ``|``). Without a label column the id doubles as the label; with one, an empty cell
means the row has no label and assembly drops (and counts) it.
"""
from __future__ import annotations

import csv
from pathlib import Path

from tqdm.auto import tqdm

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256
from factprobe.core.textfiles import utf8_lines
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.collect import Collector
from factprobe.builders.sources.common import text_frame

REQUIRED = ("subject", "relation", "object")
OPTIONAL = ("subject_label", "object_label", "relation_label", "subject_aliases",
            "object_aliases")
ALIAS_SEPARATOR = "|"
_TAB_SUFFIXES = {".tsv", ".tab"}
_DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
_PROGRESS_EVERY = 10_000


def _delimiter(path: Path, delimiter: str | None) -> str:
    if delimiter is None:
        return "\t" if path.suffix.lower() in _TAB_SUFFIXES else ","
    delim = _DELIMITER_NAMES.get(delimiter.lower(), delimiter)
    if len(delim) != 1:
        raise UserError(f"delimiter must be one character (or tab, comma, semicolon, pipe), "
                        f"got {delimiter!r}")
    return delim


def _split_aliases(cell: str) -> list[str]:
    return [a for a in (part.strip() for part in cell.split(ALIAS_SEPARATOR)) if a]


def read_csv(path: str, relations: list[str] | None, *, limit: int | None = None,
             skip_bad: bool = False, delimiter: str | None = None,
             progress: bool = True) -> SourceResult:
    """Read (subject, relation, object) rows of ``relations`` (``None``: all) from a CSV/TSV.

    The delimiter follows the extension (``.tsv``/``.tab``: tab, else comma) unless
    ``delimiter`` is given. ``limit`` keeps at most that many rows per relation, the first in
    file order. Malformed rows raise :class:`UserError` naming ``file:line`` unless
    ``skip_bad``, which skips them and counts them in ``dropped["bad_lines"]``.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"{path} not found; pass a CSV or TSV file with a header row "
                        f"subject,relation,object")
    if not p.is_file():
        raise UserError(f"{path} is not a file; pass a CSV or TSV file with a header row "
                        f"subject,relation,object")
    take = Collector(relations, ["relation_id", "subject_id", "object_id", "subject", "object"],
                     limit=limit, skip_bad=skip_bad)
    delim = _delimiter(p, delimiter)
    cols = take.cols
    rel_labels: dict[str, str] = {}
    rows = 0

    # The csv module rather than pandas.read_csv: it hands over one record at a time with the
    # physical line it came from, so a malformed row is reported as file:line (pandas can only
    # skip such rows or fail with a parser message whose line numbering is unreliable with
    # quoted multi-line fields), and --skip-bad can count exactly what it skipped. Lines are
    # decoded one by one (utf8_lines) so that a byte that is not UTF-8 is named by its line.
    try:
        fh = open(p, "rb")
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    with fh, tqdm(desc=f"reading {p.name}", unit=" rows", disable=not progress) as bar:
        reader = csv.reader(utf8_lines(path, fh), delimiter=delim)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise UserError(f"{path}:1: cannot read the header ({exc}); the first line must "
                            f"name the columns subject, relation, object") from None
        if header is not None and any("\x00" in h for h in header):
            raise UserError(f"{path}:1: NUL byte in the header (a binary or UTF-16 file?); "
                            f"save the file as UTF-8 text")
        if header is None or not any(h.strip() for h in header):
            raise UserError(f"{path} is empty or has an empty first line; the first line must "
                            f"name the columns subject, relation, object")
        names = [h.strip().lower() for h in header]
        missing = [c for c in REQUIRED if c not in names]
        if missing:
            raise UserError(
                f"{path}: missing required column(s) {', '.join(missing)}; header found: "
                f"{', '.join(h.strip() for h in header)} (delimiter {delim!r}); the header needs "
                f"{', '.join(REQUIRED)} (optional: {', '.join(OPTIONAL)})")
        pos = {name: names.index(name) for name in REQUIRED + OPTIONAL if name in names}
        i_sub, i_rel, i_obj = pos["subject"], pos["relation"], pos["object"]
        i_slab, i_olab = pos.get("subject_label"), pos.get("object_label")
        i_rlab = pos.get("relation_label")
        i_sal, i_oal = pos.get("subject_aliases"), pos.get("object_aliases")
        width = len(header)

        while True:
            start = reader.line_num + 1  # where the next record begins (may span lines)
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                take.bad_line(f"{path}:{start}", f"malformed CSV ({exc})")
                continue
            if not row:  # blank line
                continue
            rows += 1
            if rows % _PROGRESS_EVERY == 0:
                bar.update(_PROGRESS_EVERY)
            problem = None
            if len(row) != width:
                problem = f"{len(row)} fields, the header has {width}"
            elif any("\x00" in field for field in row):
                problem = "NUL byte in a field"
            else:
                sid, rel, oid = row[i_sub].strip(), row[i_rel].strip(), row[i_obj].strip()
                empty = [name for name, val in (("subject", sid), ("relation", rel),
                                                ("object", oid)) if not val]
                if empty:
                    problem = f"empty {', '.join(empty)}"
            if problem is not None:
                take.bad_line(f"{path}:{start}", problem)
                continue

            if i_sal is not None and row[i_sal]:
                take.alias(sid, _split_aliases(row[i_sal]))
            if i_oal is not None and row[i_oal]:
                take.alias(oid, _split_aliases(row[i_oal]))
            if not take.keeps(rel):
                continue
            if i_rlab is not None and rel not in rel_labels and row[i_rlab].strip():
                rel_labels[rel] = row[i_rlab].strip()
            cols["relation_id"].append(rel)
            cols["subject_id"].append(sid)
            cols["object_id"].append(oid)
            if i_slab is None:
                cols["subject"].append(sid)
            else:
                cols["subject"].append(row[i_slab].strip() or None)
            if i_olab is None:
                cols["object"].append(oid)
            else:
                cols["object"].append(row[i_olab].strip() or None)
            cols.row_done()
        bar.update(rows % _PROGRESS_EVERY)

    take.check(path)
    read = take.read()
    rel_meta = {"relation_id": read}
    if i_rlab is not None:
        rel_meta["label"] = [rel_labels.get(r, "") for r in read]
    provenance = {
        "path": str(path),
        "sha256": file_sha256(p),
        "delimiter": delim,
        "bad_lines": take.bad,
        "rows": rows,
        "columns": [h.strip() for h in header],
        "relations": read,
    }
    return SourceResult(
        triples=cols.frame(),
        aliases=take.aliases(),
        relations=text_frame(rel_meta),
        provenance=provenance,
        dropped={"bad_lines": take.bad},
        source_tag="csv",
    )
