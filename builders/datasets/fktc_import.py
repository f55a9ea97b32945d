"""``factprobe build fktc --import DIR``: the MONITOR authors' published FKTC files, in the same
schema as a built FKTC dataset.

Their format (``FKTC/P<id>-subclass.json``, JSON lines): the first line is
``{"relations": [question templates with [X]]}``, the first being the base question; then one
line per fact ``{"subject": ..., "object": ..., "taxonomy": [5 negative objects]}``.

Everything is imported as published, quirks included, and the quirks are counted in the manifest
rather than "fixed": two relations list 6 questions, one lists a question twice (kept once:
the templates are the distinct questions), some negatives are not of the object's type, a few
fact lines repeat a (subject, object) pair, and one file is named ``P276-subclass..json``. Every
line is a fact, because the authors' evaluation reads every line; a repeated pair gets its own
``fact_id`` (the object id plus the occurrence number) so prompt ids stay unique.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.tables import (
    FACTS_SCHEMA,
    RELATIONS_SCHEMA,
    base_manifest,
    fact_id,
    file_sha256,
    write_dataset,
)
from factprobe.core.textfiles import nul_error, read_text
from factprobe.builders.datasets.fktc import fktc_templates_table, prompt_count
from factprobe.builders.templates.files import Template

_RELATION = re.compile(r"^(P\d+)")


@dataclass(frozen=True)
class FktcImportConfig:
    path: str
    out: str
    progress: bool = True


def relation_of(file_name: str) -> str:
    """The relation id in one of the authors' file names.

    >>> relation_of("P276-subclass..json"), relation_of("P17-subclass.json")
    ('P276', 'P17')
    """
    m = _RELATION.match(file_name)
    return m.group(1) if m else re.split(r"[-.]", file_name, maxsplit=1)[0]


def _json_line(path: Path, lineno: int, line: str) -> dict:
    try:
        value = jsonsafe.loads(line)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from None
    except RecursionError:
        raise UserError(f"{path}:{lineno}: nested too deeply to be an FKTC line") from None
    if "\\u0000" in line.lower():  # the escaped form; a raw NUL is refused by read_text
        raise nul_error(path, lineno)
    if not isinstance(value, dict):
        raise UserError(f"{path}:{lineno}: expected a JSON object")
    return value


def read_file(path: Path) -> tuple[list[str], list[dict]]:
    """(questions as listed, fact lines) of one authors' file."""
    lines = read_text(path, "an FKTC file (JSON lines)").splitlines()
    numbered = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    if not numbered:
        raise UserError(f"{path} is empty")
    lineno, first = numbered[0]
    head = _json_line(path, lineno, first)
    questions = head.get("relations")
    if not isinstance(questions, list) or not questions or not all(
            isinstance(q, str) for q in questions):
        raise UserError(f"{path}:{lineno}: the first line must be {{\"relations\": [questions "
                        f"with [X]]}}")
    for q in questions:
        if q.count("[X]") != 1 or "[Y]" in q:
            raise UserError(f"{path}:{lineno}: question {q!r} must hold [X] once and no [Y]")
    if len(numbered) == 1:
        raise UserError(f"{path}: no fact lines after the questions; each fact is a line "
                        f"{{\"subject\": ..., \"object\": ..., \"taxonomy\": [...]}}")
    facts = []
    for lineno, line in numbered[1:]:
        row = _json_line(path, lineno, line)
        s, o, neg = row.get("subject"), row.get("object"), row.get("taxonomy")
        if not isinstance(s, str) or not isinstance(o, str) or not s.strip() or not o.strip():
            raise UserError(f"{path}:{lineno}: needs text 'subject' and 'object'")
        if not isinstance(neg, list) or not all(isinstance(n, str) for n in neg):
            raise UserError(f"{path}:{lineno}: 'taxonomy' must be a list of negative objects")
        # The authors' code strips subject and object before use; so do we.
        facts.append({"subject": s.strip(), "object": o.strip(), "negatives": list(neg),
                      "line": lineno})
    return questions, facts


def import_fktc(cfg: FktcImportConfig) -> Path:
    folder = Path(cfg.path)
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder; --import takes the folder of the authors' "
                        f"FKTC files (P<id>-subclass.json)")
    paths = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(".json"))
    if not paths:
        raise UserError(f"{folder} holds no .json files (expected P<id>-subclass.json)")
    by_relation: dict[str, Path] = {}
    for p in paths:
        rid = relation_of(p.name)
        if rid in by_relation:
            raise UserError(f"{by_relation[rid].name} and {p.name} are both relation {rid}; "
                            f"keep one")
        by_relation[rid] = p

    cols: dict[str, list] = defaultdict(list)
    chosen: dict[str, list[Template]] = {}
    per_file = {}
    for rid, path in sorted(by_relation.items()):
        listed, facts = read_file(path)
        distinct = list(dict.fromkeys(listed))
        base_id = f"{rid}/q1"
        positions = {q: listed.index(q) + 1 for q in distinct}
        chosen[rid] = [Template(f"{rid}/q{positions[q]}", rid, f"{q} [Y].", "question",
                                "imported", "" if positions[q] == 1 else base_id)
                       for q in distinct]
        answers: dict[str, set[str]] = defaultdict(set)
        objects = set()
        for f in facts:
            answers[f["subject"]].add(f["object"])
            objects.add(f["object"])
        seen: Counter = Counter()
        wrong_count = not_objects = are_answers = 0
        for f in facts:
            s, o = f["subject"], f["object"]
            seen[(s, o)] += 1
            k = seen[(s, o)]
            cols["fact_id"].append(fact_id(rid, s, o if k == 1 else f"{o}\x1f{k}"))
            cols["relation_id"].append(rid)
            cols["subject_id"].append(s)
            cols["object_id"].append(o)
            cols["subject"].append(s)
            cols["object"].append(o)
            cols["subject_aliases"].append([])
            cols["object_aliases"].append([])
            cols["answers"].append(sorted(answers[s]))
            cols["split"].append("")
            cols["source"].append(f"fktc:{path.name}")
            cols["negatives"].append(f["negatives"])
            cols["source_line"].append(f["line"])
            wrong_count += len(f["negatives"]) != 5
            not_objects += sum(1 for n in f["negatives"] if n not in objects)
            are_answers += sum(1 for n in f["negatives"] if n in answers[s])
        per_file[rid] = {
            "file": path.name, "sha256": file_sha256(path), "facts": len(facts),
            "questions_listed": len(listed), "questions": len(distinct),
            "repeated_questions": len(listed) - len(distinct),
            "repeated_facts": sum(v - 1 for v in seen.values()),
            "facts_without_5_negatives": wrong_count,
            "negatives_not_an_object_of_the_relation": not_objects,
            "negatives_that_are_answers": are_answers}

    schema = pa.schema(list(FACTS_SCHEMA) + [("negatives", pa.list_(pa.string())),
                                             ("source_line", pa.int32())])
    facts_table = pa.table({f.name: pa.array(cols[f.name], f.type) for f in schema},
                           schema=schema)
    rids = sorted(chosen)
    relations = pa.table({"relation_id": rids, "label": rids, "description": [""] * len(rids),
                          "object_type": ["entity"] * len(rids), "iri": [""] * len(rids)},
                         schema=RELATIONS_SCHEMA)
    n_questions = {r: len(q) for r, q in chosen.items()}
    counts = {"facts": facts_table.num_rows, "relations": len(rids),
              "prompts": prompt_count(facts_table, n_questions), "per_relation": per_file,
              "quirks": {k: sum(v[k] for v in per_file.values()) for k in (
                  "repeated_questions", "repeated_facts", "facts_without_5_negatives",
                  "negatives_not_an_object_of_the_relation", "negatives_that_are_answers")},
              "relations_with_fewer_than_7_questions": sorted(
                  r for r, n in n_questions.items() if n < 7)}
    source = {"type": "fktc-import", "path": str(folder),
              "files": {v["file"]: v["sha256"] for v in per_file.values()}}
    manifest = base_manifest(Path(cfg.out).name, "fktc", source, {"import": True}, counts)
    return write_dataset(cfg.out, {"facts": facts_table,
                                   "templates": fktc_templates_table(chosen),
                                   "relations": relations}, manifest)
