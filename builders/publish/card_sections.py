"""The long sections of the Hub dataset card: the source data (the provenance chain back to the
graph, file or endpoint, with hashes), parameters, counts per relation, statistics, every field
and every split. Pure functions of the manifest and the export layout."""
from __future__ import annotations

import json
from typing import Any, Mapping

from factprobe.core.markdown import escape
from factprobe.builders.sources.table import SOURCES, cell, recorded_source

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
    "is_base": "FKTC: the relation's base question Q0 (the others paraphrase it)",
    "status": "refresh of a dataset named by labels: `resolved`, `unresolved`, `ambiguous` or "
              "`malformed` (`resolved.parquet`)",
    "matched": "refresh by labels: whether the name is the entity's `label` or an `alias`",
    "candidates": "refresh by labels: every entity bearing the name (several: ambiguous)",
    "frame": "FKTC: `statement`, a cloze statement posed cut before `[Y]` (MONITOR's WP frame)",
    "prompt_id": "stable id of the prompt: template, subject and subject name",
    "subject_name": "the name of the subject used in this prompt (label or alias)",
    "prompt": "the template with `[X]` filled",
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
    # columns an imported benchmark keeps (builders/sources/lama.py, popqa.py, ...)
    "uuid": "LAMA / ParaRel: the fact's uuid in the released file",
    "evidence_count": "LAMA: how many evidence sentences the released line holds",
    "judgments_yes": "LAMA Google-RE: raters who judged the fact supported",
    "judgments_no": "LAMA Google-RE: raters who judged it not supported",
    "judgments_skip": "LAMA Google-RE: raters who skipped the fact (judgment `skip`)",
    "sub_w": "LAMA Google-RE: the subject's Wikidata id in the release (null where none)",
    "obj_w": "LAMA Google-RE: the object's Wikidata id in the release (null where none)",
    "relation_type": "LAMA: the relation's type in relations.jsonl (`1-1`, `N-1`, `N-M`)",
    "popqa_id": "PopQA: the question's `id`",
    "popqa_subj_id": "PopQA: `subj_id` (the authors' numbering, not Wikidata's)",
    "popqa_prop_id": "PopQA: `prop_id`",
    "popqa_obj_id": "PopQA: `obj_id`",
    "s_pop": "PopQA: the subject's popularity (monthly Wikipedia page views)",
    "o_pop": "PopQA: the object's popularity (monthly Wikipedia page views)",
    "s_wiki_title": "PopQA: the subject's Wikipedia title",
    "o_wiki_title": "PopQA: the object's Wikipedia title",
    "question": "the benchmark's own question for this fact",
    "source_index": "EntityQuestions: the question's position in its released file",
    "answer_idx": "BEAR: the object's place in the relation's answer space",
    "answer_space": "BEAR: the relation's answer space (lm-pub-quiz's options)",
    "domains": "BEAR: the relation's domains (relation_info.json)",
}


def _cell(value: Any) -> str:
    """Text from the manifest (labels, ids, reasons: data) as Markdown showing it as written,
    safe in a table cell."""
    return escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


_code = cell   # a code span that no backtick in the value can end (safe in a table cell)


def source_lines(src: Mapping[str, Any], indent: str = "") -> list[str]:
    """Markdown bullets for one manifest ``source``, following derived datasets down to the
    graph or file their facts came from."""
    tag = str(src.get("type") or "")
    out: list[str] = []
    if tag == "facts":
        out.append(f"{indent}- derived from the facts dataset {_code(src.get('facts_dataset'))} "
                   f"(`facts.parquet` sha256 {_code(src.get('facts_sha256'))}), built from:")
        return out + source_lines(src.get("facts_source") or {}, indent + "  ")
    if tag == "aliases":
        where = src.get("path") or src.get("endpoint") or "Wikidata's wbgetentities"
        out.append(f"{indent}- aliases via {_code(src.get('via') or src.get('api') or '?')} "
                   f"from {_code(where)}")
    elif tag in ("templates", "template-files"):
        out.append(f"{indent}- template files in {_code(src.get('templates_dir'))}")
        out += [f"{indent}- file {_code(n)} sha256 {_code(h)}"
                for n, h in sorted((src.get("files_sha256") or {}).items())]
        if src.get("review_sha256"):
            out.append(f"{indent}- review file sha256 {_code(src['review_sha256'])}")
    elif tag == "fktc-import":
        out.append(f"{indent}- the MONITOR authors' FKTC files in {_code(src.get('path'))}")
    elif recorded_source(src) is not None:   # a facts source: its own bullet (the table's)
        out.append(f"{indent}- {SOURCES[recorded_source(src)].card.data(src)}")
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
    if src.get("dump_date") and tag != "wikidata-dump":
        out.append(f"{indent}- dump date {src['dump_date']}")
    if "retrieved" in src:
        dates = src.get("retrieved") or []
        out.append(f"{indent}- retrieved: {_cell(', '.join(map(str, dates)))}" if dates else
                   f"{indent}- retrieved: no network answers (read from a local file)")
    aliases = src.get("aliases")
    if isinstance(aliases, dict):
        via = aliases.get("via") or aliases.get("api") or "?"
        where = aliases.get("path") or aliases.get("endpoint") or "Wikidata's wbgetentities"
        dates = aliases.get("retrieved") or []
        out.append(f"{indent}- aliases via {_code(via)} from {_code(where)}"
                   + (f", retrieved {_cell(', '.join(map(str, dates)))}" if dates else ""))
    return out


def _per_relation(manifest: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    counts = manifest.get("counts") or {}

    def name(r: str) -> str:
        return _code(r) + (f" ({_cell(labels[r])})" if labels.get(r, r) != r else "")

    stats = counts.get("per_relation")
    if isinstance(stats, dict) and stats:
        keys = sorted({k for v in stats.values() if isinstance(v, dict) for k in v})
        lines = ["#### Statistics per relation", "",
                 "| relation | " + " | ".join(map(_cell, keys)) + " |",
                 "|---|" + "---|" * len(keys)]
        for rel, row in sorted(stats.items()):
            lines.append(f"| {name(rel)} | " + " | ".join(
                f"{row.get(k, ''):,}" if isinstance(row.get(k), int) else _cell(row.get(k, ""))
                for k in keys) + " |")
        return [*lines, ""]
    per = counts.get("facts_per_relation")
    if isinstance(per, dict) and per:
        lines = ["#### Facts per relation", "", "| relation | facts |", "|---|---|"]
        lines += [f"| {name(r)} | {n:,} |" for r, n in sorted(per.items())]
        return [*lines, ""]
    return []


def _statistics(manifest: Mapping[str, Any]) -> list[str]:
    counts = manifest.get("counts") or {}
    flat = {k: v for k, v in counts.items() if isinstance(v, (int, float, str))}
    lines = ["#### Counts", "", "| count | value |", "|---|---|"]
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


def _refresh(manifest: Mapping[str, Any]) -> list[str]:
    """A refreshed dataset (``factprobe build refresh``): the snapshot it was read at and what
    changed since the dataset it re-read."""
    refresh = (manifest.get("counts") or {}).get("refresh")
    if not isinstance(refresh, dict):
        return []
    shot = refresh.get("snapshot") if isinstance(refresh.get("snapshot"), dict) else {}
    when = (f"the dump of {_cell(shot['dump_date'])}" if shot.get("dump_date") else
            f"answers retrieved {_cell(', '.join(map(str, shot['retrieved'])))}"
            if isinstance(shot.get("retrieved"), list) and shot["retrieved"] else
            f"sha256 {_code(shot['sha256'])}" if shot.get("sha256") else "an unrecorded date")
    was = (manifest.get("params") or {}).get("refresh_of")
    lines = [f"#### Changes since {_code(was)}", "",
             f"The facts of {_code(was)} read again from {_cell(refresh.get('source'))} "
             f"({when}): {_cell(refresh.get('pairs_found', '?'))} of "
             f"{_cell(refresh.get('pairs', '?'))} (relation, subject) pairs are still there, "
             f"{_cell(refresh.get('pairs_gone', '?'))} "
             f"are gone. Every row that changed: `factprobe diff`.", ""]
    labels = refresh.get("labels")
    if isinstance(labels, dict):   # a dataset named by labels: what became of its names
        lines += [f"{_code(was)} names its subjects by label: of its "
                  f"{_cell(labels.get('labels', '?'))} (relation, label) pairs "
                  f"{_cell(labels.get('resolved', '?'))} resolved to one entity, "
                  f"{_cell(labels.get('unresolved', '?'))} to none, "
                  f"{_cell(labels.get('ambiguous', '?'))} to several (never guessed) and "
                  f"{_cell(labels.get('malformed', '?'))} are no name "
                  f"(`resolved.parquet` lists each).", ""]
    changes = refresh.get("changes")
    if isinstance(changes, dict) and any(changes.values()):
        lines += ["| change | rows |", "|---|---|"]
        lines += [f"| {_cell(k)} | {v:,} |" for k, v in changes.items()
                  if isinstance(v, int) and v]
        lines.append("")
    return lines


def _build_line(step: Mapping[str, Any]) -> str:
    b = step.get("build") or {}
    return _cell(f"factprobe {b.get('factprobe_version', '?')}; factprobe's code: "
                 f"{b.get('factprobe_tree', 'unrecorded')}; the git working tree it ran in: "
                 f"{b.get('work_tree', 'unrecorded')}")


def provenance_lines(step: Mapping[str, Any], indent: str = "") -> list[str]:
    """Markdown bullets for one step of a provenance tree and, nested, every step below it."""
    out = [f"{indent}- built with {_build_line(step)}"] if step.get("build") else []
    if isinstance(step.get("source"), dict):
        out.append(f"{indent}- read directly:")
        out += source_lines(step["source"], indent + "  ")
    for role, entry in sorted((step.get("inputs") or {}).items()):
        if not isinstance(entry, dict):
            continue
        hashes = ", ".join(f"{_code(n)} sha256 {_code(h)}"
                           for n, h in sorted((entry.get("sha256") or {}).items()))
        out.append(f"{indent}- read the {_cell(role)} dataset {_code(entry.get('dataset'))} (kind "
                   f"{_code(entry.get('kind'))}; {hashes}), itself:")
        sub = entry.get("provenance")
        out += provenance_lines(sub, indent + "  ") if isinstance(sub, dict) else [
            f"{indent}  - (its provenance was not recorded)"]
    return out


def built_section(manifest: Mapping[str, Any], relation_labels: Mapping[str, str]) -> list[str]:
    params = json.dumps(manifest.get("params") or {}, indent=2, sort_keys=True,
                        ensure_ascii=False)
    prov = manifest.get("provenance")
    chain = (provenance_lines(prov) if isinstance(prov, dict)
             else source_lines(manifest.get("source") or {}))
    return ["### Source Data", "",
            f"How {_code(manifest.get('name'))} was built, down to the data it came from (file "
            f"paths and sha256, endpoints and query hashes, dump dates, and whether the code "
            f"or the working tree had uncommitted changes):", "", *chain, "",
            f"#### Parameters ({_code('factprobe build ' + str(manifest.get('kind')))})", "",
            "```json",
            params, "```", "", *_refresh(manifest), *_per_relation(manifest, relation_labels),
            *_statistics(manifest)]


def fields_section(layout: Mapping[str, Any], main: str) -> list[str]:
    """Every column of every table, with its Arrow type and meaning."""
    lines = ["### Data Fields", ""]
    for name, entry in layout["tables"].items():
        what = "the default config" if name == main else "a separate config"
        lines += [f"`{name}` ({what}):", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| {_code(col)} | {_code(typ)} | {COLUMNS.get(col, '')} |"
                  for col, typ in entry["columns"]]
        lines.append("")
    lines += ["Full definitions: factprobe's `docs/schema.md`.", ""]
    return lines


def splits_section(layout: Mapping[str, Any], main: str) -> list[str]:
    lines = ["### Data Splits", "", "| config | split | rows | file |", "|---|---|---|---|"]
    notes = []
    for name, entry in layout["tables"].items():
        for split, info in entry["splits"].items():
            lines.append(f"| `{name}` | `{split}` | {info['rows']:,} | `{info['path']}` |")
        single = next(iter(entry["splits"]), "train")
        if name != main and not entry["split_column"]:
            notes.append(f"`{name}` is a separate config, not training data: its one split is "
                         f"`{single}`.")
        elif not entry["split_column"]:
            notes.append(f"`{name}` has no `split` column: the whole table is the "
                         f"`{single}` split.")
        elif entry.get("unsplit_as_train"):
            notes.append(f"`{name}` is not split (its `split` column is empty): the whole table "
                         f"is the `{single}` split.")
        elif "unsplit" in entry["splits"]:
            notes.append(f"`{name}` rows with an empty `split` are the `unsplit` split.")
    lines.append("")
    if notes:
        lines += [*notes, ""]
    lines += ["Splits come from the `split` column, which every file keeps; the row order "
              "within a split is the built table's. `factprobe_layout.json` records how the "
              "splits interleave, so the original tables are restored exactly.", ""]
    return lines
