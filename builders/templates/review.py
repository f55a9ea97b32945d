"""The human review of templates: a CSV a person marks ``keep`` or ``drop``, read back as a
versioned input of the next build."""
from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from factprobe.core import atomic
from factprobe.core.csvsafe import read_cell, safe_cell
from factprobe.core.errors import UserError
from factprobe.core.textfiles import read_text
from factprobe.builders.templates.files import Template

COLUMNS = ["decision", "template_id", "relation_id", "style", "origin", "template"]
DECISIONS = ("keep", "drop")


def check_review_out(path: str | os.PathLike) -> None:
    """Refuse, before anything is built, a ``--review-out`` that cannot be written or that
    would replace a file factprobe did not write (one whose header is not a review's)."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"--review-out {p} is a folder; give the path of a CSV file")
    if p.exists():
        try:
            with p.open("rb") as fh:
                first = fh.readline().decode("utf-8", "replace").strip().lstrip("\ufeff")
        except OSError as exc:
            raise UserError(f"cannot read --review-out {p} ({exc.strerror}); give another "
                            f"path") from None
        if first != ",".join(COLUMNS):
            raise UserError(f"--review-out {p} exists and is not a review file written by "
                            f"factprobe; give a new path (factprobe replaces only its own "
                            f"files)")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"--review-out {p}: {parent} is a file, not a folder; give another path")


def write_review(path: str | os.PathLike, templates: list[Template],
                 decisions: dict[str, str] | None = None) -> Path:
    """Write every template with its decision (``keep`` unless ``decisions`` says otherwise),
    sorted by relation and template id; atomically."""
    decisions = decisions or {}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for t in sorted(templates, key=lambda t: (t.relation_id, t.template_id)):
        # an LLM's paraphrase or a relation id may start with = or @: written as text
        # (factprobe.core.csvsafe), and read back as it was by read_review
        writer.writerow([safe_cell(v) for v in (
            decisions.get(t.template_id, "keep"), t.template_id, t.relation_id, t.style,
            t.origin, t.template)])
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, buf.getvalue(), newline="")
    except OSError as exc:
        raise UserError(f"cannot write --review-out {path} "
                        f"({exc.strerror or type(exc).__name__}); give a writable path") from None
    return path


def read_review(path: str | os.PathLike) -> dict[str, str]:
    """template_id -> ``keep`` | ``drop``; a malformed file is a :class:`UserError` naming the line."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"review file {path} not found; write one with --review-out")
    text = read_text(path, "a review CSV written by --review-out")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        return _decisions(path, reader)
    except csv.Error as exc:
        raise UserError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from None


def _decisions(path: Path, reader: csv.DictReader) -> dict[str, str]:
    fields = reader.fieldnames or []
    if "template_id" not in fields or "decision" not in fields:
        raise UserError(f"{path}: needs the columns 'decision' and 'template_id' (as written "
                        f"by --review-out)")
    out: dict[str, str] = {}
    for row in reader:
        line = reader.line_num
        tid = read_cell((row.get("template_id") or "").strip())
        decision = (row.get("decision") or "").strip().lower()
        if not tid:
            raise UserError(f"{path}:{line}: empty template_id")
        if decision not in DECISIONS:
            raise UserError(f"{path}:{line}: decision {decision!r} for {tid} must be 'keep' "
                            f"or 'drop'")
        if tid in out and out[tid] != decision:
            raise UserError(f"{path}:{line}: {tid} is marked both keep and drop")
        out[tid] = decision
    return out


def apply_review(templates: list[Template], decisions: dict[str, str], path: str
                 ) -> tuple[list[Template], dict]:
    """The kept templates and what the review did. Every id in the review must be a template of
    this build: a stale review is an error, not silently ignored."""
    ids = {t.template_id for t in templates}
    unknown = sorted(set(decisions) - ids)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5
                                          else "")
        raise UserError(f"{path} names {len(unknown)} templates this build does not have "
                        f"({shown}); make the review file from this build with --review-out")
    kept = [t for t in templates if decisions.get(t.template_id, "keep") == "keep"]
    counts = {"kept": sum(1 for t in templates if decisions.get(t.template_id) == "keep"),
              "dropped": len(templates) - len(kept),
              "unreviewed": sum(1 for t in templates if t.template_id not in decisions)}
    return kept, counts
