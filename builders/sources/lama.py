"""LAMA's probe data as its authors release it (Petroni et al., 2019, "Language Models as
Knowledge Bases?", EMNLP; https://dl.fbaipublicfiles.com/LAMA/data.zip): the folder ``data/``
with

* ``TREx/P<id>.jsonl``: ``uuid``, ``sub_uri``, ``sub_label``, ``obj_uri``, ``obj_label``,
  ``predicate_id`` and ``evidences`` (``masked_sentence`` with ``[MASK]``, ``obj_surface``);
* ``Google_RE/{place_of_birth,date_of_birth,place_of_death}_test.jsonl``: ``uuid``, ``sub``,
  ``obj`` (Freebase ids), ``sub_w``, ``obj_w`` (Wikidata ids, null where there is none),
  ``sub_label``, ``obj_label``, ``sub_aliases``, ``obj_aliases``, ``masked_sentences`` and the
  raters' ``judgments`` (``yes``, ``no`` or ``skip``);
* ``relations.jsonl``: one template per T-REx relation (``[X] was born in [Y] .``), its
  ``label``, ``description`` and ``type`` (``1-1``, ``N-1``, ``N-M``).

``--path`` is that ``data/`` folder, or its ``TREx/`` or ``Google_RE/`` folder alone. Every
fact keeps the file's ``uuid``, its first evidence sentence (the mask filled with the object's
surface) and how many there were; Google-RE facts keep the judgments' counts and the
Wikidata ids. The release holds
LAMA's test facts only: every fact's split is ``test``.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.bench_files import (
    TEMPLATES_HINT,
    BenchRows,
    bad_relation_code,
    json_lines,
    need_folder,
    relation_files,
    text_field,
    text_list,
)

RELEASE = "LAMA data.zip (https://dl.fbaipublicfiles.com/LAMA/data.zip; facebookresearch/LAMA)"
GOOGLE_RE = ("place_of_birth", "date_of_birth", "place_of_death")
# LAMA's Google-RE templates are not in a file of the release: they are in its
# scripts/run_experiments.py (get_GoogleRE_parameters), copied here as published.
GOOGLE_RE_TEMPLATES = {"place_of_birth": "[X] was born in [Y] .",
                       "date_of_birth": "[X] (born [Y]).",
                       "place_of_death": "[X] died in [Y] ."}
GOOGLE_RE_LABELS = {"place_of_birth": "place of birth", "date_of_birth": "date of birth",
                    "place_of_death": "place of death"}
EXTRA = {"uuid": pa.string(), "evidence_text": pa.string(), "evidence_count": pa.int32(),
         "judgments_yes": pa.int32(), "judgments_no": pa.int32(), "judgments_skip": pa.int32(),
         "sub_w": pa.string(), "obj_w": pa.string(), "relation_type": pa.string(),
         "split": pa.string()}


def layout(path: str | None) -> tuple[Path, Path | None, Path | None, Path | None]:
    """(root, TREx folder, Google_RE folder, relations.jsonl), each None when absent."""
    root = need_folder(path, "lama", "LAMA's data/ folder (TREx/, Google_RE/, relations.jsonl)")
    if root.name == "TREx" or (relation_files(root) and not (root / "TREx").is_dir()):
        trex, google = root, None
    elif root.name == "Google_RE" or any(root.glob("*_of_*.jsonl")):
        trex, google = None, root
    else:
        trex = root / "TREx" if (root / "TREx").is_dir() else None
        google = root / "Google_RE" if (root / "Google_RE").is_dir() else None
    rel = next((p / "relations.jsonl" for p in (root, root.parent)
                if (p / "relations.jsonl").is_file()), None)
    if trex is None and google is None:
        raise UserError(f"{root} holds neither TREx/P<id>.jsonl nor Google_RE/*_test.jsonl; "
                        f"--source lama reads LAMA's data/ folder (unzipped data.zip)")
    return root, trex, google, rel


def relations_file(path: Path, rows: BenchRows | None = None) -> dict[str, dict]:
    """relations.jsonl: relation id -> its record (template, label, description, type)."""
    rows = rows or BenchRows("lama", None, {}, limit=None, skip_bad=False, hint=TEMPLATES_HINT)
    out: dict[str, dict] = {}
    line_of: dict[str, int] = {}
    for n, obj in json_lines(path, rows):
        where = f"{path}:{n}"
        rid = text_field(obj, "relation", where, rows)
        template = text_field(obj, "template", where, rows)
        if rid is None or template is None:
            continue
        if bad_relation_code(rid):
            rows.bad(where, f"field 'relation' is {rid[:60]!r}, no relation id")
            continue
        if rid in line_of:   # the later line would silently replace the first's template
            rows.bad(where, f"field 'relation' {rid!r} is already on line {line_of[rid]}")
            continue
        line_of[rid] = n
        out[rid] = obj
    return out


def _evidence(evidences, obj_label: str) -> tuple[str | None, int]:
    if not isinstance(evidences, list):
        return None, 0
    for ev in evidences:
        if isinstance(ev, dict) and isinstance(ev.get("masked_sentence"), str):
            surface = ev.get("obj_surface") if isinstance(ev.get("obj_surface"), str) else None
            return ev["masked_sentence"].replace("[MASK]", surface or obj_label), len(evidences)
    return None, len(evidences)


def _read_trex(folder: Path, root: Path, rows: BenchRows, meta: dict[str, dict]) -> None:
    for f in relation_files(folder):
        lines = kept = 0
        for n, obj in json_lines(f, rows):
            lines = n
            where = f"{f}:{n}"
            vals = [text_field(obj, k, where, rows, label=k.endswith("label")) for k in
                    ("sub_uri", "sub_label", "obj_uri", "obj_label")]
            if None in vals:
                continue
            rid = obj.get("predicate_id", f.stem)
            if rid != f.stem:
                rows.bad(where, f"field 'predicate_id' is {rid!r} in a file of {f.stem}")
                continue
            text, count = _evidence(obj.get("evidences"), vals[3])
            kept += rows.add(f.stem, {
                "subject_id": vals[0], "subject": vals[1], "object_id": vals[2],
                "object": vals[3], "uuid": obj.get("uuid") if isinstance(obj.get("uuid"), str)
                else None, "evidence_text": text, "evidence_count": count,
                "relation_type": (meta.get(f.stem) or {}).get("type"), "split": "test"})
        rows.file_read(f, lines, kept, root)


def _google_files(folder: Path) -> list[tuple[str, Path]]:
    out = []
    for rel in GOOGLE_RE:
        for name in (f"{rel}_test.jsonl", f"{rel}.jsonl"):
            if (folder / name).is_file():
                out.append((rel, folder / name))
                break
    return out


def _read_google(folder: Path, root: Path, rows: BenchRows) -> None:
    files = _google_files(folder)
    if not files:
        raise UserError(f"{folder} holds none of {', '.join(f'{r}_test.jsonl' for r in GOOGLE_RE)}"
                        f"; give LAMA's Google_RE folder as released")
    for rel, f in files:
        lines = kept = 0
        for n, obj in json_lines(f, rows):
            lines = n
            where = f"{f}:{n}"
            vals = [text_field(obj, k, where, rows, label=k.endswith("label"))
                    for k in ("sub", "sub_label", "obj_label")]
            aliases = [text_list(obj, k, where, rows) for k in ("sub_aliases", "obj_aliases")]
            if None in vals or None in aliases:
                continue
            obj_id = obj.get("obj") if isinstance(obj.get("obj"), str) and obj["obj"] else vals[2]
            # the release's Wikidata ids beside the Freebase ones (null where none was found:
            # every date_of_birth object, most subjects)
            wikidata = [obj.get(k) if isinstance(obj.get(k), str) and obj[k].strip() else None
                        for k in ("sub_w", "obj_w")]
            judgments = obj.get("judgments") if isinstance(obj.get("judgments"), list) else []
            verdicts = [j.get("judgment") for j in judgments if isinstance(j, dict)]
            masked = obj.get("masked_sentences")
            first = next((m for m in masked if isinstance(m, str)), None) \
                if isinstance(masked, list) else None
            if rows.add(rel, {
                    "subject_id": vals[0], "subject": vals[1], "object_id": obj_id,
                    "object": vals[2], "uuid": obj.get("uuid") if isinstance(obj.get("uuid"), str)
                    else None, "evidence_text": first.replace("[MASK]", vals[2]) if first else None,
                    "evidence_count": len(masked) if isinstance(masked, list) else 0,
                    "judgments_yes": verdicts.count("yes"), "judgments_no": verdicts.count("no"),
                    # the release's third verdict; LAMA's filter counts it against the fact
                    "judgments_skip": len(verdicts) - verdicts.count("yes")
                    - verdicts.count("no"),
                    "sub_w": wikidata[0], "obj_w": wikidata[1], "split": "test"}):
                kept += 1
                rows.take.alias(vals[0], aliases[0])
                rows.take.alias(obj_id, aliases[1])
        rows.file_read(f, lines, kept, root)
        rows.relation_meta[rel] = {"label": GOOGLE_RE_LABELS[rel]}


def read_lama(path: str, relations: list[str] | None, *, limit: int | None = None,
              skip_bad: bool = False) -> SourceResult:
    root, trex, google, rel_file = layout(path)
    rows = BenchRows("lama", relations, EXTRA, limit=limit, skip_bad=skip_bad)
    meta = relations_file(rel_file, rows) if rel_file else {}
    for rid, m in meta.items():
        rows.relation_meta[rid] = {"label": str(m.get("label") or ""),
                                   "description": str(m.get("description") or "")}
    if trex is not None:
        _read_trex(trex, root, rows, meta)
    if google is not None:
        _read_google(google, root, rows)
    if rel_file is not None:
        with open(rel_file, "rb") as fh:
            rows.file_read(rel_file, sum(1 for _ in fh), len(meta), root)
    return rows.result(root, RELEASE)


def lama_templates(path: str) -> tuple[list[tuple[str, str, str]], dict]:
    """(relation, id, template) of LAMA's templates: relations.jsonl's, and Google-RE's three
    when the Google_RE folder is there; and the files read."""
    root, trex, google, rel_file = layout(path)
    out, files = [], {}
    if rel_file is not None:
        meta = relations_file(rel_file)
        out += [(rid, "lama", m["template"]) for rid, m in meta.items()]
        files[rel_file.name] = rel_file
    if google is not None:
        out += [(rel, "lama", GOOGLE_RE_TEMPLATES[rel]) for rel, _ in _google_files(google)]
    if not out:
        raise UserError(f"{root} has no relations.jsonl (nor beside it) and no Google_RE folder: "
                        f"no LAMA templates to import")
    return out, files
