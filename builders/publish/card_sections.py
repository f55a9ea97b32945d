"""The long sections of the Hub dataset card: how the dataset was built (source, hashes,
parameters, counts per relation, statistics) and its schema. Pure functions of the manifest."""
from __future__ import annotations

import json
from typing import Any, Mapping

# Meanings of the fixed columns (docs/schema.md); a column not listed is shown with its type only.
COLUMNS = {
    "fact_id": "stable id: first 16 hex digits of SHA-1 of relation_id, subject_id, object_id",
    "relation_id": "the relation (`P36`, or the graph's prefixed name or IRI)",
    "subject_id": "the subject's id (`Q90`, or the graph's prefixed name or IRI)",
    "object_id": "the object's id; a literal's display form for dates and years",
    "subject": "the subject's preferred label",
    "object": "the object's preferred label (multiple choice: the gold answer)",
    "subject_aliases": "other names of the subject",
    "object_aliases": "other names of the object",
    "answers": "every correct object label of this (subject, relation) pair",
    "split": "`train`, `test`, or empty",
    "source": "where the fact came from",
    "choices": "the options shown: the gold exactly once plus distractors",
    "negatives": "misprimes: wrong objects for in-context interference",
    "evidence_title": "T-REx evidence: Wikipedia page title",
    "evidence_text": "T-REx evidence sentence",
    "label": "the relation's label",
    "description": "the relation's description",
    "object_type": "`entity`, or the literal datatype of the objects",
    "iri": "the predicate's full IRI",
    "name": "the laureate's name",
    "birth_year": "year of birth",
    "award_years": "years of the Nobel awards received",
    "fields": "labels of those awards",
    "gender": "label of the sex-or-gender value",
    "template_id": "stable id of the template",
    "template": "the prompt, with `[X]` (subject) and `[Y]` (object)",
    "style": "`statement`, `question` or `check`",
    "origin": "`manual`, `llm:<model>`, `mined` or `imported`",
    "parent_id": "the template this one paraphrases",
}


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", " ")


def _code(value: Any) -> str:
    return f"`{_cell(value)}`"


def source_lines(src: Mapping[str, Any], indent: str = "") -> list[str]:
    """Markdown bullets for one manifest ``source``, following derived datasets down to the
    graph or file their facts came from."""
    tag = str(src.get("type") or "")
    out: list[str] = []
    if tag == "facts":
        out.append(f"{indent}- derived from the facts dataset {_code(src.get('facts_dataset'))} "
                   f"(`facts.parquet` sha256 {_code(src.get('facts_sha256'))}), built from:")
        return out + source_lines(src.get("facts_source") or {}, indent + "  ")
    if tag == "wikidata":
        out.append(f"{indent}- Wikidata Query Service, endpoint {_code(src.get('endpoint'))}")
    elif tag == "wikidata-dump":
        out.append(f"{indent}- Wikidata dump {_code(src.get('path'))} ({src.get('format')}, "
                   f"{src.get('compression')}), dated {src.get('dump_date') or 'unknown'}")
    elif tag.startswith("sparql:"):
        out.append(f"{indent}- SPARQL endpoint {_code(src.get('endpoint') or tag[7:])}")
    elif tag.startswith("rdf:"):
        out.append(f"{indent}- RDF file {_code(src.get('path'))} ({src.get('format', 'RDF')})")
    elif src.get("kind") in ("lama", "hf"):
        form = "LAMA-style P<id>.jsonl files" if src["kind"] == "lama" else "Hugging Face copy"
        out.append(f"{indent}- T-REx ({form}) at {_code(src.get('path'))}")
    elif "delimiter" in src:
        out.append(f"{indent}- CSV of triples {_code(src.get('path'))}")
    else:
        out.append(f"{indent}- {_code(tag or 'unrecorded source')}"
                   + (f" at {_code(src['path'])}" if src.get("path") else ""))
    if src.get("sha256"):
        out.append(f"{indent}- input file sha256 {_code(src['sha256'])}")
    files = src.get("files") or {}
    for name, info in sorted(files.items()):
        sha = info.get("sha256") if isinstance(info, dict) else info
        out.append(f"{indent}- file {_code(name)} sha256 {_code(sha)}")
    if src.get("data_files"):
        out.append(f"{indent}- data files: {', '.join(_code(f) for f in src['data_files'])}")
    if src.get("builder"):
        out.append(f"{indent}- Hub builder {_code(src['builder'])}, config "
                   f"{_code(src.get('config'))}, version {_code(src.get('version'))}")
    queries = src.get("query_sha256")
    if isinstance(queries, str):
        out.append(f"{indent}- query sha256 {_code(queries)}")
    elif isinstance(queries, dict):
        out.append(f"{indent}- query sha256 per relation:")
        out += [f"{indent}  - {_code(r)}: {_code(h)}" for r, h in sorted(queries.items())]
    if "retrieved" in src:
        dates = src.get("retrieved") or []
        out.append(f"{indent}- retrieved: {', '.join(dates)}" if dates else
                   f"{indent}- retrieved: no network answers (read from a local file)")
    aliases = src.get("aliases")
    if isinstance(aliases, dict):
        via = aliases.get("via") or aliases.get("api") or "?"
        where = aliases.get("path") or aliases.get("endpoint") or "Wikidata's wbgetentities"
        dates = aliases.get("retrieved") or []
        out.append(f"{indent}- aliases via {_code(via)} from {_code(where)}"
                   + (f", retrieved {', '.join(dates)}" if dates else ""))
    return out


def _per_relation(manifest: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    counts = manifest.get("counts") or {}

    def name(r: str) -> str:
        return _code(r) + (f" ({_cell(labels[r])})" if labels.get(r, r) != r else "")

    stats = counts.get("per_relation")
    if isinstance(stats, dict) and stats:
        keys = sorted({k for v in stats.values() if isinstance(v, dict) for k in v})
        lines = ["### Statistics per relation", "", "| relation | " + " | ".join(keys) + " |",
                 "|---|" + "---|" * len(keys)]
        for rel, row in sorted(stats.items()):
            lines.append(f"| {name(rel)} | " + " | ".join(
                f"{row.get(k, ''):,}" if isinstance(row.get(k), int) else _cell(row.get(k, ""))
                for k in keys) + " |")
        return [*lines, ""]
    per = counts.get("facts_per_relation")
    if isinstance(per, dict) and per:
        lines = ["### Facts per relation", "", "| relation | facts |", "|---|---|"]
        lines += [f"| {name(r)} | {n:,} |" for r, n in sorted(per.items())]
        return [*lines, ""]
    return []


def _statistics(manifest: Mapping[str, Any]) -> list[str]:
    counts = manifest.get("counts") or {}
    flat = {k: v for k, v in counts.items() if isinstance(v, (int, float, str))}
    lines = ["### Counts", "", "| count | value |", "|---|---|"]
    lines += [f"| {_cell(k)} | {f'{v:,}' if isinstance(v, int) else _cell(v)} |"
              for k, v in sorted(flat.items())]
    dropped = counts.get("dropped_relations")
    if isinstance(dropped, dict) and dropped:
        lines += ["", "Relations left out, and why:", ""]
        lines += [f"- {_code(r)}: {_cell(why)}" for r, why in sorted(dropped.items())]
    other = counts.get("dropped")
    if isinstance(other, dict) and other:
        lines += ["", "Rows dropped while building: " + ", ".join(
            f"{_cell(k)} {v:,}" if isinstance(v, int) else f"{_cell(k)} {_cell(v)}"
            for k, v in sorted(other.items())) + "."]
    return [*lines, ""]


def built_section(manifest: Mapping[str, Any], relation_labels: Mapping[str, str]) -> list[str]:
    params = json.dumps(manifest.get("params") or {}, indent=2, sort_keys=True,
                        ensure_ascii=False)
    return ["## How it was built", "", "### Source", "",
            *source_lines(manifest.get("source") or {}), "",
            f"### Parameters (`factprobe build {manifest.get('kind')}`)", "", "```json", params,
            "```", "", *_per_relation(manifest, relation_labels), *_statistics(manifest)]


def schema_section(layout: Mapping[str, Any]) -> list[str]:
    lines = ["## Schema", ""]
    for name, entry in layout["tables"].items():
        lines += [f"### `{name}`", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{col}` | `{_cell(typ)}` | {COLUMNS.get(col, '')} |"
                  for col, typ in entry["columns"]]
        lines.append("")
    lines += ["Full definitions: factprobe's `docs/schema.md`.", ""]
    return lines
