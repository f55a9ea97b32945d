"""BEAR as lm-pub-quiz reads it (Wiland, Ploner and Akbik, 2024, "BEAR: A Unified Framework for
Evaluating Relational Knowledge in Causal and Masked Language Models", NAACL Findings;
lm-pub-quiz/BEAR): a folder with ``metadata_relations.json`` (per relation: ``templates``,
``answer_space_labels``, ``answer_space_ids``) and one ``<code>.jsonl`` per relation (BEAR's
are ``P<id>.jsonl``; lm-pub-quiz takes any name) with ``sub_id``, ``sub_label``,
``sub_aliases``, ``obj_id``, ``obj_label`` and ``answer_idx`` (the object's place in the answer
space; a line without it is placed by its ``obj_id``, as lm-pub-quiz does).

Each fact keeps ``answer_idx`` and the relation's answer space (``answer_space``, its labels in
the published order): the multiple-choice options lm-pub-quiz poses. In BEAR every answer-space
entry is the object of some instance, so ``factprobe build mc`` draws its distractors from that
same answer space. ``relation_info.json`` beside the folder (the domains of each relation) gives
``domains``. The folder's name (``BEAR``, ``BEAR-big``) is recorded as the release.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.common import natural_key
from factprobe.builders.sources.bench_files import (
    BenchRows,
    bad_relation_code,
    json_lines,
    need_folder,
    sha256,
    text_field,
    text_list,
)

METADATA = "metadata_relations.json"
EXTRA = {"answer_idx": pa.int32(), "answer_space": pa.list_(pa.string()),
         "domains": pa.list_(pa.string())}
MAX_METADATA_BYTES = 1 << 28


class _Repeated(ValueError):
    pass


def _unique(pairs: list) -> dict:
    """An object's keys, refusing one given twice: json.loads would keep the last silently, and
    a relation named twice in metadata_relations.json has one entry too many, not a winner."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Repeated(key)
        out[key] = value
    return out


def _json_file(f: Path, what: str) -> dict:
    if f.stat().st_size > MAX_METADATA_BYTES:
        raise UserError(f"{f}: {f.stat().st_size} bytes, far more than any {what}")
    try:
        data = jsonsafe.loads(f.read_bytes(),
                              decode=lambda b: json.loads(b, object_pairs_hook=_unique))
    except _Repeated as exc:
        raise UserError(f"{f}: the key {exc.args[0]!r} is given twice in one object; keep one "
                        f"entry per relation") from None
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{f}: not a JSON file; give BEAR's {what} as released") from None
    if not isinstance(data, dict):
        raise UserError(f"{f}: a JSON {type(data).__name__}, not an object keyed by relation")
    return data


def metadata(root: Path) -> dict[str, dict]:
    """metadata_relations.json, each relation's entry checked: templates (texts), and
    answer_space_labels and answer_space_ids (texts, of one length) when it has them (BEAR's
    has; BEAR-big's holds templates only)."""
    f = root / METADATA
    if not f.is_file():
        raise UserError(f"{root} has no {METADATA}; --source bear reads a BEAR folder "
                        f"(lm-pub-quiz's format: {METADATA} and P<id>.jsonl)")
    data = _json_file(f, METADATA)
    for rid, entry in data.items():
        _check_code(rid, f"{f}: relation {rid!r}")
        where = f"{f}: relation {rid}"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: not a JSON object")
        given = [k for k in ("answer_space_labels", "answer_space_ids") if k in entry]
        if len(given) == 1:
            # lm-pub-quiz (answer_space_from_metadata) warns and works the answer space out
            # from the instances, ignoring the lone field: so does read_bear, naming the
            # relation (answer_space_incomplete); its texts are not checked, they are not read
            given = []
        for key in ("templates", *given):
            value = entry.get(key)
            if not isinstance(value, list) or not value or not all(
                    isinstance(x, str) and x for x in value):
                raise UserError(f"{where}: field {key!r} is not a non-empty list of texts")
        if given and len(entry["answer_space_labels"]) != len(entry["answer_space_ids"]):
            raise UserError(f"{where}: answer_space_labels has {len(entry['answer_space_labels'])}"
                            f" entries, answer_space_ids {len(entry['answer_space_ids'])}")
    return data


def read_bear(path: str, relations: list[str] | None, *, limit: int | None = None,
              skip_bad: bool = False) -> SourceResult:
    root = need_folder(path, "bear", f"a BEAR folder ({METADATA} and P<id>.jsonl)")
    meta = metadata(root)
    info_file = root.parent / "relation_info.json"
    info = _json_file(info_file, "relation_info.json") if info_file.is_file() else {}
    rows = BenchRows("bear", relations, EXTRA, limit=limit, skip_bad=skip_bad)
    files = instance_files(root)
    derived: list[str] = []
    incomplete: list[str] = []
    # The released BEAR-big names P414 in its metadata but ships no P414.jsonl: a relation
    # without instances is counted and named, not refused; a file the metadata does not name
    # gets the answer space of its objects, like BEAR-big's relations.
    # (named and counted only when asked for: --relations P19 leaves nothing of P414 out)
    asked = set(rows.take.wanted) if rows.take.wanted is not None else None
    no_file = [r for r in meta if r not in files]
    no_meta = [r for r in files if r not in meta]
    for rid in no_file:
        rows.take.present.add(rid)
        if asked is None or rid in asked:
            rows.skip("relations_without_instance_file")
    for rid in [r for r in meta if r in files] + no_meta:
        f = files[rid]
        entry = meta.get(rid, {})
        domains = (info.get(rid) or {}).get("domains") if isinstance(info.get(rid), dict) else None
        domains = [d for d in domains if isinstance(d, str)] if isinstance(domains, list) else []
        lines, parsed = _instances(f, rows)
        if "answer_space_ids" in entry and "answer_space_labels" in entry:
            space_ids, space = entry["answer_space_ids"], entry["answer_space_labels"]
        else:   # BEAR-big: the relation's distinct objects, in the order they first appear
            if _lone_answer_space_field(entry):
                incomplete.append(rid)
            derived.append(rid)
            first: dict[str, str] = {}
            for p in parsed:
                first.setdefault(p[1][2], p[1][3])
            space_ids, space = list(first), list(first.values())
        place = {i: k for k, i in enumerate(space_ids)}
        kept = 0
        for where, vals, aliases, idx in parsed:
            if idx is None:
                # lm-pub-quiz reads a line without answer_idx by its obj_id's place in the
                # answer space (Relation.load_instance_table joins on obj_id): so does this.
                idx = place.get(vals[2])
                if idx is None:
                    rows.bad(where, f"field 'obj_id' {vals[2]!r} is not in the relation's "
                                    f"answer space, and the line has no answer_idx")
                    continue
            if not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < len(space):
                rows.bad(where, f"field 'answer_idx' is {idx!r}, not a place in the answer "
                                f"space of {len(space)}")
                continue
            if space_ids[idx] != vals[2]:
                rows.bad(where, f"field 'answer_idx' {idx} points to {space_ids[idx]}, not the "
                                f"obj_id {vals[2]}")
                continue
            if rows.add(rid, {"subject_id": vals[0], "subject": vals[1], "object_id": vals[2],
                              "object": vals[3], "answer_idx": idx, "answer_space": space,
                              "domains": domains}):
                kept += 1
                rows.take.alias(vals[0], aliases)
        rows.file_read(f, lines, kept, root)
    rows.files[METADATA] = {"sha256": sha256(root / METADATA)}
    if info:
        rows.files["../relation_info.json"] = {"sha256": sha256(info_file)}
    noted = {k: [r for r in v if asked is None or r in asked] for k, v in {
        "answer_space_derived": derived, "answer_space_incomplete": incomplete,
        "relations_without_instance_file": no_file, "relations_without_metadata": no_meta}.items()}
    return rows.result(root, f"BEAR folder {root.name} (lm-pub-quiz/BEAR)",
                       {k: v for k, v in noted.items() if v})


def _lone_answer_space_field(entry: dict) -> bool:
    """One of answer_space_labels / answer_space_ids without the other, or lm-pub-quiz's older
    ``answer_space``: the metadata meant an answer space and gave too little of it."""
    given = {"answer_space_labels", "answer_space_ids", "answer_space"} & set(entry)
    return bool(given) and given != {"answer_space_labels", "answer_space_ids"} and not (
        {"answer_space_labels", "answer_space_ids"} <= given)


def instance_files(root: Path) -> dict[str, Path]:
    """relation code -> its instance file, as lm-pub-quiz finds them (``Relation.search_path``:
    any file name is a relation code, ``example_1.jsonl`` as well as BEAR's ``P19.jsonl``), in
    natural order: every ``*.jsonl`` of the folder, and every Parquet instance table
    (``<code>.parquet`` or ``<code>.parquet.<compression>``: what lm-pub-quiz's
    ``save_instance_table`` writes and ``load_instance_table`` reads, the code being the name up
    to its first dot, ``true_stem``); other files (README, ``metadata.json``,
    ``bear_lite_indices.json``) are not relations. A relation in two files is refused:
    lm-pub-quiz warns and reads whichever the folder lists first, which no import should guess."""
    found: dict[str, Path] = {}
    for f in sorted((f for f in root.iterdir() if f.is_file()), key=lambda f: f.name):
        if f.name.endswith(".jsonl"):
            code = f.name[:-len(".jsonl")]
        elif _parquet_name(f.name):
            code = f.name.partition(".")[0]
        else:
            continue
        _check_code(code, f"{root}: the file {f.name!r}")
        if code in found:
            raise UserError(f"{root}: relation {code} has two instance files, "
                            f"{found[code].name} and {f.name}; keep one")
        found[code] = f
    return {c: found[c] for c in sorted(found, key=lambda c: natural_key(found[c].name))}


def _parquet_name(name: str) -> bool:
    """``P19.parquet``, ``P19.parquet.gzip``: lm-pub-quiz's ``fmt[0] == "parquet" and
    len(fmt) <= 2`` on the name's suffixes after its first dot."""
    suffixes = name.partition(".")[2].split(".")
    return suffixes[0] == "parquet" and len(suffixes) <= 2 and all(suffixes)


def _check_code(code: str, where: str) -> None:
    """lm-pub-quiz takes any file name as a relation code; a newline or a tab in one would break
    every table the relation appears in (:func:`bad_relation_code`)."""
    if bad_relation_code(code):
        raise UserError(f"{where}: relation code {code!r} is empty, holds a control character "
                        f"or '/'; rename it (BEAR's are Wikidata property ids such as P19)")


def _instances(f: Path, rows: BenchRows) -> tuple[int, list]:
    """(lines, [(where, (sub_id, sub_label, obj_id, obj_label), sub_aliases, answer_idx)]) of
    one relation file's well-formed lines."""
    lines, out = 0, []
    parquet = _parquet_name(f.name)
    for n, obj in (_parquet_rows(f) if parquet else json_lines(f, rows)):
        lines = n
        where = f"{f}: row {n}" if parquet else f"{f}:{n}"
        vals = [text_field(obj, k, where, rows, label=k.endswith("label")) for k in
                ("sub_id", "sub_label", "obj_id", "obj_label")]
        aliases = text_list(obj, "sub_aliases", where, rows)
        if None in vals or aliases is None:
            continue
        out.append((where, vals, aliases, obj.get("answer_idx")))
    return lines, out


def _parquet_rows(f: Path) -> Iterator[tuple[int, dict]]:
    """(row number from 1, row) of a Parquet instance table, as lm-pub-quiz's pd.read_parquet
    gives them. pandas writes an integer column holding a null as floats (answer_idx 3.0, NaN):
    a whole float is that integer and NaN no answer_idx (placed by obj_id), as for a JSON line
    without the field."""
    try:
        table = pq.read_table(f)
    except (pa.ArrowException, OSError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(f"{f}: not a Parquet file ({first}); give lm-pub-quiz's instance table "
                        f"as it writes one") from None
    n = 0
    for batch in table.to_batches(max_chunksize=4096):
        for row in batch.to_pylist():
            n += 1
            idx = row.get("answer_idx")
            if isinstance(idx, float):
                row["answer_idx"] = None if math.isnan(idx) else int(idx) if idx.is_integer() \
                    else idx
            if "answer_idx" in row and row["answer_idx"] is None:
                del row["answer_idx"]
            yield n, row


def bear_templates(path: str) -> tuple[list[tuple[str, str, str]], dict]:
    """(relation, id, template) of every template of metadata_relations.json, in its order."""
    root = need_folder(path, "bear", f"a BEAR folder ({METADATA})")
    meta = metadata(root)
    return ([(rid, f"b{i}", t) for rid, entry in meta.items()
             for i, t in enumerate(entry["templates"], start=1)], {METADATA: root / METADATA})
