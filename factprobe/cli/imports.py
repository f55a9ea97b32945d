"""``factprobe build import-templates``: a benchmark's own templates as a templates dataset
(its facts come through ``factprobe build facts --source FORMAT``; a templates dataset is a
second output, which the sources table, whose entries each make one facts dataset, cannot carry)."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import relation_list

FORMATS = ("lama", "pararel", "entityquestions", "bear")   # builders/templates/imported.py
EPILOG = """examples:
  factprobe build import-templates --format lama --path LAMA/data --out lama-templates/
  factprobe build import-templates --format pararel --path pararel/data --out pararel-templates/
  factprobe build multiprompt --facts pararel-facts/ --templates pararel-templates/ --out mp/
"""


def add_command(sub, common) -> None:
    p = sub.add_parser("import-templates", parents=[common], epilog=EPILOG,
                       help="a benchmark's own templates (LAMA, ParaRel, EntityQuestions, BEAR)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--path", required=True, help="the benchmark's folder, as released")
    p.add_argument("--relations", type=relation_list,
                   help="comma-separated relation ids, or 'all' (default: all)")
    p.add_argument("--out", required=True, help="output templates dataset folder")
    p.set_defaults(run=_run)


def _run(args) -> str:
    from factprobe.builders.templates.imported import ImportTemplatesConfig, build_imported_templates
    out, counts = build_imported_templates(ImportTemplatesConfig(
        format=args.format, path=args.path, out=args.out,
        relations=tuple(args.relations) if args.relations else None))
    skipped = counts["skipped"]
    note = f"; skipped {len(skipped)} ({'; '.join(f'{k}: {v}' for k, v in skipped.items())})" \
        if skipped else ""
    return f"wrote {out}: {counts['templates']} templates of {counts['relations']} relations{note}"


def facts_note(source: str, out) -> str:
    """What an import left out, counted (appended to ``build facts``' line for the benchmark
    sources): every row of the release is imported or accounted for."""
    import json
    from pathlib import Path
    manifest = json.loads((Path(out) / "dataset.json").read_text(encoding="utf-8"))
    counts = manifest["counts"]
    dropped = {k: v for k, v in counts.get("dropped", {}).items() if v}
    left = f"; not imported: {', '.join(f'{k} {v}' for k, v in sorted(dropped.items()))}" \
        if dropped else ""
    # lm-pub-quiz warns when a relation's metadata gives half an answer space and works it out
    # from the instances; the import does the same and says so on its one line
    half = (manifest.get("source") or {}).get("answer_space_incomplete")
    if half:
        left += (f"; answer space worked out from the instances (metadata gives only one of "
                 f"answer_space_labels, answer_space_ids): {', '.join(half)}")
    return f": {counts['facts']} facts of {counts['relations']} relations{left}"
