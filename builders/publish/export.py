"""A built dataset folder <-> the Hugging Face Hub layout.

Hub layout (what ``factprobe publish`` uploads, and ``--dry-run`` writes)::

    README.md                                  the dataset card (YAML configs + body)
    dataset.json                               the build manifest, byte for byte
    factprobe_layout.json                      how to turn the split files back into tables
    data/<table>/<split>-00000-of-00001.parquet

One config per table, splits from the ``split`` column. Each split file keeps the built table's
row order; ``factprobe_layout.json`` records the runs of split values in the original table
(T-REx-MC interleaves ``train`` and ``test`` per relation), so the tables come back exactly.
"""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder, stamp
from factprobe.core.tables import (
    dumps_json,
    factprobe_version,
    file_sha256,
    parquet_errors,
    read_manifest,
    read_table,
    write_parquet,
)
from factprobe.builders.publish.card import CardOptions, RepoVersion, render_card
from factprobe.builders.publish.layout import LAYOUT_FILE, LAYOUT_FORMAT

UNSPLIT = "unsplit"  # rows with an empty split in a table that also has train/test rows
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")  # what the Hub and `datasets` accept as a split name


def split_runs(table: pa.Table, whole: str = "train"
               ) -> tuple[list[tuple[str, pa.Table]], list[list], bool]:
    """The table's splits in order of first appearance, the runs of consecutive rows with the
    same split (``[[split, n], ...]``), and whether an empty split column became one split.
    A table without splits is one split named ``whole``.

    >>> t = pa.table({"x": [1, 2, 3, 4], "split": ["train", "test", "test", "train"]})
    >>> parts, runs, _ = split_runs(t)
    >>> [(s, p["x"].to_pylist()) for s, p in parts], runs
    ([('train', [1, 4]), ('test', [2, 3])], [['train', 1], ['test', 2], ['train', 1]])
    >>> split_runs(pa.table({"split": ["", ""]}))[1:]
    ([['train', 2]], True)
    >>> split_runs(pa.table({"label": ["a"]}), whole="relations")[1:]
    ([['relations', 1]], False)
    """
    n = table.num_rows
    if "split" not in table.column_names:
        return [(whole, table)], ([[whole, n]] if n else []), False
    values = pc.fill_null(table["split"], "")
    enc = pc.dictionary_encode(values).combine_chunks()
    labels = [str(v) for v in enc.dictionary.to_pylist()]
    if set(labels) <= {""}:
        return [(whole, table)], ([[whole, n]] if n else []), True
    names = [v if v else UNSPLIT for v in labels]
    for v, name in zip(labels, names):
        if not _SPLIT_NAME.match(name) or (v and name == UNSPLIT and "" in labels):
            raise UserError(f"split value {v!r} cannot be a Hub split name (letters, digits, _ "
                            f"and dots); rename it in the dataset before publishing")
    codes = enc.indices.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    lengths = np.diff(np.r_[starts, n])
    runs = [[names[codes[s]], int(k)] for s, k in zip(starts, lengths)]
    order = list(dict.fromkeys(names[c] for c in codes[starts]))
    parts = [(name, table.filter(pc.equal(enc.indices, names.index(name)))) for name in order]
    return parts, runs, False


def _list_item_names(path: Path) -> dict[str, str]:
    """Child names of the list columns in the Arrow schema a Parquet file was written with."""
    with parquet_errors(path):
        raw = (pq.read_metadata(path).metadata or {}).get(b"ARROW:schema")
    if raw is None:
        return {}
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw)))
    return {f.name: f.type.value_field.name for f in schema if pa.types.is_list(f.type)}


def _type_name(t: pa.DataType) -> str:
    """
    >>> _type_name(pa.list_(pa.string()))
    'list<string>'
    """
    return re.sub(r"\b(element|item): ", "", str(t))


def table_names(folder: Path) -> list[str]:
    names = sorted(p.stem for p in folder.glob("*.parquet"))
    return sorted(names, key=lambda n: n != "facts")  # the default config first


def _main_name(folder: Path, names: list[str]) -> str:
    """The default config (as :func:`factprobe.builders.publish.card.main_table` chooses it)."""
    if "facts" in names:
        return "facts"
    rows = {}
    for n in names:
        with parquet_errors(folder / f"{n}.parquet"):
            rows[n] = pq.read_metadata(folder / f"{n}.parquet").num_rows
    return max(names, key=lambda n: (rows[n], n))


def git_revision(path: Path) -> str:
    """``git rev-parse HEAD`` of the repository holding ``path``; ``unknown`` without one."""
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    rev = proc.stdout.strip()
    return rev if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", rev) else "unknown"


def dvc_lock_entry(dataset: Path) -> tuple[str | None, str | None]:
    """(stage, md5) of the ``dvc.lock`` output that is this folder, from the nearest dvc.lock
    above it; (None, None) when no lock file lists it."""
    folder = dataset.resolve()
    for root in folder.parents:
        lock = root / "dvc.lock"
        if lock.is_file():
            break
    else:
        return None, None
    rel = folder.relative_to(root).as_posix()
    try:
        data = jsonsafe.yaml_load(lock.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, OSError):
        return None, None
    for stage, body in (data.get("stages") or {}).items():
        for out in (body or {}).get("outs") or []:
            if isinstance(out, dict) and out.get("path") == rel and out.get("md5"):
                return str(stage), str(out["md5"])
    return None, None


def repo_version(dataset: Path) -> RepoVersion:
    stage, md5 = dvc_lock_entry(dataset)
    return RepoVersion(git_revision=git_revision(dataset), dvc_stage=stage, dvc_md5=md5)


def _relation_labels(folder: Path) -> dict[str, str]:
    path = folder / "relations.parquet"
    if not path.is_file():
        return {}
    rel = read_table(folder, "relations")
    if not {"relation_id", "label"} <= set(rel.column_names):
        return {}
    return dict(zip(rel["relation_id"].to_pylist(), rel["label"].to_pylist()))


def export_hub_folder(dataset: str | os.PathLike, out: str | os.PathLike,
                      options: CardOptions, version: RepoVersion | None = None) -> Path:
    """Write ``dataset`` (a built factprobe folder) to ``out`` in the Hub layout, atomically."""
    dataset = Path(dataset)
    manifest = read_manifest(dataset)
    names = table_names(dataset)
    if not names:
        raise UserError(f"{dataset} holds no Parquet tables: build the dataset first")
    out = Path(out)
    if out.resolve() == dataset.resolve() or dataset.resolve() in out.resolve().parents:
        raise UserError(f"--dry-run {out} is inside the dataset folder {dataset}; write the "
                        f"Hub folder somewhere else")
    version = version or repo_version(dataset)
    main = _main_name(dataset, names)
    tables: dict[str, dict] = {}
    example = None
    with atomic_folder(out, "publish", flag="--dry-run") as tmp:
        for name in names:
            table = read_table(dataset, name)
            parts, runs, empty_is_train = split_runs(
                # A table other than the main one (relations, laureates) is one split named
                # for the table, so the Hub does not show a relation list as training data
                # (`all`, the obvious name, is reserved by `datasets`).
                table, whole="train" if name == main else name)
            if name == main and table.num_rows:
                example = table.slice(0, 1).to_pylist()[0]
            splits = {}
            for split, part in parts:
                rel = f"data/{name}/{split}-00000-of-00001.parquet"
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                write_parquet(part, tmp / rel)
                splits[split] = {"path": rel, "rows": part.num_rows}
            sha = file_sha256(dataset / f"{name}.parquet")
            tables[name] = {"rows": table.num_rows, "sha256": sha,
                            "split_column": "split" in table.column_names,
                            "unsplit_as_train": empty_is_train, "splits": splits, "runs": runs,
                            "list_items": _list_item_names(dataset / f"{name}.parquet"),
                            "columns": [[f.name, _type_name(f.type)] for f in table.schema]}
        layout = {"format": LAYOUT_FORMAT, "exported_with": f"factprobe {factprobe_version()}",
                  "tables": tables}
        shutil.copyfile(dataset / "dataset.json", tmp / "dataset.json")
        card = render_card(manifest, layout, options, version, _relation_labels(dataset),
                           example)
        (tmp / "README.md").write_text(card, encoding="utf-8")
        # The layout is the folder's ownership marker too (factprobe.core.outdir): it is uploaded
        # with the rest, and lists exactly what was.
        (tmp / LAYOUT_FILE).write_text(dumps_json(stamp(layout, tmp, "publish")),
                                       encoding="utf-8")
    return out
