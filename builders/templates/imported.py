"""``factprobe build import-templates --format FORMAT --path P --out D``: a benchmark's own
templates (LAMA's relations.jsonl and Google-RE's, ParaRel's patterns, EntityQuestions' question
templates recovered from its questions, BEAR's metadata templates) as a templates dataset, the
kind ``build multiprompt --templates``, ``build fktc --templates`` and ``factprobe eval
--templates`` read. Each keeps its text exactly as published (LAMA's ``[X] was born in [Y] .``
with its space before the period); one that is not a template (``[X]`` and ``[Y]`` exactly once)
is skipped and counted with the reason, never rewritten.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.core.provenance import make_provenance
from factprobe.core.tables import RELATIONS_SCHEMA, base_manifest, file_sha256, write_dataset
from factprobe.builders.sources.common import natural_key
from factprobe.builders.templates.files import Template, placeholder_problem, templates_table

FORMATS = ("lama", "pararel", "entityquestions", "bear")


@dataclass(frozen=True)
class ImportTemplatesConfig:
    format: str
    path: str
    out: str
    relations: tuple[str, ...] | None = None


def _read(fmt: str, path: str):
    if fmt == "lama":
        from factprobe.builders.sources.lama import lama_templates as read
    elif fmt == "pararel":
        from factprobe.builders.sources.pararel import pararel_templates as read
    elif fmt == "entityquestions":
        from factprobe.builders.sources.entityquestions import entityquestions_templates as read
    elif fmt == "bear":
        from factprobe.builders.sources.bear import bear_templates as read
    else:
        raise UserError(f"unknown --format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return read(path)


def style_of(text: str) -> str:
    """``question`` for a question template (``...? [Y].``), else ``statement``.

    >>> style_of("Where was [X] born? [Y]."), style_of("[X] was born in [Y] .")
    ('question', 'statement')
    """
    return "question" if text.rstrip().endswith("? [Y].") else "statement"


def build_imported_templates(cfg: ImportTemplatesConfig) -> tuple[Path, dict]:
    found, files = _read(cfg.format, cfg.path)
    wanted = set(cfg.relations) if cfg.relations else None
    if wanted is not None:
        missing = sorted(wanted - {rid for rid, _, _ in found}, key=natural_key)
        if missing:
            raise UserError(f"relation(s) {', '.join(missing)} have no template in {cfg.path}")
    kept: list[Template] = []
    skipped: dict[str, str] = {}
    for rid, tid, text in found:
        if wanted is not None and rid not in wanted:
            continue
        problem = placeholder_problem(text)
        if problem:
            skipped[f"{rid}/{tid}"] = problem
            continue
        kept.append(Template(f"{rid}/{tid}", rid, text, style_of(text), "imported"))
    if not kept:
        raise UserError(f"no template of {cfg.path} is usable ({len(skipped)} skipped: "
                        + "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:3]) + ")")
    rids = sorted({t.relation_id for t in kept})
    relations = pa.table({"relation_id": rids, "label": rids, "description": [""] * len(rids),
                          "object_type": ["entity"] * len(rids), "iri": [""] * len(rids)},
                         schema=RELATIONS_SCHEMA)
    per_relation = {r: sum(t.relation_id == r for t in kept) for r in rids}
    source = {"type": f"import-templates:{cfg.format}", "path": str(cfg.path),
              "files_sha256": {name: file_sha256(f) for name, f in sorted(files.items())}}
    counts = {"templates": len(kept), "relations": len(rids), "per_relation": per_relation,
              "skipped": skipped}
    params = {"format": cfg.format, "relations": sorted(wanted) if wanted else "all"}
    manifest = base_manifest(Path(cfg.out).name, "templates", source, params, counts,
                             make_provenance(source))
    out = write_dataset(cfg.out, {"templates": templates_table(kept), "relations": relations},
                        manifest)
    return out, counts
