"""Read T-REx triples: LAMA-style ``P<id>.jsonl`` files, or a Hugging Face dataset.

Two layouts are accepted by :func:`read_trex`:

* **LAMA** -- a folder of ``P<id>.jsonl`` files (or one such file), one JSON object a line with
  ``sub_uri``, ``sub_label``, ``obj_uri``, ``obj_label``, optionally ``predicate_id`` and
  ``evidences``. The first evidence becomes ``evidence_title``/``evidence_text``.
* **Hugging Face** -- anything :func:`datasets.load_dataset` opens (a Hub id such as
  ``relbert/t_rex``, which needs the Hub or its cache, or a local folder of parquet/json/csv
  files) whose columns are recognised by name (``relation``/``head``/``tail``... see
  :data:`HF_COLUMNS`). All splits are concatenated in the order train, validation, test, others.

Either way the reader only collects raw rows; labels, answers, de-duplication and the counting of
rows without labels happen in :func:`factprobe.builders.datasets.facts.assemble_facts`.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from tqdm.auto import tqdm

from factprobe.core import jsonsafe
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.collect import Collector
from factprobe.builders.sources.common import natural_key, text_frame

try:  # orjson is an optional speed-up (several times faster on multi-million-line T-REx dumps)
    import orjson as _orjson

    _loads = _orjson.loads
    JSON_PARSER = "orjson"
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    JSON_PARSER = "json"

# A LAMA file named after a Wikidata property: P19.jsonl holds "place of birth".
RELATION_FILE = re.compile(r"^P\d+$")
REQUIRED_KEYS = ("sub_uri", "sub_label", "obj_uri", "obj_label")
ID_KEYS = ("sub_uri", "obj_uri")
# What a label or id may be (numbers are written as text); a list or object is a bad line.
SCALARS = frozenset((str, int, float, type(None)))



# --------------------------------------------------------------------------- entry point

def read_trex(path: str, relations: list[str] | None, *, limit: int | None = None,
              skip_bad: bool = False, progress: bool = True) -> SourceResult:
    """Read T-REx triples of ``relations`` (``None``: all present) from ``path``.

    ``path`` is a LAMA folder of ``P<id>.jsonl`` files or one ``.jsonl`` file, otherwise a
    Hugging Face dataset (local folder/file or Hub id). ``limit`` keeps at most that many rows
    per relation, the first in file (split) order. Malformed lines raise :class:`UserError`
    naming ``file:line`` unless ``skip_bad``, which skips them and counts them in
    ``dropped["bad_lines"]``.
    """
    files = lama_files(path)
    take = Collector(relations, ["relation_id", "subject_id", "object_id", "subject", "object",
                                 "evidence_title", "evidence_text"] if files is not None else
                     ["relation_id"], limit=limit, skip_bad=skip_bad)
    if files is not None:
        return _read_lama(path, files, take, progress)
    from factprobe.builders.sources.trex_hf import read_hf  # imports datasets, which LAMA files do not need
    return read_hf(path, take, progress)


def lama_files(path: str) -> list[Path] | None:
    """The ``.jsonl`` files to read when ``path`` is LAMA-style, else ``None``.

    A ``.jsonl`` file is LAMA-style whatever its name; a folder is when it holds at least one
    ``*.jsonl`` named like a relation (``P19.jsonl``), and then only those are read (LAMA
    folders also hold files such as ``relations.jsonl`` that are not triples).
    """
    p = Path(path).expanduser()
    if p.is_file():
        return [p] if p.suffix == ".jsonl" else None
    if p.is_dir():
        named = sorted((f for f in p.glob("*.jsonl")
                        if f.is_file() and RELATION_FILE.match(f.stem)),
                       key=lambda f: natural_key(f.stem))
        return named or None
    return None


# --------------------------------------------------------------------------- LAMA jsonl

def _evidence(evidences, obj_label) -> tuple[str | None, str | None] | None:
    """(title, text) of the first evidence, or ``None`` when there is none."""
    if not isinstance(evidences, list) or not evidences:
        return None
    ev = evidences[0]
    if not isinstance(ev, dict):
        return None
    title = ev.get("title")
    title = title if isinstance(title, str) else ""
    masked = ev.get("masked_sentence")
    if isinstance(masked, str) and masked:
        surface = ev.get("obj_surface")
        if not (isinstance(surface, str) and surface):
            surface = obj_label if isinstance(obj_label, str) and obj_label else None
        return title, masked.replace("[MASK]", surface) if surface else masked
    for key in ("text", "sentence"):
        text = ev.get(key)
        if isinstance(text, str) and text:
            return title, text
    return title, None


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):  # orjson's error subclasses it too
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    return f"not valid JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"


def _read_lama(path: str, files: list[Path], take: Collector, progress: bool) -> SourceResult:
    want, cols = take.wanted, take.cols
    rel_col, sid_col, oid_col = cols["relation_id"], cols["subject_id"], cols["object_id"]
    sub_col, obj_col = cols["subject"], cols["object"]
    title_col, text_col = cols["evidence_title"], cols["evidence_text"]
    files_info: dict[str, dict] = {}
    skipped_files: list[str] = []
    any_evidence = False
    root = Path(path).expanduser()
    single = root.is_file()

    for f in tqdm(files, desc="T-REx files", unit="file", disable=not progress):
        name = f.name if single else f.relative_to(root).as_posix()
        stem_rel = f.stem if RELATION_FILE.match(f.stem) else None
        if want is not None and stem_rel is not None and stem_rel not in want and not single:
            # Relation known from the file name and not requested: not worth parsing.
            take.present.add(stem_rel)
            skipped_files.append(name)
            continue
        default_rel = f.stem
        where_file = str(f)
        h = hashlib.sha256()
        lines = rows = 0
        bad_before = take.bad
        with open(f, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                h.update(line)
                lines = lineno
                if not line.strip():
                    continue
                try:
                    rec = jsonsafe.loads(line, _loads)
                except ValueError as exc:
                    problem = _json_error(exc)
                else:
                    problem = None
                    if not isinstance(rec, dict):
                        problem = "not a JSON object"
                    else:
                        absent = [k for k in REQUIRED_KEYS if k not in rec]
                        if absent:
                            problem = f"missing key(s) {', '.join(absent)}"
                        else:
                            empty = [k for k in ID_KEYS
                                     if rec[k] is None or not str(rec[k]).strip()]
                            if empty:
                                problem = f"empty {', '.join(empty)}"
                            elif (any(type(rec[k]) not in SCALARS for k in REQUIRED_KEYS)
                                  or type(rec.get("predicate_id")) not in SCALARS):
                                problem = "a label or id that is not text"
                            elif any(isinstance(rec[k], str) and "\x00" in rec[k]
                                     for k in REQUIRED_KEYS):
                                problem = "NUL character in a label or id"
                if problem is not None:
                    take.bad_line(f"{where_file}:{lineno}", problem)
                    continue
                pid = rec.get("predicate_id")
                rel = str(pid).strip() if pid is not None else ""
                if not rel:
                    rel = default_rel
                if not take.keeps(rel):
                    continue
                rows += 1
                sub, obj = rec["sub_label"], rec["obj_label"]
                sub = None if sub is None else str(sub)
                obj = None if obj is None else str(obj)
                rel_col.append(rel)
                sid_col.append(str(rec["sub_uri"]).strip())
                oid_col.append(str(rec["obj_uri"]).strip())
                sub_col.append(sub)
                obj_col.append(obj)
                ev = _evidence(rec.get("evidences"), obj)
                if ev is None:
                    title_col.append(None)
                    text_col.append(None)
                else:
                    any_evidence = True
                    title_col.append(ev[0])
                    text_col.append(ev[1])
                cols.row_done()
        files_info[name] = {"sha256": h.hexdigest(), "lines": lines, "rows": rows,
                            "bad_lines": take.bad - bad_before}

    take.check(path)
    names = list(cols) if any_evidence else list(cols)[:5]
    triples = cols.frame(names)
    read = take.read()
    provenance = {
        "path": str(path),
        "kind": "lama",
        "files": files_info,
        "files_not_read": skipped_files,
        "relations": read,
        "bad_lines": take.bad,
        "json_parser": JSON_PARSER,
    }
    return SourceResult(triples=triples, relations=text_frame({"relation_id": read}),
                        provenance=provenance, dropped={"bad_lines": take.bad},
                        source_tag="trex")


