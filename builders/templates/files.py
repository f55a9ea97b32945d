"""Relation templates: the hand-written YAML files, their validation, and the templates table.

One YAML file per relation in ``data/templates/``, named after the relation id with ``:``
replaced by ``_`` (``P36.yaml``, ``rel_capital.yaml``)::

    relation: P36
    label: capital
    description: seat of government of a country
    subject_category: country
    object_category: city
    templates:
      - {id: m1, style: statement, text: "The capital of [X] is [Y]."}
      - {id: m4, style: question, text: "What is the capital of [X]? [Y]."}
      - {id: m5, style: check, text: "[Y] is the capital of [X]. True or false?"}

A question template is the question, then the answer slot: ``<question ending in ?> [Y].``.
Every template holds ``[X]`` and ``[Y]`` exactly once. Template ids in the tables are
``<relation_id>/<id>`` (manual) and ``<relation_id>/<id>/pNN`` (the NN-th paraphrase of it).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.textfiles import read_text

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pyarrow as pa

STYLES = ("statement", "question", "check")
TOP_KEYS = {"relation", "label", "description", "subject_category", "object_category",
            "templates"}
TEMPLATE_KEYS = {"id", "style", "text"}
_ID = re.compile(r"^[A-Za-z0-9_-]+$")
# A relation file name kept as the id itself (today's names): word characters, - and ., not
# leading with a dot, short enough for any file system.
_PLAIN_FILE = re.compile(r"\w[\w.-]{0,119}")
_PLACEHOLDER = re.compile(r"\[[A-Z]\]")

TEMPLATE_COLUMNS = ("template_id", "relation_id", "template", "style", "origin", "parent_id")


@functools.cache
def templates_schema():
    """The templates table's Arrow schema (every column a string), built on first use: the
    CLI's parser imports this module, and building it must not import pyarrow."""
    import pyarrow as pa
    return pa.schema([(name, pa.string()) for name in TEMPLATE_COLUMNS])


def __getattr__(name: str):
    # ``TEMPLATES_SCHEMA``, as importers have always named it (PEP 562: built on first use)
    if name == "TEMPLATES_SCHEMA":
        return templates_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Template:
    template_id: str
    relation_id: str
    template: str
    style: str
    origin: str = "manual"
    parent_id: str = ""


@dataclass(frozen=True)
class RelationTemplates:
    """One YAML file: the relation's meaning (for the paraphrase instruction) and its templates."""
    relation_id: str
    label: str
    description: str
    subject_category: str
    object_category: str
    templates: tuple[Template, ...]
    path: str = ""


def file_name(relation_id: str) -> str:
    """The YAML file name of a relation: the id with ``:`` as ``_`` when that is a plain file
    name; otherwise (an IRI, ``..``, a slash, a space, a shell character: relation ids come
    from the graph) its word characters and a hash of the whole id: the name never leaves the
    templates folder, holds nothing a shell reads, and two such ids never share a file.

    >>> file_name("rel:capital"), file_name("P36")
    ('rel_capital.yaml', 'P36.yaml')
    >>> file_name("<http://ex.org/capital>"), file_name("../../etc/x")
    ('http__ex.org_capital-4a7dc1bc.yaml', 'etc_x-56da1a2e.yaml')
    """
    plain = relation_id.replace(":", "_")
    if _PLAIN_FILE.fullmatch(plain) and ".." not in plain:
        return plain + ".yaml"
    digest = hashlib.sha256(relation_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem = re.sub(r"[^\w.-]+", "_", plain).strip("._-")
    stem = re.sub(r"\.{2,}", ".", stem)[:80].strip("._-")
    return f"{stem}-{digest}.yaml" if stem else f"relation-{digest}.yaml"


def placeholder_problem(text: str) -> str | None:
    """Why ``text`` is not a template (``[X]`` and ``[Y]`` exactly once, no other slot), or None.

    >>> placeholder_problem("[X] lives in [Y].") is None
    True
    >>> placeholder_problem("[X] lives in [X].")
    '[X] appears 2 times and [Y] 0 times (each must appear exactly once)'
    >>> placeholder_problem("[X] gave [Z] to [Y].")
    'unknown placeholder [Z] (only [X] and [Y] are allowed)'
    """
    for slot in _PLACEHOLDER.findall(text):
        if slot not in ("[X]", "[Y]"):
            return f"unknown placeholder {slot} (only [X] and [Y] are allowed)"
    nx, ny = text.count("[X]"), text.count("[Y]")
    if nx != 1 or ny != 1:
        return f"[X] appears {nx} times and [Y] {ny} times (each must appear exactly once)"
    return None


def question_text(template: str) -> str:
    """The question of a question template, without the answer slot.

    >>> question_text("What is the capital of [X]? [Y].")
    'What is the capital of [X]?'
    """
    head, sep, _ = template.rpartition("[Y]")
    return head.strip() if sep else template.strip()


def question_problem(template: str) -> str | None:
    """Why ``template`` is not of the form ``<question ending in ?> [Y].``, or None.

    >>> question_problem("Where was [X] born? [Y].") is None
    True
    >>> question_problem("[X] was born in [Y]?")
    "a question template is '<question ending in ?> [Y].'"
    """
    head, sep, tail = template.rpartition("[Y]")
    if not sep or not head.strip().endswith("?") or tail.strip() not in ("", "."):
        return "a question template is '<question ending in ?> [Y].'"
    return None


def y_is_last(template: str) -> bool:
    """True when nothing but punctuation follows ``[Y]``: usable as a left-to-right cloze.

    >>> y_is_last("[X] was born in [Y]."), y_is_last("[Y] is the capital of [X].")
    (True, False)
    """
    return template.rstrip(" .!?").endswith("[Y]")


def fill(template: str, subject: str, obj: str | None = None) -> str:
    """Put a subject (and optionally an object) into a template.

    >>> fill("The capital of [X] is [Y].", "France")
    'The capital of France is [Y].'
    """
    out = template.replace("[X]", subject)
    return out if obj is None else out.replace("[Y]", obj)


def _bad(path: Path, where: str, why: str) -> UserError:
    return UserError(f"{path}: {where}: {why}; fix the file (see docs/templates.md)")


def parse_relation_file(path: Path) -> RelationTemplates:
    try:
        data = jsonsafe.yaml_load(read_text(path, "a YAML template file"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        problem = getattr(exc, "problem", None)
        raise _bad(path, where, f"not valid YAML ({problem})" if problem == "nested too deeply"
                   else "not valid YAML") from None
    if not isinstance(data, dict):
        raise _bad(path, "file", "expected a mapping with 'relation' and 'templates'")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise _bad(path, "file", f"unknown keys {sorted(map(str, unknown))} (allowed: "
                                 f"{', '.join(sorted(TOP_KEYS))})")
    rid = data.get("relation")
    if not isinstance(rid, str) or not rid.strip():
        raise _bad(path, "file", "'relation' (the relation id, as in the facts) is missing")
    if path.name != file_name(rid):
        raise _bad(path, "file", f"declares relation '{rid}' but a file for it must be named "
                                 f"'{file_name(rid)}'")
    items = data.get("templates")
    if not isinstance(items, list) or not items:
        raise _bad(path, "file", "'templates' must be a non-empty list")
    seen_ids: set[str] = set()
    seen_text: dict[str, str] = {}
    templates = []
    for i, item in enumerate(items, 1):
        where = f"template {i}"
        if not isinstance(item, dict):
            raise _bad(path, where, "expected a mapping with id, style and text")
        tid = item.get("id")
        if isinstance(tid, str):
            where = f"template '{tid}'"
        unknown = set(item) - TEMPLATE_KEYS
        if unknown:
            raise _bad(path, where, f"unknown keys {sorted(map(str, unknown))} (allowed: id, "
                                    f"style, text)")
        if not isinstance(tid, str) or not _ID.match(tid):
            raise _bad(path, where, "'id' must be letters, digits, '_' or '-'")
        if tid in seen_ids:
            raise _bad(path, where, "duplicate id")
        seen_ids.add(tid)
        style, text = item.get("style"), item.get("text")
        if style not in STYLES:
            raise _bad(path, where, f"style {style!r} is not one of {', '.join(STYLES)}")
        if not isinstance(text, str) or not text.strip():
            raise _bad(path, where, "'text' is missing")
        text = " ".join(text.split())
        problem = placeholder_problem(text) or (question_problem(text) if style == "question"
                                                else None)
        if problem:
            raise _bad(path, where, problem)
        key = normalise(text)
        if key in seen_text:
            raise _bad(path, where, f"same text as template '{seen_text[key]}'")
        seen_text[key] = tid
        templates.append(Template(f"{rid}/{tid}", rid, text, style))

    def text_field(name: str) -> str:
        value = data.get(name, "")
        if value is None:
            return ""
        if not isinstance(value, str):
            raise _bad(path, "file", f"'{name}' must be text")
        return " ".join(value.split())

    return RelationTemplates(rid, text_field("label") or rid, text_field("description"),
                             text_field("subject_category"), text_field("object_category"),
                             tuple(templates), str(path))


def normalise(text: str) -> str:
    """The form two templates are compared in for duplicates.

    >>> normalise("  The capital of [X]  is [Y]. ") == normalise("the Capital of [X] is [Y]")
    True
    """
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.lower().split()).rstrip(" .!")


def load_template_dir(folder: str | os.PathLike, relations: list[str] | None = None
                      ) -> dict[str, RelationTemplates]:
    """Every relation file of ``folder`` (or only those of ``relations``), validated."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "not found"
        raise UserError(f"templates folder {folder} {what}; give --templates-dir a folder of "
                        f"YAML template files")
    paths = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))
    if relations is not None:
        by_name = {p.name: p for p in paths}
        missing = [r for r in relations if file_name(r) not in by_name]
        if missing:
            raise UserError(f"no template file for {', '.join(missing)} in {folder} (expected "
                            f"{', '.join(file_name(r) for r in missing)}); write one, or leave "
                            f"the relation out")
        paths = [by_name[file_name(r)] for r in relations]
    out: dict[str, RelationTemplates] = {}
    for path in paths:
        rel = parse_relation_file(path)
        out[rel.relation_id] = rel
    if not out:
        raise UserError(f"{folder} holds no template files (*.yaml)")
    return dict(sorted(out.items()))


def templates_table(templates: list[Template],
                    extra: dict[str, tuple[pa.DataType, dict[str, object]]] | None = None
                    ) -> pa.Table:
    """Rows sorted by relation_id, template_id. ``extra`` adds columns: name -> (type, value
    per template_id)."""
    import pyarrow as pa
    schema = templates_schema()
    rows = sorted(templates, key=lambda t: (t.relation_id, t.template_id))
    table = pa.table({f.name: pa.array([getattr(t, f.name) for t in rows], f.type)
                      for f in schema}, schema=schema)
    for name, (dtype, values) in (extra or {}).items():
        table = table.append_column(name, pa.array([values[t.template_id] for t in rows], dtype))
    return table


def read_templates(dataset: str | os.PathLike | None, templates_dir: str | os.PathLike | None,
                   relations: list[str] | None = None) -> list[Template]:
    """Templates from a built templates dataset (``--templates``) or the hand-written YAML
    files (``--templates-dir``), for ``relations`` where given (others are simply absent)."""
    if dataset:
        from factprobe.core.tables import read_table
        table = read_table(dataset, "templates", list(TEMPLATE_COLUMNS),
                           reference=templates_schema())
        rows = [Template(**{k: r[k] or "" for k in TEMPLATE_COLUMNS})
                for r in table.to_pylist()]
        wanted = None if relations is None else set(relations)
        return [t for t in rows if wanted is None or t.relation_id in wanted]
    folder = Path(templates_dir or "data/templates")
    files = load_template_dir(folder)
    wanted = set(files) if relations is None else set(relations) & set(files)
    return [t for rid in sorted(wanted) for t in files[rid].templates]


def template_files_source(templates_dir: str | os.PathLike | None,
                          relations: list[str]) -> dict:
    """The provenance ``source`` of templates read from YAML files (``--templates-dir``): the
    folder as given and the sha256 of the file of each relation used."""
    from factprobe.core.tables import file_sha256
    folder = templates_dir or "data/templates"
    files = load_template_dir(folder)
    return {"type": "template-files", "templates_dir": str(folder),
            "files_sha256": {Path(files[r].path).name: file_sha256(files[r].path)
                             for r in sorted(set(relations) & set(files))}}
