"""ParaRel as its authors release it (Elazar et al., 2021, "Measuring and Improving Consistency
in Pretrained Language Models", TACL; yanaiela/pararel): its ``data/`` folder with

* ``pattern_data/graphs_json/P<id>.jsonl``: one paraphrase pattern a line
  (``{"pattern": "[X] was born in [Y].", "lemma": ..., "extended_lemma": ..., "tense": ...}``);
* ``trex_lms_vocab/P<id>.jsonl``: the T-REx facts it was evaluated on (``sub_label``,
  ``obj_label``, ``uuid``), LAMA's T-REx filtered to objects in the models' vocabularies.

The facts have no entity ids in this release: ids are the labels themselves, and each fact keeps
its ``uuid`` (LAMA's, for joining back to LAMA's T-REx with its Wikidata ids). The patterns are
the relation's templates (``factprobe build import-templates --format pararel``): with them,
``build multiprompt`` makes the multi-prompt dataset BELIEF and BELIEF-ICL read.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.bench_files import (
    TEMPLATES_HINT,
    BenchRows,
    json_lines,
    need_folder,
    relation_files,
    text_field,
)

RELEASE = "ParaRel data/ (yanaiela/pararel: pattern_data/graphs_json, trex_lms_vocab)"
PATTERNS = Path("pattern_data") / "graphs_json"
FACTS = Path("trex_lms_vocab")
EXTRA = {"uuid": pa.string()}


def _root(path: str | None) -> Path:
    root = need_folder(path, "pararel", "ParaRel's data/ folder (pattern_data/graphs_json/, "
                                        "trex_lms_vocab/)")
    if not (root / FACTS).is_dir() and not (root / PATTERNS).is_dir():
        raise UserError(f"{root} holds neither {FACTS}/ nor {PATTERNS}/; --source pararel reads "
                        f"ParaRel's data/ folder as released")
    return root


def read_pararel(path: str, relations: list[str] | None, *, limit: int | None = None,
                 skip_bad: bool = False) -> SourceResult:
    root = _root(path)
    files = relation_files(root / FACTS) if (root / FACTS).is_dir() else []
    if not files:
        raise UserError(f"{root / FACTS} holds no P<id>.jsonl: ParaRel's facts are "
                        f"trex_lms_vocab/P<id>.jsonl")
    rows = BenchRows("pararel", relations, EXTRA, limit=limit, skip_bad=skip_bad)
    for f in files:
        lines = kept = 0
        for n, obj in json_lines(f, rows):
            lines = n
            where = f"{f}:{n}"
            sub, obj_label = (text_field(obj, k, where, rows, label=True)
                              for k in ("sub_label", "obj_label"))
            if sub is None or obj_label is None:
                continue
            uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
            kept += rows.add(f.stem, {"subject_id": sub, "subject": sub, "object_id": obj_label,
                                      "object": obj_label, "uuid": uuid})
        rows.file_read(f, lines, kept, root)
    return rows.result(root, RELEASE)


def pararel_templates(path: str) -> tuple[list[tuple[str, str, str]], dict]:
    """(relation, id, pattern) of every pattern line, ids ``pr01``, ``pr02``... in file order; a
    line without a text ``pattern`` is one line naming file, line and field."""
    root = _root(path)
    files = relation_files(root / PATTERNS) if (root / PATTERNS).is_dir() else []
    if not files:
        raise UserError(f"{root / PATTERNS} holds no P<id>.jsonl pattern files")
    rows = BenchRows("pararel", None, {}, limit=None, skip_bad=False, hint=TEMPLATES_HINT)
    out = []
    for f in files:
        k = 0
        for n, obj in json_lines(f, rows):
            pattern = text_field(obj, "pattern", f"{f}:{n}", rows)
            k += 1
            out.append((f.stem, f"pr{k:02d}", pattern))
    return out, {str(f.relative_to(root)): f for f in files}
