"""EntityQuestions as its authors release it (Sciavolino et al., 2021, "Simple Entity-Centric
Questions Challenge Dense Retrievers", EMNLP; https://nlp.cs.princeton.edu/projects/
entity-questions/dataset.zip): ``dataset/{train,dev,test}/P<id>.<split>.json``, each a JSON list
of ``{"question": ..., "answers": [...]}`` (or ``.jsonl``, one such object a line, the layout the
authors' README names).

The release has no entity ids and no subject field: each relation's questions are one template
with the subject in it ("Where was Alan Turing born?"), so the template is recovered as the text
all the relation's questions share before and after the subject (cut back to a word boundary),
and the subject is what lies between. A relation with a single distinct question cannot show its
template: its rows are skipped and counted. Ids are the labels themselves (``subject_id`` the
subject, ``object_id`` the first answer); the other answers are the object's aliases. Each fact
keeps its split, its question and its position in its file (``source_index``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.bench_files import (
    TEMPLATES_HINT,
    BenchRows,
    json_lines,
    need_folder,
    text_field,
    text_list,
)
from factprobe.builders.sources.common import natural_key

RELEASE = ("EntityQuestions dataset.zip (https://nlp.cs.princeton.edu/projects/entity-questions/"
           "dataset.zip; princeton-nlp/EntityQuestions)")
SPLITS = ("train", "dev", "test")
# Files are read test first: a fact the release repeats across splits (EntityQuestions has some
# hundreds: the same question and answer in train and test) is kept once, by assembly, as its
# first row, and the test split is the benchmark every method evaluates on.
READ_ORDER = ("test", "dev", "train")
# dataset.zip ships JSON lists (.json); the authors' README names .jsonl files (one question a
# line, the repository's layout before the zip and what their utils/jsonl_to_json.py writes
# back): both are read, the .json where a folder holds both.
FILE = re.compile(r"^(P\d+)\.(train|dev|test)\.(json|jsonl)$")
EXTRA = {"question": pa.string(), "source_index": pa.int32(), "split": pa.string()}
MAX_FILE_BYTES = 1 << 30     # the largest released file is a few MB; JSON lists are read whole
# The question templates the authors publish beside the data (relation_query_templates.json of
# princeton-nlp/EntityQuestions), for checking the recovered ones: the manifest says where a
# recovered template differs from the published one.
PUBLISHED = {
    "P17": "Which country is [X] located in?",
    "P19": "Where was [X] born?",
    "P20": "Where did [X] die?",
    "P26": "Who is [X] married to?",
    "P30": "Which continent is [X] located?",
    "P36": "What is the capital of [X]?",
    "P40": "Who is [X]'s child?",
    "P50": "Who is the author of [X]?",
    "P69": "Where was [X] educated?",
    "P106": "What kind of work does [X] do?",
    "P112": "Who founded [X]?",
    "P127": "Who owns [X]?",
    "P131": "Where is [X] located?",
    "P136": "What type of music does [X] play?",
    "P159": "Where is the headquarter of [X]?",
    "P170": "Who was [X] created by?",
    "P175": "Who performed [X]?",
    "P176": "Which company is [X] produced by?",
    "P264": "What music label is [X] represented by?",
    "P276": "Where is [X] located?",
    "P407": "Which language was [X] written in?",
    "P413": "What position does [X] play?",
    "P495": "Which country was [X] created in?",
    "P740": "Where was [X] founded?",
    "P800": "What is [X] famous for?",
}


def split_files(root: Path, unread: list[str] | None = None) -> list[tuple[str, str, Path]]:
    """(relation, split, file) of the release's question files under ``root`` (``dataset/`` or
    one of its split folders), in :data:`READ_ORDER` then relation order; a ``.jsonl`` beside
    the ``.json`` of the same relation and split is not read (named in ``unread``)."""
    found: dict[tuple[str, str, Path], set[str]] = {}
    for folder in [root] + [root / s for s in SPLITS]:
        if folder.is_dir():
            for f in folder.iterdir():
                m = FILE.match(f.name)
                if m and f.is_file():
                    found.setdefault((m.group(1), m.group(2), folder), set()).add(m.group(3))
    out = []
    for (rid, split, folder), kinds in found.items():
        ext = "json" if "json" in kinds else "jsonl"
        out.append((rid, split, folder / f"{rid}.{split}.{ext}"))
        if len(kinds) == 2 and unread is not None:
            unread.append(str((folder / f"{rid}.{split}.jsonl").relative_to(root)))
    return sorted(out, key=lambda x: (READ_ORDER.index(x[1]), natural_key(x[0]), str(x[2])))


def recover_template(questions: list[str]) -> tuple[str, str] | None:
    """(text before the subject, text after it) shared by ``questions``; None when fewer than two
    distinct questions leave the subject unseen.

    >>> recover_template(["Where was Alan Turing born?", "Where was Ada Lovelace born?"])
    ('Where was ', ' born?')
    >>> recover_template(["Who is Anne's child?", "Who is Zeus's child?"])
    ('Who is ', "'s child?")
    >>> recover_template(["Where was Al born?"]) is None
    True
    """
    distinct = sorted(set(questions))
    if len(distinct) < 2:
        return None
    first, last = distinct[0], distinct[-1]   # the common prefix of all is theirs
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    prefix = first[:n]
    # The subject starts a word: cut the shared text back to its last space.
    prefix = prefix[:prefix.rfind(" ") + 1] if " " in prefix else ""
    ends = sorted(q[::-1] for q in distinct)
    first, last = ends[0], ends[-1]
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    suffix = first[:n][::-1]
    # ... and ends before a space or a mark: the suffix starts at one.
    cut = next((i for i, ch in enumerate(suffix) if not ch.isalnum()), len(suffix))
    suffix = suffix[cut:]
    if any(len(q) <= len(prefix) + len(suffix) for q in distinct):
        return None
    return prefix, suffix


def _load(f: Path, rows: BenchRows) -> list:
    if f.stat().st_size > MAX_FILE_BYTES:
        raise UserError(f"{f}: {f.stat().st_size} bytes, more than any EntityQuestions file; "
                        f"give the release's question files")
    try:
        data = jsonsafe.loads(f.read_bytes())
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{f}: not a JSON file; EntityQuestions files are a JSON list of "
                        f'{{"question", "answers"}}') from None
    if not isinstance(data, list):
        raise UserError(f"{f}: a JSON {type(data).__name__}, not a list; EntityQuestions files "
                        f'are a JSON list of {{"question", "answers"}}')
    return data


def _items(f: Path, rows: BenchRows):
    """(index, where, item) of one question file: a JSON list's items, or a .jsonl's lines
    (its index the line's place, counted from 0)."""
    if f.suffix == ".jsonl":
        for n, obj in json_lines(f, rows):
            yield n - 1, f"{f}:{n}", obj
    else:
        for i, item in enumerate(_load(f, rows)):
            yield i, f"{f}: item {i}", item


def _questions(root: Path, rows: BenchRows) -> list[tuple[str, str, Path, int, str, list]]:
    """Every well-formed question: (relation, split, file, index, question, answers)."""
    out = []
    for rid, split, f in split_files(root):
        for i, where, item in _items(f, rows):
            if not isinstance(item, dict):
                rows.bad(where, "not a JSON object")
                continue
            q = text_field(item, "question", where, rows)
            answers = text_list(item, "answers", where, rows)
            if q is None or answers is None:
                continue
            if not answers or not answers[0].strip():
                rows.bad(where, "field 'answers' " + ("is empty" if "answers" in item
                                                      else "missing"))
                continue
            out.append((rid, split, f, i, q, answers))
    return out


def read_entityquestions(path: str, relations: list[str] | None, *, limit: int | None = None,
                         skip_bad: bool = False) -> SourceResult:
    root = need_folder(path, "entityquestions", "EntityQuestions' dataset/ folder "
                       "(train/, dev/, test/ with P<id>.<split>.json)")
    if not split_files(root):
        raise UserError(f"{root} holds no P<id>.<train|dev|test>.json; --source entityquestions "
                        f"reads the release's dataset/ folder (or one of its split folders)")
    rows = BenchRows("entityquestions", relations, EXTRA, limit=limit, skip_bad=skip_bad)
    questions = _questions(root, rows)
    templates = templates_of(questions)
    kept: dict[Path, int] = {}
    splits_of: dict[tuple[str, str, str], set[str]] = {}
    for rid, split, f, i, q, answers in questions:
        shape = templates.get(rid)
        if shape is None:
            rows.take.present.add(rid)     # in the release, though none of it is imported
            rows.skip("template_not_recoverable")
            continue
        subject = q[len(shape[0]):len(q) - len(shape[1])].strip()
        if rows.add(rid, {"subject_id": subject, "subject": subject, "object_id": answers[0],
                          "object": answers[0], "question": q, "source_index": i,
                          "split": split}):
            kept[f] = kept.get(f, 0) + 1
            rows.take.alias(answers[0], answers[1:])
            splits_of.setdefault((rid, subject, answers[0]), set()).add(split)
    unread: list[str] = []
    for rid, split, f in split_files(root, unread):
        rows.file_read(f, sum(1 for x in questions if x[2] == f), kept.get(f, 0), root)
    recovered = {r: f"{p}[X]{s}" for r, (p, s) in sorted(templates.items())}
    differ = sorted(r for r, t in recovered.items() if r in PUBLISHED and PUBLISHED[r] != t)
    # facts the release has in more than one split: kept once, in the first of READ_ORDER
    several: dict[str, int] = {}
    for found in splits_of.values():
        if len(found) > 1:
            key = "+".join(s for s in READ_ORDER if s in found)
            several[key] = several.get(key, 0) + 1
    extra = {"templates": recovered, "templates_not_as_published": differ,
             "facts_in_several_splits": dict(sorted(several.items()))}
    if unread:
        extra["files_not_read"] = sorted(unread)
    return rows.result(root, RELEASE, extra)


def templates_of(questions) -> dict[str, tuple[str, str]]:
    by_rel: dict[str, list[str]] = {}
    for rid, _, _, _, q, _ in questions:
        by_rel.setdefault(rid, []).append(q)
    return {rid: t for rid, qs in by_rel.items() if (t := recover_template(qs)) is not None}


def entityquestions_templates(path: str) -> tuple[list[tuple[str, str, str]], dict]:
    """(relation, id, template) of each relation whose question template is recovered, as a
    question template (``Where was [X] born? [Y].``), and the files read."""
    root = need_folder(path, "entityquestions", "EntityQuestions' dataset/ folder")
    rows = BenchRows("entityquestions", None, {}, limit=None, skip_bad=False,
                     hint=TEMPLATES_HINT)
    found = templates_of(_questions(root, rows))
    if not found:
        raise UserError(f"{root}: no relation's question template could be recovered (each "
                        f"needs two different questions)")
    return ([(rid, "eq", f"{p}[X]{s} [Y].") for rid, (p, s) in sorted(found.items())],
            {str(f.relative_to(root)): f for _, _, f in split_files(root)})
