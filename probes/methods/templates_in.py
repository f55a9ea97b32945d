"""Templates for the prompt-based probes, from any of the places users keep them."""
from __future__ import annotations

from pathlib import Path

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.builders.templates.files import Template, read_templates


def _lpaqa(path: Path) -> list[Template]:
    """LPAQA's mined/paraphrased prompts: ``P36.jsonl`` lines ``{"template", "weight"}``,
    heaviest first."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    out = []
    for f in files:
        rows = []
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = jsonsafe.loads(line)
                rows.append((-float(rec.get("weight", 0.0)), n, str(rec["template"]).strip()))
            except (ValueError, KeyError, TypeError):
                raise UserError(f"{f}:{n}: expected a JSON object with 'template' (and "
                                f"'weight'); fix the line") from None
        rel = f.stem
        for k, (_, _, text) in enumerate(sorted(rows)):
            out.append(Template(template_id=f"{rel}/l{k + 1}", relation_id=rel, template=text,
                                style="statement", origin="mined", parent_id=""))
    return out


def load_templates(spec: str, relations: list[str] | None = None) -> list[Template]:
    """``spec``: a templates dataset folder, a folder of hand-written YAML files, or LPAQA
    JSON lines (a file or a folder of ``<relation>.jsonl``)."""
    path = Path(spec)
    if not path.exists():
        raise UserError(f"templates {spec} not found: give a templates dataset, a folder of "
                        f"YAML templates (data/templates) or LPAQA .jsonl files")
    if (path / "templates.parquet").is_file():
        return read_templates(path, None, relations)
    if path.suffix == ".jsonl" or (path.is_dir() and any(path.glob("*.jsonl"))):
        rows = _lpaqa(path)
        return [t for t in rows if relations is None or t.relation_id in relations]
    return read_templates(None, path, relations)
