"""T-REx-MC: multiple-choice questions from a facts table (ZP-LKE paper, Sec. 4 and App. A.2).

Per kept relation, ``train`` + ``test`` subject-relation pairs are drawn; each becomes one row
whose gold is one of the pair's answers and whose ``choices`` hold the gold once plus
``choices - 1`` distractors drawn from the relation's other object labels, never another answer
of the same subject. One row per pair, so a subject never appears twice with two golds.

Everything runs on dictionary codes (integers) rather than strings: it keeps ten million facts
within a few GB and makes grouping a sort instead of a hash of Python objects.
"""
from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from factprobe.core.errors import UserError
from factprobe.builders.inputs import FACTS, InputDataset, Needs, as_input
from factprobe.core.provenance import input_of, make_provenance
from factprobe.core.tables import (
    RELATIONS_SCHEMA,
    base_manifest,
    file_sha256,
    parquet_errors,
    read_table,
    write_dataset,
)


@dataclass(frozen=True)
class MCConfig:
    facts: InputDataset | str      # resolved by the CLI (MC_INPUT), or a path
    out: str
    choices: int = 100
    min_facts: int = 500
    min_objects: int = 100
    train: int = 100
    test: int = 400
    seed: int = 0
    exclude_relations: tuple[str, ...] = ()
    # The paper standardises partial matches ("French language" -> "French"); a label ending in
    # one of these suffixes is mapped to its stem when the stem is an object of the same relation.
    strip_suffixes: tuple[str, ...] = (" language",)
    # A list column of the facts whose values are each row's options, as published (BEAR's
    # answer_space: lm-pub-quiz poses a relation's whole answer space, Wiland et al., 2024),
    # instead of ``choices - 1`` drawn distractors; None: the paper's drawn ones.
    choices_from: str | None = None
    progress: bool = True

    def manifest_params(self) -> dict:
        p = asdict(self)
        for k in ("facts", "out", "progress"):
            p.pop(k)
        p["exclude_relations"] = list(self.exclude_relations)
        p["strip_suffixes"] = list(self.strip_suffixes)
        if self.choices_from is None:   # the manifests of builds without it keep their bytes
            p.pop("choices_from")
        return p


def _codes(col: pa.ChunkedArray, labels: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    enc = pc.dictionary_encode(col).combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, (np.asarray(enc.dictionary.to_pylist(), dtype=object) if labels else None)


def _take_rows(path: Path, rows: np.ndarray) -> pa.Table:
    """The given rows of a Parquet file, reading one row group at a time.

    Only three narrow columns are needed to choose the rows; reading the whole table (aliases,
    evidence text) for a few thousand picked rows would multiply peak memory on T-REx sizes.
    """
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    parts = []
    start = 0
    with parquet_errors(path):  # a damaged row group shows only when it is read
        pf = pq.ParquetFile(path)
        for g in range(pf.num_row_groups):
            n = pf.metadata.row_group(g).num_rows
            lo, hi = np.searchsorted(sorted_rows, [start, start + n])
            if hi > lo:
                parts.append(pf.read_row_group(g).take(pa.array(sorted_rows[lo:hi] - start)))
            start += n
    table = pa.concat_tables(parts)
    return table.take(pa.array(np.argsort(order, kind="stable")))


def _normalise(r: np.ndarray, o: np.ndarray, labels: np.ndarray,
               suffixes: tuple[str, ...]) -> tuple[np.ndarray, int]:
    """Map object codes whose label is ``stem + suffix`` to the stem's code, per relation."""
    if not suffixes:
        return o, 0
    code_of = {lab: i for i, lab in enumerate(labels)}
    stem_code = np.full(len(labels), -1, dtype=np.int64)
    for i, lab in enumerate(labels):
        for suf in suffixes:
            if lab.endswith(suf) and lab[: -len(suf)] in code_of:
                stem_code[i] = code_of[lab[: -len(suf)]]
                break
    if (stem_code < 0).all():
        return o, 0
    n_obj = len(labels)
    present = set(np.unique(r * n_obj + o).tolist())  # (relation, object) pairs that exist
    cand = np.flatnonzero(stem_code[o] >= 0)
    keep = np.fromiter(((r[i] * n_obj + stem_code[o[i]]) in present for i in cand), dtype=bool,
                       count=len(cand))
    o = o.copy()
    o[cand[keep]] = stem_code[o[cand[keep]]]
    return o, int(keep.sum())


def _relation_rng(seed: int, relation_id: str) -> np.random.Generator:
    # Seeded per relation, so adding or dropping one relation leaves the others' rows unchanged.
    return np.random.default_rng([seed, zlib.crc32(relation_id.encode("utf-8"))])


def _draw_excluding(rng: np.random.Generator, pool_size: int, excluded: np.ndarray, k: int
                    ) -> np.ndarray:
    """k distinct ints from range(pool_size) minus the sorted ``excluded`` ints.

    Draws from the shrunken range and shifts each draw past the excluded positions, so no
    rejection loop is needed however many answers a subject has.
    """
    v = np.sort(rng.choice(pool_size - len(excluded), size=k, replace=False))
    shifted = excluded - np.arange(len(excluded))
    return v + np.searchsorted(shifted, v, side="right")


@dataclass(frozen=True)
class RelationShape:
    """What decides whether a relation makes an MC set: its facts (distinct subject-object
    label pairs), distinct objects, and the number of answers of each subject-relation pair."""
    facts: int
    objects: int
    pair_answers: np.ndarray

    def eligible(self, choices: int) -> int:
        """Pairs that leave ``choices - 1`` distractors (objects that are not their answers).

        >>> RelationShape(5, 4, np.array([1, 1, 2, 3])).eligible(3)
        3
        """
        return int(np.count_nonzero(self.objects - self.pair_answers >= choices - 1))

    def why_dropped(self, cfg: MCConfig) -> str | None:
        """Why ``build mc`` with ``cfg`` leaves the relation out; None when it keeps it."""
        if self.facts < cfg.min_facts:
            return f"{self.facts} facts < min_facts {cfg.min_facts}"
        if self.objects < max(cfg.min_objects, cfg.choices):
            return (f"{self.objects} distinct objects < "
                    f"{'min_objects' if cfg.min_objects >= cfg.choices else 'choices'} "
                    f"{max(cfg.min_objects, cfg.choices)}")
        eligible, need = self.eligible(cfg.choices), cfg.train + cfg.test
        if eligible < need:
            return (f"{eligible} subject-relation pairs with enough distractors "
                    f"< train + test {need}")
        return None


@dataclass(frozen=True)
class _Grouped:
    """Fact rows as codes, de-duplicated and sorted by (relation, subject, object label), with
    the bounds of each subject-relation pair and each relation."""
    order: np.ndarray
    rs: np.ndarray
    os_: np.ndarray
    pair_bounds: np.ndarray
    rel_bounds: np.ndarray
    rel_names: np.ndarray
    obj_labels: np.ndarray
    normalised: int


def _group(slim: pa.Table, suffixes: tuple[str, ...]) -> _Grouped:
    """``slim`` has relation_id, subject_id and object."""
    r, rel_names = _codes(slim["relation_id"])
    s, _ = _codes(slim["subject_id"], labels=False)
    o_raw, obj_labels = _codes(slim["object"])
    o, normalised = _normalise(r, o_raw, obj_labels, suffixes)
    del o_raw

    # Sort by (relation, subject, object label); keep one row per distinct triple of labels.
    order = np.lexsort((o, s, r))
    rs, ss, os_ = r[order], s[order], o[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (rs[1:] != rs[:-1]) | (ss[1:] != ss[:-1]) | (os_[1:] != os_[:-1])
    order, rs, ss, os_ = order[first], rs[first], ss[first], os_[first]
    pair_start = np.ones(len(order), dtype=bool)
    pair_start[1:] = (rs[1:] != rs[:-1]) | (ss[1:] != ss[:-1])
    pair_bounds = np.append(np.flatnonzero(pair_start), len(order))
    rel_bounds = np.append(np.flatnonzero(np.r_[True, rs[1:] != rs[:-1]]), len(order))
    return _Grouped(order, rs, os_, pair_bounds, rel_bounds, rel_names, obj_labels,
                    normalised)


def relation_shapes(slim: pa.Table, strip_suffixes: tuple[str, ...] = MCConfig.strip_suffixes
                    ) -> dict[str, RelationShape]:
    """Each relation's :class:`RelationShape` as ``build mc`` sees it (``slim``: a facts table
    with relation_id, subject_id and object), for sizing the MC settings before a build."""
    if slim.num_rows == 0:
        return {}
    g = _group(slim, strip_suffixes)
    shapes = {}
    for lo, hi in zip(g.rel_bounds[:-1], g.rel_bounds[1:]):
        pb = g.pair_bounds[(g.pair_bounds >= lo) & (g.pair_bounds <= hi)]
        shapes[str(g.rel_names[g.rs[lo]])] = RelationShape(
            int(hi - lo), len(np.unique(g.os_[lo:hi])), np.diff(pb))
    return shapes


# what the builder reads (every other column of a fact row is carried along as it is)
MC_COLUMNS = ["fact_id", "relation_id", "subject_id", "object", "answers", "split"]
MC_INPUT = Needs("--facts", FACTS, columns=tuple(MC_COLUMNS))


def build_mc(cfg: MCConfig) -> Path:
    if cfg.choices < 2:
        raise UserError("--choices must be at least 2")
    if cfg.test < 1:
        raise UserError("--test must be at least 1: the test rows are what a probe scores")
    facts_input = as_input(cfg.facts, MC_INPUT)
    folder, facts_manifest = facts_input.folder, facts_input.manifest
    cfg = replace(cfg, facts=str(folder))
    facts_path = Path(cfg.facts) / "facts.parquet"
    slim = read_table(cfg.facts, "facts", ["relation_id", "subject_id", "object"])
    if slim.num_rows == 0:
        raise UserError(f"{facts_path} has no rows")
    from_col = cfg.choices_from
    if from_col:
        from factprobe.builders.datasets.mc_options import check_options_column
        check_options_column(cfg.facts, from_col)

    # published options are already in the labels' form: no suffix to strip towards them
    g = _group(slim, () if from_col else cfg.strip_suffixes)
    del slim
    order, rs, os_, obj_labels = g.order, g.rs, g.os_, g.obj_labels
    pair_bounds, rel_bounds, rel_names = g.pair_bounds, g.rel_bounds, g.rel_names

    excluded = set(cfg.exclude_relations)
    unknown = excluded - set(rel_names.tolist())
    if unknown:
        raise UserError(f"--exclude-relations names relations not in the facts: "
                        f"{', '.join(sorted(unknown))}")
    picked_rows: list[np.ndarray] = []
    picked_gold: list[np.ndarray] = []
    picked_split: list[np.ndarray] = []
    picked_choices: list[list[np.ndarray]] = []
    picked_answers: list[list[np.ndarray]] = []
    kept: dict[str, dict] = {}
    dropped: dict[str, str] = {}
    need = cfg.train + cfg.test
    for lo, hi in zip(rel_bounds[:-1], rel_bounds[1:]):
        rid = str(rel_names[rs[lo]])
        n_facts = int(hi - lo)
        pool = np.unique(os_[lo:hi])
        if rid in excluded:
            dropped[rid] = "excluded by --exclude-relations"
            continue
        pb = pair_bounds[(pair_bounds >= lo) & (pair_bounds <= hi)]
        sizes = np.diff(pb)
        if from_col:    # every pair has its options; a relation with fewer keeps them all
            from factprobe.builders.datasets.mc_options import why_dropped_from
            why = why_dropped_from(n_facts, len(pool), cfg)
            eligible = np.arange(len(sizes))
        else:
            why = RelationShape(n_facts, len(pool), sizes).why_dropped(cfg)
            eligible = np.flatnonzero(len(pool) - sizes >= cfg.choices - 1)
        if why:
            dropped[rid] = why
            continue
        rng = _relation_rng(cfg.seed, rid)
        chosen = eligible[rng.permutation(len(eligible))[:need]]
        for rank, p in enumerate(chosen):
            a_lo, a_hi = pb[p], pb[p + 1]
            answers = os_[a_lo:a_hi]  # sorted object codes of this pair
            gold_at = a_lo + (rng.integers(a_hi - a_lo) if a_hi - a_lo > 1 else 0)
            if from_col:
                choices = None      # the row's own options, read with its row below
            else:
                answer_pos = np.searchsorted(pool, answers)
                distractors = pool[_draw_excluding(rng, len(pool), answer_pos,
                                                   cfg.choices - 1)]
                choices = np.append(distractors, os_[gold_at])[rng.permutation(cfg.choices)]
            picked_rows.append(order[gold_at])
            picked_gold.append(os_[gold_at])
            picked_split.append(0 if rank < cfg.train else 1)
            picked_choices.append(choices)
            picked_answers.append(answers)
        n_train = min(cfg.train, len(chosen))   # fewer only with --choices-from
        kept[rid] = {"facts": n_facts, "objects": int(len(pool)), "pairs": int(len(sizes)),
                     "eligible_pairs": int(len(eligible)), "train": n_train,
                     "test": int(len(chosen)) - n_train}

    if not kept:
        raise UserError(f"no relation qualifies for multiple choice (min_facts {cfg.min_facts}, "
                        f"min_objects {cfg.min_objects}, choices {cfg.choices}, train+test "
                        f"{need}); why: " + "; ".join(f"{k}: {v}" for k, v in sorted(dropped.items())))

    base = _take_rows(facts_path, np.array(picked_rows, dtype=np.int64))
    chance = 1.0 / cfg.choices
    if from_col:
        from factprobe.builders.datasets.mc_options import published_options
        picked_choices, chance = published_options(base, from_col, obj_labels[picked_gold],
                                                   [obj_labels[a] for a in picked_answers])
    table = _mc_table(base, obj_labels, np.array(picked_gold),
                      np.array(picked_split), picked_choices, picked_answers)
    if (Path(cfg.facts) / "relations.parquet").exists():
        relations = read_table(cfg.facts, "relations")
    else:  # a facts table made outside factprobe may come alone
        relations = pa.table({"relation_id": sorted(kept), "label": sorted(kept),
                              "description": [""] * len(kept), "object_type": [""] * len(kept),
                              "iri": [""] * len(kept)}, schema=RELATIONS_SCHEMA)
    relations = relations.filter(pc.is_in(relations["relation_id"],
                                          value_set=pa.array(sorted(kept))))
    manifest = base_manifest(
        Path(cfg.out).name, "mc",
        {"type": "facts", "facts_dataset": facts_manifest.get("name"),
         "facts_sha256": file_sha256(facts_path),
         "facts_source": facts_manifest.get("source", {})},
        cfg.manifest_params(),
        {"rows": table.num_rows, "relations": len(kept), "per_relation": kept,
         "dropped_relations": dropped, "objects_normalised": g.normalised,
         "chance": chance},
        make_provenance(inputs={"facts": input_of(facts_input)}))
    return write_dataset(cfg.out, {"facts": table, "relations": relations}, manifest)


def _mc_table(base: pa.Table, labels: np.ndarray, gold: np.ndarray,
              split: np.ndarray, choices: list[np.ndarray], answers: list[np.ndarray]) -> pa.Table:
    """``base`` holds the picked fact rows, in the order of the other arguments; ``choices``
    are object codes per row, or (--choices-from) the rows' options as an Arrow list array."""
    if isinstance(choices, pa.Array):
        choice_arr = choices
    else:
        n_choices = len(choices[0])
        choice_arr = pa.ListArray.from_arrays(
            pa.array(np.arange(0, n_choices * len(choices) + 1, n_choices), type=pa.int32()),
            pa.array(labels[np.concatenate(choices)].tolist(), type=pa.string()))
    ans_offsets = np.concatenate([[0], np.cumsum([len(a) for a in answers])])
    answer_arr = pa.ListArray.from_arrays(
        pa.array(ans_offsets, type=pa.int32()),
        pa.array(labels[np.concatenate(answers)].tolist(), type=pa.string()))
    base = base.set_column(base.schema.get_field_index("object"), "object",
                           pa.array(labels[gold].tolist(), type=pa.string()))
    base = base.set_column(base.schema.get_field_index("answers"), "answers", answer_arr)
    base = base.set_column(base.schema.get_field_index("split"), "split",
                           pa.array(np.where(split == 0, "train", "test").tolist(), pa.string()))
    base = base.append_column("choices", choice_arr)
    order = pc.sort_indices(base, sort_keys=[("relation_id", "ascending"),
                                             ("split", "descending"),  # train before test
                                             ("subject_id", "ascending"),
                                             ("fact_id", "ascending")])
    return base.take(order)
