"""Table schemas and the byte-stable writing of dataset folders (atomic: builders.outdir).

A dataset is a folder of Parquet tables plus ``dataset.json``. Every table is written from an
explicit Arrow schema (no pandas index or metadata), rows sorted by the builder, so the same
inputs give the same bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import UserError
from .outdir import atomic_folder, stamp

SCHEMA_VERSION = 1

_str_list = pa.list_(pa.string())

FACTS_SCHEMA = pa.schema([
    ("fact_id", pa.string()),
    ("relation_id", pa.string()),
    ("subject_id", pa.string()),
    ("object_id", pa.string()),
    ("subject", pa.string()),
    ("object", pa.string()),
    ("subject_aliases", _str_list),
    ("object_aliases", _str_list),
    ("answers", _str_list),
    ("split", pa.string()),
    ("source", pa.string()),
])

RELATIONS_SCHEMA = pa.schema([
    ("relation_id", pa.string()),
    ("label", pa.string()),
    ("description", pa.string()),
    ("object_type", pa.string()),
    ("iri", pa.string()),
])

LAUREATES_SCHEMA = pa.schema([
    ("subject_id", pa.string()),
    ("name", pa.string()),
    ("birth_year", pa.int32()),
    ("award_years", pa.list_(pa.int32())),
    ("fields", _str_list),
    ("gender", pa.string()),
])

MC_EXTRA_FIELDS = [("choices", _str_list), ("evidence_title", pa.string()),
                   ("evidence_text", pa.string())]
# Optional columns a facts table may carry (T-REx evidence); kept when present.
OPTIONAL_FACT_FIELDS = [("evidence_title", pa.string()), ("evidence_text", pa.string())]


def fact_id(relation_id: str, subject_id: str, object_id: str) -> str:
    """Stable id of a (relation, subject, object) triple.

    >>> fact_id("P36", "Q142", "Q90")
    '5563752a08aa1545'
    """
    key = "\x1f".join((relation_id, subject_id, object_id)).encode("utf-8")
    return hashlib.sha1(key).hexdigest()[:16]


def factprobe_version() -> str:
    try:
        return metadata.version("factprobe")
    except metadata.PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_parquet(table: pa.Table, path: Path) -> None:
    # Statistics and dictionary pages are deterministic; pin the writer options anyway so a
    # pyarrow default change cannot silently change the bytes of a rebuilt dataset.
    pq.write_table(table, path, compression="zstd", compression_level=3, use_dictionary=True,
                   write_statistics=True, version="2.6")


def dumps_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_dataset(out: str | os.PathLike, tables: Mapping[str, pa.Table],
                  manifest: Mapping[str, Any]) -> Path:
    """Write tables and ``dataset.json`` into ``out`` atomically; ``out`` must be free or a
    dataset of the same kind (see :mod:`builders.outdir`)."""
    with atomic_folder(out, "dataset", manifest.get("kind")) as tmp:
        for name, table in tables.items():
            write_parquet(table, tmp / f"{name}.parquet")
        (tmp / "dataset.json").write_text(dumps_json(stamp(dict(manifest), tmp, "dataset")),
                                          encoding="utf-8")
    return Path(out)


def read_table(folder: str | os.PathLike, name: str) -> pa.Table:
    path = Path(folder) / f"{name}.parquet"
    if not path.is_file():
        raise UserError(f"{path} not found: is {folder} a dataset folder built by "
                        f"'factprobe build'? Build it first.")
    return pq.read_table(path)


def read_manifest(folder: str | os.PathLike) -> dict:
    path = Path(folder) / "dataset.json"
    if not path.is_file():
        raise UserError(f"{path} not found: {folder} is not a factprobe dataset folder.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); "
                        f"rebuild the dataset.") from None


def base_manifest(name: str, kind: str, source: Mapping[str, Any], params: Mapping[str, Any],
                  counts: Mapping[str, Any]) -> dict:
    return {
        "name": name,
        "kind": kind,
        "schema_version": SCHEMA_VERSION,
        "factprobe_version": factprobe_version(),
        "source": dict(source),
        "params": dict(params),
        "counts": dict(counts),
    }
