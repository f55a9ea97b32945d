"""Table schemas and the byte-stable writing of dataset folders (atomic: factprobe.core.outdir).

A dataset is a folder of Parquet tables plus ``dataset.json``. Every table is written from an
explicit Arrow schema (no pandas index or metadata), rows sorted by the builder, so the same
inputs give the same bytes.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.core import jsonsafe
from factprobe.core.digests import factprobe_version, file_sha256, text_sha256  # noqa: F401 (re-exported)
from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder, stamp
from factprobe.core.provenance import make_provenance

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


# Statistics and dictionary pages are deterministic; pin the writer options anyway so a
# pyarrow default change cannot silently change the bytes of a rebuilt dataset. The row group
# size is pyarrow's default (1Mi rows), pinned too: a writer that streams row groups of exactly
# that many rows (write_parquet_groups) writes the bytes write_parquet writes for the whole table.
_PARQUET_OPTIONS = {"compression": "zstd", "compression_level": 3, "use_dictionary": True,
                    "write_statistics": True, "version": "2.6"}
ROW_GROUP_ROWS = 1 << 20


def write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS, **_PARQUET_OPTIONS)


def write_parquet_groups(groups: Iterable[pa.Table], schema: pa.Schema, path: Path) -> None:
    """Write ``path`` a row group at a time, byte for byte what :func:`write_parquet` writes
    for the tables concatenated: each table but the last holds exactly
    :data:`ROW_GROUP_ROWS` rows, one array per column (a whole table never has to be held)."""
    with pq.ParquetWriter(path, schema, **_PARQUET_OPTIONS) as writer:
        for table in groups:
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS)


def dumps_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_dataset(out: str | os.PathLike,
                  tables: Mapping[str, pa.Table | Callable[[Path], None]],
                  manifest: Mapping[str, Any]) -> Path:
    """Write tables and ``dataset.json`` into ``out`` atomically; ``out`` must be free or a
    dataset of the same kind (see :mod:`factprobe.core.outdir`). A table may be given as a
    function that writes it to the path it is given (a table streamed out of core)."""
    with atomic_folder(out, "dataset", manifest.get("kind")) as tmp:
        for name, table in tables.items():
            if callable(table):
                table(tmp / f"{name}.parquet")
            else:
                write_parquet(table, tmp / f"{name}.parquet")
        (tmp / "dataset.json").write_text(dumps_json(stamp(dict(manifest), tmp, "dataset")),
                                          encoding="utf-8")
    return Path(out)


# What pyarrow raises for a file that is not (or no longer) Parquet: truncated, overwritten,
# another format, or unreadable. Named once so every reader turns them into one clear line.
PARQUET_ERRORS = (pa.ArrowException, OSError)


@contextlib.contextmanager
def parquet_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn a failure to read the Parquet file ``path`` into a :class:`UserError`."""
    try:
        yield
    except PARQUET_ERRORS as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        # pyarrow repeats the path ("Could not open Parquet input source '<path>': ...")
        first = first.split("': ", 1)[1] if first.startswith("Could not open") else first
        first = first[:200]
        raise UserError(f"{path} is not a readable Parquet table ({first}); it is truncated or "
                        f"damaged: rebuild the dataset (or restore it with 'dvc checkout')"
                        ) from None


def table_path(folder: str | os.PathLike, name: str) -> Path:
    path = Path(folder) / f"{name}.parquet"
    if not path.is_file():
        raise UserError(f"{path} not found: is {folder} a dataset folder built by "
                        f"'factprobe build'? Build it first.")
    return path


def read_table(folder: str | os.PathLike, name: str, columns: list[str] | None = None, *,
               reference: pa.Schema | None = None) -> pa.Table:
    """``<folder>/<name>.parquet`` (only ``columns`` when given, each checked against its type
    in ``reference``, default the facts schema); a missing, truncated or damaged file, or one
    without those columns, is a :class:`UserError`, never a pyarrow traceback."""
    path = table_path(folder, name)
    if columns is not None:
        require_columns(read_schema(folder, name), columns, path, reference)
    with parquet_errors(path):
        return pq.read_table(path, columns=columns)


def read_schema(folder: str | os.PathLike, name: str) -> pa.Schema:
    path = table_path(folder, name)
    with parquet_errors(path):
        return pq.read_schema(path)


def require_columns(schema: pa.Schema, names, path: str | os.PathLike,
                    reference: pa.Schema | None = None) -> None:
    """Raise :class:`UserError` unless ``schema`` has every column of ``names``, each of the
    type ``reference`` (default: the facts schema) gives it, if it gives one."""
    reference = FACTS_SCHEMA if reference is None else reference
    missing = sorted(set(names) - set(schema.names))
    if missing:
        raise UserError(f"{path} lacks the column(s) {', '.join(missing)}: it is not a table "
                        f"factprobe built for this; give the right dataset")
    for name in names:
        want = reference.field(name).type if name in reference.names else None
        got = schema.field(name).type
        if want is not None and _type_kind(got) != _type_kind(want):
            raise UserError(f"{path}: column {name} is {got}, not {want}: it is not a table "
                            f"factprobe built; give the right dataset")


def _type_kind(t: pa.DataType) -> str:
    """A type up to what readers do not care about: string width, a list's child name.

    >>> _type_kind(pa.large_string()), _type_kind(pa.list_(pa.field("element", pa.string())))
    ('string', 'list<string>')
    """
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_type_kind(t.value_type)}>"
    return str(t)


def read_manifest(folder: str | os.PathLike) -> dict:
    path = Path(folder) / "dataset.json"
    if not path.is_file():
        raise UserError(f"{path} not found: {folder} is not a factprobe dataset folder.")
    try:
        manifest = jsonsafe.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc.strerror or exc}); check its permissions"
                        ) from None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not UTF-8 text: it is damaged; rebuild the dataset."
                        ) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); "
                        f"rebuild the dataset.") from None
    if not isinstance(manifest, dict):
        raise UserError(f"{path} is not a dataset manifest (a JSON object with name, kind, "
                        f"source...); rebuild the dataset.")
    for key, typ, what in (("name", str, "text"), ("kind", str, "text"),
                           ("source", dict, "an object"), ("params", dict, "an object"),
                           ("counts", dict, "an object")):
        if key in manifest and not isinstance(manifest[key], typ):
            raise UserError(f"{path}: '{key}' is not {what}: the manifest was edited or damaged;"
                            f" rebuild the dataset.")
    return manifest


def check_kind(folder: str | os.PathLike, manifest: Mapping[str, Any], kinds: tuple[str, ...],
               flag: str) -> None:
    """Raise :class:`UserError` when the manifest names a kind other than ``kinds`` (a
    manifest written without a kind is judged by its tables' columns alone)."""
    kind = manifest.get("kind")
    if kind is None or kind in kinds:
        return
    hint = {"facts": "'factprobe build facts' or 'build aliases'",
            "templates": "'factprobe build templates'"}
    wanted = " or ".join(repr(k) for k in kinds)
    made_by = " or ".join(hint.get(k, f"'factprobe build {k}'") for k in kinds)
    raise UserError(f"{folder} is a dataset of kind {kind!r}, but {flag} takes one of kind "
                    f"{wanted} (made by {made_by})")


def base_manifest(name: str, kind: str, source: Mapping[str, Any], params: Mapping[str, Any],
                  counts: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> dict:
    """A manifest. ``provenance`` (:mod:`factprobe.core.provenance`) defaults to this build with
    ``source`` as what it read: right for the builders that read a graph or file directly;
    builders that read datasets pass their own, naming those inputs."""
    return {
        "name": name,
        "kind": kind,
        "schema_version": SCHEMA_VERSION,
        "factprobe_version": factprobe_version(),
        "source": dict(source),
        "params": dict(params),
        "counts": dict(counts),
        "provenance": dict(provenance) if provenance is not None else make_provenance(source),
    }
