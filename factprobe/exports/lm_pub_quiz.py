"""``factprobe export lm-pub-quiz``: a dataset in the layout of lm-pub-quiz and its BEAR probe
(Wiland, Ploner and Akbik, 2024, arXiv:2404.04113), which ranks a relation's whole answer
space by the log-likelihood of each filled-in template sentence.

The folder::

    <code>.jsonl               one instance a line: sub_id, sub_label, sub_aliases, obj_id,
                               obj_label, fact_id (code: the relation id made file-safe);
                               <code>.parquet with --format parquet
    metadata_relations.json    per code: templates ([X] the subject, [Y] the answer),
                               answer_space_labels, answer_space_ids, and relation_id,
                               template_ids (kept by lm-pub-quiz as relation info)
    factprobe_export.json      what was exported, from what, and the files (the marker)

A relation's answer space is its distinct objects (by label, in sorted order, the pool
ZP-LKE draws on), every instance's object among them; its templates are the relation's
statements and questions with [X] and [Y] (not the true-or-false checks), in file order.

lm-pub-quiz reads JSON lines with pandas, which turns a column of number-like strings into
numbers: an id that reads as a number (a year's object id is the year) is written
``literal:<id>``, so that ids still match the answer space; a relation whose subject labels all
read as numbers needs ``--format parquet``, which keeps every string as it is.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder
from factprobe.core.tables import write_parquet
from factprobe.exports.files import jsonl, need_rows, safe_name, test_facts, write_marker

METADATA_FILE = "metadata_relations.json"   # the name lm-pub-quiz reads
COLUMNS = ("fact_id", "relation_id", "subject_id", "object_id", "subject", "object")


@dataclass(frozen=True)
class PubQuizExport:
    dataset: str
    out: str
    templates: str = "data/templates"
    split: str = "test"             # test | all: which facts become instances
    fmt: str = "jsonl"              # jsonl (BEAR's) | parquet
    relations: tuple[str, ...] | None = None
    limit: int | None = None


def relation_codes(relation_ids: list[str]) -> dict[str, str]:
    """File-safe codes, unique (lm-pub-quiz reads the code from the file name up to its
    first dot, so a code has none).

    >>> relation_codes(["rel:a", "rel_a", "P19"])
    {'P19': 'P19', 'rel:a': 'rel_a', 'rel_a': 'rel_a_2'}
    """
    out, used = {}, set()
    for rid in sorted(relation_ids):
        code, k = safe_name(rid), 1
        while code in used:
            k += 1
            code = f"{safe_name(rid)}_{k}"
        used.add(code)
        out[rid] = code
    return out


def answer_space(facts: pd.DataFrame) -> tuple[list[str], list[str], dict[str, str]]:
    """(labels, ids, label -> id) of one relation's distinct objects, sorted by label; an
    object label with several ids keeps the smallest.

    >>> f = pd.DataFrame({"object": ["Paris", "Lima", "Paris"], "object_id": ["p2", "l", "p1"]})
    >>> answer_space(f)[:2]
    (['Lima', 'Paris'], ['l', 'p1'])
    """
    pairs = facts[["object", "object_id"]].astype(str).drop_duplicates()
    first = pairs.sort_values(["object", "object_id"]).drop_duplicates("object")
    ids = dict(zip(first["object"], first["object_id"]))
    return list(ids), list(ids.values()), ids


def _numeric(text: str) -> bool:
    """Whether pandas' JSON reader would read ``text`` as a number.

    >>> _numeric("1922"), _numeric("1e3"), _numeric("nan"), _numeric("Q90")
    (True, True, True, False)
    """
    try:
        float(text)
    except ValueError:
        return False
    return True


def file_id(entity_id: str, fmt: str) -> str:
    """The id as written: in JSON lines, one that reads as a number is prefixed ``literal:``.

    >>> file_id("1922", "jsonl"), file_id("1922", "parquet"), file_id("ent:paris", "jsonl")
    ('literal:1922', '1922', 'ent:paris')
    """
    return f"literal:{entity_id}" if fmt == "jsonl" and _numeric(entity_id) else entity_id


def _aliases(value) -> list[str]:
    return [str(a) for a in value] if value is not None and len(value) else []


def export_lm_pub_quiz(cfg: PubQuizExport) -> str:
    from factprobe.builders.inputs import open_input
    from factprobe.core.tables import read_table
    from factprobe.probes.engine.runner import select_facts
    from factprobe.probes.methods.templates_in import load_templates

    folder = open_input(cfg.dataset)
    facts = read_table(folder, "facts").to_pandas()
    missing = [c for c in COLUMNS if c not in facts.columns]
    if missing:
        raise UserError(f"{cfg.dataset}'s facts table lacks {', '.join(missing)}; export a "
                        f"dataset built by 'factprobe build facts' or 'build mc'")
    everything = select_facts(facts, cfg.relations, None)   # the answer spaces ignore --limit
    facts = select_facts(facts, cfg.relations, cfg.limit)
    by_rel: dict[str, list] = {}
    for t in load_templates(cfg.templates):
        if t.style != "check" and "[X]" in t.template and "[Y]" in t.template:
            by_rel.setdefault(t.relation_id, []).append(t)
    chosen = test_facts(facts) if cfg.split == "test" else pd.Series(True, index=facts.index)
    codes = relation_codes(sorted(facts["relation_id"].unique()))
    metadata, files, skipped = {}, {}, {}
    for rid, code in codes.items():
        rel = facts[facts["relation_id"] == rid]
        if rid not in by_rel:
            skipped[rid] = "no template with [X] and [Y]"
            continue
        labels, ids, id_of = answer_space(everything[everything["relation_id"] == rid])
        rows = [{"sub_id": file_id(str(r.subject_id), cfg.fmt), "sub_label": r.subject,
                 "sub_aliases": _aliases(getattr(r, "subject_aliases", None)),
                 "obj_id": file_id(id_of[str(r.object)], cfg.fmt), "obj_label": r.object,
                 "fact_id": r.fact_id}
                for r in rel[chosen.loc[rel.index]].itertuples(index=False)]
        if not rows:
            skipped[rid] = "no test facts"
            continue
        if cfg.fmt == "jsonl" and all(_numeric(str(r["sub_label"])) for r in rows):
            raise UserError(f"relation {rid}: every subject label reads as a number, which "
                            f"lm-pub-quiz's JSON-lines reader would turn into one; pass "
                            f"--format parquet")
        files[f"{code}.{cfg.fmt}"] = rows
        metadata[code] = {"relation_id": rid, "template_ids": [t.template_id for t in by_rel[rid]],
                          "templates": [t.template for t in by_rel[rid]],
                          "answer_space_labels": labels,
                          "answer_space_ids": [file_id(i, cfg.fmt) for i in ids]}
    need_rows(files, cfg.dataset, "relations with templates and facts")
    instances = sum(len(rows) for rows in files.values())
    info = {"dataset": cfg.dataset, "templates": cfg.templates, "split": cfg.split,
            "instance_format": cfg.fmt,
            "relations": {code: m["relation_id"] for code, m in metadata.items()},
            "instances": instances, "skipped_relations": skipped}
    with atomic_folder(cfg.out, "export", flag="OUT") as tmp:
        for name, rows in files.items():
            if cfg.fmt == "jsonl":
                (tmp / name).write_text(jsonl(rows), encoding="utf-8")
            else:
                write_parquet(pa.Table.from_pylist(rows), tmp / name)
        (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2, ensure_ascii=False)
                                         + "\n", encoding="utf-8")
        write_marker(tmp, "lm-pub-quiz", info)
    note = (f"; skipped {', '.join(f'{r} ({why})' for r, why in skipped.items())}"
            if skipped else "")
    return (f"wrote {cfg.out}: {len(metadata)} relations, {instances} instances for "
            f"lm_pub_quiz.Dataset.from_path{note}")
