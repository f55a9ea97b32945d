"""PopQA as its authors release it (Mallen et al., 2023, "When Not to Trust Language Models",
ACL; ``data/popQA.tsv`` of AlexTMallen/adaptive-retrieval, also akariasai/PopQA on the Hub): one
question a row, tab-separated, with the header ``id subj prop obj subj_id prop_id obj_id
s_aliases o_aliases s_uri o_uri s_wiki_title o_wiki_title s_pop o_pop question
possible_answers``.

What is kept: the Wikidata ids from ``s_uri``/``o_uri`` (``subj_id``/``obj_id``/``prop_id`` are
the authors' own numbering, kept as ``popqa_*`` columns), ``s_aliases`` as the subject's other
names, ``possible_answers`` (and ``o_aliases``) as the object's, the popularity ``s_pop`` and
``o_pop`` (monthly Wikipedia page views) and the question as fact columns. The relation is the
Wikidata property of ``prop`` (:data:`PROPERTIES`: PopQA's 16 relation types); a ``prop`` outside
it keeps its own name as the relation id.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pyarrow as pa

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.bench_files import BenchRows, bad_relation_code

RELEASE = "PopQA popQA.tsv (AlexTMallen/adaptive-retrieval; akariasai/PopQA)"
COLUMNS = ("id", "subj", "prop", "obj", "subj_id", "prop_id", "obj_id", "s_aliases",
           "o_aliases", "s_uri", "o_uri", "s_wiki_title", "o_wiki_title", "s_pop", "o_pop",
           "question", "possible_answers")
# PopQA's 16 relation types and the Wikidata properties they were sampled from.
PROPERTIES = {"occupation": "P106", "place of birth": "P19", "genre": "P136", "father": "P22",
              "country": "P17", "producer": "P162", "director": "P57", "capital of": "P1376",
              "screenwriter": "P58", "composer": "P86", "color": "P462", "religion": "P140",
              "sport": "P641", "author": "P50", "mother": "P25", "capital": "P36"}
ENTITY = "http://www.wikidata.org/entity/"
EXTRA = {"popqa_id": pa.int64(), "popqa_subj_id": pa.int64(), "popqa_prop_id": pa.int64(),
         "popqa_obj_id": pa.int64(), "s_pop": pa.int64(), "o_pop": pa.int64(),
         "s_wiki_title": pa.string(), "o_wiki_title": pa.string(), "question": pa.string()}


def _file(path: str | None) -> Path:
    p = Path(path or "").expanduser()
    if p.is_dir() and (p / "popQA.tsv").is_file():
        p = p / "popQA.tsv"
    if not path or not p.is_file():
        raise UserError(f"{path or '(no --path)'} is not a file; --source popqa reads PopQA's "
                        f"popQA.tsv (or a folder holding it)")
    return p


def _int(value: str, name: str, where: str, rows: BenchRows) -> int | None:
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or not -(1 << 63) <= number < (1 << 63):   # the column is int64
        rows.bad(where, f"field {name!r} is {value[:40]!r}, not an integer")
        return None
    return number


def _names(value: str, name: str, where: str, rows: BenchRows) -> list[str] | None:
    """A JSON list of texts (how the release writes aliases and answers)."""
    try:
        names = jsonsafe.loads(value) if value.strip() else []
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        rows.bad(where, f"field {name!r} is not a JSON list of texts")
        return None
    return names


def _qid(uri: str, name: str, where: str, rows: BenchRows) -> str | None:
    if uri.startswith(ENTITY) and uri[len(ENTITY):].startswith("Q"):
        return uri[len(ENTITY):]
    rows.bad(where, f"field {name!r} is {uri[:60]!r}, not a Wikidata entity URI")
    return None


def read_popqa(path: str, relations: list[str] | None, *, limit: int | None = None,
               skip_bad: bool = False) -> SourceResult:
    f = _file(path)
    rows = BenchRows("popqa", relations, EXTRA, limit=limit, skip_bad=skip_bad)
    csv.field_size_limit(min(sys.maxsize, 1 << 24))   # a line of 16 MB is no PopQA row
    try:
        lines, kept = _read(f, rows)
    except UnicodeDecodeError as exc:
        raise UserError(f"{f}: not UTF-8 text (byte {exc.start}); --source popqa reads "
                        f"PopQA's popQA.tsv as released") from None
    except csv.Error as exc:
        raise UserError(f"{f}: not a tab-separated file ({exc}); --source popqa reads "
                        f"PopQA's popQA.tsv as released") from None
    rows.file_read(f, lines, kept, f)
    return rows.result(f, RELEASE)


def _read(f: Path, rows: BenchRows) -> tuple[int, int]:
    lines = kept = 0
    with open(f, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None:
            raise UserError(f"{f}: an empty file; --source popqa reads PopQA's popQA.tsv as "
                            f"released (a header line, then one question a line)")
        missing = [c for c in COLUMNS if c not in (header or [])]
        if missing:
            raise UserError(f"{f}:1: the header lacks {', '.join(missing)}; --source popqa "
                            f"reads PopQA's popQA.tsv as released (header {' '.join(COLUMNS)})")
        at = {c: header.index(c) for c in COLUMNS}
        # a quoted field may hold newlines, so a record can span lines: it is named by the
        # line it starts on (where an editor finds it), not by reader.line_num, its last one
        start = reader.line_num + 1
        for record in reader:
            lines = reader.line_num
            where = f"{f}:{start}"
            start = lines + 1
            if len(record) != len(header):
                rows.bad(where, f"{len(record)} fields, the header has {len(header)}")
                continue
            r = {c: record[i] for c, i in at.items()}
            # an empty subj or obj is a fact without a label (dropped and counted by assembly)
            if bad_relation_code(r["prop"]):
                rows.bad(where, f"field 'prop' is {r['prop'][:60]!r}: empty, or holding a "
                                f"control character or '/', no relation name")
                continue
            ints = {c: _int(r[c], c, where, rows) for c in
                    ("id", "subj_id", "prop_id", "obj_id", "s_pop", "o_pop")}
            if None in ints.values():
                continue
            lists = [_names(r[c], c, where, rows) for c in
                     ("s_aliases", "o_aliases", "possible_answers")]
            ids = [_qid(r[c], c, where, rows) for c in ("s_uri", "o_uri")]
            if None in lists or None in ids:
                continue
            rid = PROPERTIES.get(r["prop"], r["prop"])
            if rows.add(rid, {
                    "subject_id": ids[0], "subject": r["subj"], "object_id": ids[1],
                    "object": r["obj"], "popqa_id": ints["id"], "popqa_subj_id": ints["subj_id"],
                    "popqa_prop_id": ints["prop_id"], "popqa_obj_id": ints["obj_id"],
                    "s_pop": ints["s_pop"], "o_pop": ints["o_pop"],
                    "s_wiki_title": r["s_wiki_title"], "o_wiki_title": r["o_wiki_title"],
                    "question": r["question"]}):
                kept += 1
                rows.relation_meta[rid] = {"label": r["prop"]}
                rows.take.alias(ids[0], lists[0])
                rows.take.alias(ids[1], lists[1] + lists[2])
    return lines, kept
