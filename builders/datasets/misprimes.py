"""Misprimes: per fact, M wrong objects of the same relation ("weakly related" negatives).

A negative is an object label of the same relation that is none of the subject's answers, so a
subject with several correct objects never gets one of them as a negative. Drawn with the
T-REx-MC builder's per-relation seeded generator, so adding a relation leaves the others' draws
unchanged. With ``type_relation``, negatives are restricted to objects that share a type with
the gold object, where the graph gives the types (an instance-of relation in a facts table).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.errors import UserError
from factprobe.builders.inputs import FACTS, FACTS_OR_MISPRIMES, InputDataset, Needs, as_input
from factprobe.core.provenance import input_of, make_provenance
from factprobe.core.tables import base_manifest, file_sha256, read_table, write_dataset
from factprobe.builders.datasets.mc import _draw_excluding, _relation_rng


@dataclass(frozen=True)
class MisprimeConfig:
    facts: InputDataset | str      # resolved by the CLI (MISPRIMES_INPUT), or a path
    out: str
    negatives: int = 5
    seed: int = 0
    type_relation: str | None = None   # e.g. P31: negatives share a type with the gold object
    types: InputDataset | str | None = None  # dataset of the type_relation facts (default: facts)
    progress: bool = True


def object_types(table: pa.Table, relation: str) -> dict[str, frozenset[str]]:
    """object_id -> its types, from the ``relation`` facts (subject_id is typed by object_id)."""
    sub = table.filter(pc.equal(table["relation_id"], relation)).select(["subject_id",
                                                                         "object_id"])
    out: dict[str, set[str]] = defaultdict(set)
    for s, o in zip(sub["subject_id"].to_pylist(), sub["object_id"].to_pylist()):
        out[s].add(o)
    return {k: frozenset(v) for k, v in out.items()}


def draw_negatives(facts: pa.Table, m: int, seed: int,
                   types: dict[str, frozenset[str]] | None = None) -> tuple[list[list[str]], dict]:
    """One list of at most ``m`` negatives per row of ``facts``, in row order, and counts.

    Fewer than ``m`` when the relation has too few other objects for that subject (counted).
    """
    rel = facts["relation_id"].to_pylist()
    subj = facts["subject_id"].to_pylist()
    obj = facts["object"].to_pylist()
    obj_id = facts["object_id"].to_pylist()
    answers = facts["answers"].to_pylist()
    fid = facts["fact_id"].to_pylist()
    # every correct label of each (relation, subject) pair, whatever row it came from
    pair_answers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r, s, o, a in zip(rel, subj, obj, answers):
        pair_answers[(r, s)].update(a or [])
        pair_answers[(r, s)].add(o)
    label_types: dict[tuple[str, str], set[str]] = defaultdict(set)
    if types is not None:
        for r, o, oid in zip(rel, obj, obj_id):
            label_types[(r, o)] |= types.get(oid, frozenset())

    out: list[list[str]] = [[] for _ in rel]
    per_relation: dict[str, dict] = {}
    order = sorted(range(len(rel)), key=lambda i: (rel[i], subj[i], obj[i], fid[i]))
    by_rel: dict[str, list[int]] = defaultdict(list)
    for i in order:
        by_rel[rel[i]].append(i)
    for rid, rows in by_rel.items():
        pool = np.array(sorted({obj[i] for i in rows}), dtype=object)
        rng = _relation_rng(seed, rid)
        sub_pools: dict[frozenset[str], np.ndarray] = {}
        short = untyped = 0
        for i in rows:
            cand = np.arange(len(pool))
            if types is not None:
                gold_types = frozenset(label_types[(rid, obj[i])])
                if not gold_types:
                    untyped += 1
                else:
                    if gold_types not in sub_pools:
                        sub_pools[gold_types] = np.array(
                            [k for k, lab in enumerate(pool)
                             if label_types[(rid, lab)] & gold_types], dtype=np.int64)
                    cand = sub_pools[gold_types]
            gold = sorted(pair_answers[(rid, subj[i])])
            at = np.searchsorted(pool, gold)
            found = {int(p) for p, g in zip(at, gold) if p < len(pool) and pool[p] == g}
            bad = np.array(sorted(found), dtype=np.int64)
            # positions within cand (sorted) of the answers it holds
            excl = np.searchsorted(cand, bad)
            inside = excl < len(cand)
            inside[inside] = cand[excl[inside]] == bad[inside]
            excl = excl[inside]
            k = min(m, len(cand) - len(excl))
            if k < m:
                short += 1
            if k <= 0:
                continue
            picked = cand[_draw_excluding(rng, len(cand), excl, k)]
            out[i] = pool[picked[rng.permutation(k)]].tolist()
        per_relation[rid] = {"facts": len(rows), "objects": int(len(pool)),
                             "short": short}
        if types is not None:
            per_relation[rid]["gold_untyped"] = untyped
    counts = {"facts": len(rel), "negatives": m, "per_relation": per_relation,
              "short": sum(v["short"] for v in per_relation.values())}
    return out, counts


def negatives_array(lists: list[list[str]]) -> pa.Array:
    return pa.array(lists, type=pa.list_(pa.string()))


# what draw_negatives reads
NEGATIVE_COLUMNS = ["fact_id", "relation_id", "subject_id", "object_id", "object", "answers"]
MISPRIMES_INPUT = Needs("--facts", FACTS_OR_MISPRIMES, columns=tuple(NEGATIVE_COLUMNS))
TYPES_INPUT = Needs("--types", FACTS, columns=("relation_id", "subject_id", "object_id"))


def build_misprimes(cfg: MisprimeConfig) -> Path:
    if cfg.negatives < 1:
        raise UserError("--negatives must be at least 1")
    if cfg.types and not cfg.type_relation:
        raise UserError("--types names the dataset of the --type-relation facts: give "
                        "--type-relation too (e.g. P31)")
    facts_input = as_input(cfg.facts, MISPRIMES_INPUT)
    folder, manifest = facts_input.folder, facts_input.manifest
    facts = read_table(folder, "facts")
    if facts.num_rows == 0:
        raise UserError(f"{facts_input.spec}/facts.parquet has no rows")
    types = types_input = None
    if cfg.type_relation:
        types_folder = folder
        types_input = as_input(cfg.types, TYPES_INPUT)
        if types_input:
            types_folder = types_input.folder
        type_table = read_table(types_folder, "facts", ["relation_id", "subject_id", "object_id"])
        types = object_types(type_table, cfg.type_relation)
        if not types:
            raise UserError(f"no {cfg.type_relation} facts in {(types_input or facts_input).spec}: build a "
                            f"facts dataset with that relation and pass it with --types")
    lists, counts = draw_negatives(facts, cfg.negatives, cfg.seed, types)
    if "negatives" in facts.column_names:
        facts = facts.drop(["negatives"])
    table = facts.append_column("negatives", negatives_array(lists))
    tables = {"facts": table}
    if (folder / "relations.parquet").exists():
        tables["relations"] = read_table(folder, "relations")
    source = {"type": "facts", "facts_dataset": manifest.get("name"),
              "facts_sha256": file_sha256(folder / "facts.parquet"),
              "facts_source": manifest.get("source", {})}
    params = {"negatives": cfg.negatives, "seed": cfg.seed, "type_relation": cfg.type_relation}
    types_record = input_of(types_input) if cfg.type_relation and types_input else None
    prov = make_provenance(inputs={"facts": input_of(facts_input), "types": types_record})
    return write_dataset(cfg.out, tables, base_manifest(Path(cfg.out).name, "misprimes", source,
                                                        params, counts, prov))
