"""Reading a Hub-layout folder (what ``factprobe publish`` exports) back into a dataset folder,
byte for byte: what every layer's input resolver needs (:mod:`factprobe.builders.open`), kept
apart from the export and its dataset card so that reading a dataset imports neither."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder
from factprobe.core.tables import parquet_errors, write_parquet

LAYOUT_FILE = "factprobe_layout.json"
LAYOUT_FORMAT = 1


def is_hub_layout(folder: Path) -> bool:
    return (folder / LAYOUT_FILE).is_file()


def read_layout(folder: Path) -> dict:
    try:
        layout = jsonsafe.loads((folder / LAYOUT_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{folder / LAYOUT_FILE} is unreadable ({exc.__class__.__name__}); "
                        f"export or download the dataset again") from None
    if not isinstance(layout, dict):
        raise UserError(f"{folder / LAYOUT_FILE} is not a layout (a JSON object); export or "
                        f"download the dataset again")
    if layout.get("format") != LAYOUT_FORMAT:
        raise UserError(f"{folder / LAYOUT_FILE} has layout format {layout.get('format')!r}; "
                        f"this factprobe reads format {LAYOUT_FORMAT}: upgrade factprobe")
    if not _tables_ok(layout.get("tables")):
        raise UserError(f"{folder / LAYOUT_FILE} does not describe its tables (name, splits, "
                        f"runs, rows); export or download the dataset again")
    return layout


def _tables_ok(tables) -> bool:
    """The layout's table entries have the shape export_hub_folder writes, and every name and
    path stays inside the folder (a downloaded layout is input like any other)."""
    if not isinstance(tables, dict):
        return False
    for name, entry in tables.items():
        if not (isinstance(name, str) and re.fullmatch(r"\w[\w.-]*", name)
                and isinstance(entry, dict) and isinstance(entry.get("rows"), int)
                and isinstance(entry.get("splits"), dict) and isinstance(entry.get("runs"), list)):
            return False
        for info in entry["splits"].values():
            path = info.get("path") if isinstance(info, dict) else None
            if not (isinstance(path, str) and path.startswith("data/") and ".." not in path):
                return False
        if not all(isinstance(r, list) and len(r) == 2 and isinstance(r[1], int)
                   for r in entry["runs"]):
            return False
    return True


def _reassemble(folder: Path, name: str, entry: dict) -> pa.Table:
    parts = {}
    for split, info in entry["splits"].items():
        path = folder / info["path"]
        if not path.is_file():
            raise UserError(f"{path} is missing: the Hub folder is incomplete; download it again")
        with parquet_errors(path):
            parts[split] = pq.read_table(path)
    pos = dict.fromkeys(parts, 0)
    pieces = []
    for split, n in entry["runs"]:
        if split not in parts or pos[split] + n > parts[split].num_rows:
            raise UserError(f"{folder / LAYOUT_FILE} does not match the files of table {name!r}; "
                            f"download or export it again")
        pieces.append(parts[split].slice(pos[split], n))
        pos[split] += n
    if any(pos[s] != parts[s].num_rows for s in parts) or sum(pos.values()) != entry["rows"]:
        raise UserError(f"table {name!r} in {folder} has rows the layout does not account for; "
                        f"download or export it again")
    first = next(iter(parts.values()))
    table = (pa.concat_tables(pieces) if pieces else first.slice(0, 0)).combine_chunks()
    # Parquet readers name every list's child "element"; the original file's Arrow schema may
    # say "item" (a list built in memory). Same rows either way, but only the original names
    # write the original bytes again, so a downloaded table keeps its published sha256.
    items = entry.get("list_items") or {}
    schema = pa.schema([f.with_type(pa.list_(pa.field(items[f.name], f.type.value_type)))
                        if pa.types.is_list(f.type) and f.name in items else f
                        for f in table.schema], metadata=table.schema.metadata)
    return table.cast(schema)


def assemble_dataset_folder(folder: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Turn a folder in the Hub layout back into a factprobe dataset folder at ``out``
    (atomically): ``<table>.parquet`` in the original row order, ``dataset.json`` unchanged."""
    folder = Path(folder)
    layout = read_layout(folder)
    if not (folder / "dataset.json").is_file():
        raise UserError(f"{folder} has no dataset.json: it was not exported by factprobe")
    with atomic_folder(out, "dataset") as tmp:
        for name, entry in layout["tables"].items():
            write_parquet(_reassemble(folder, name, entry), tmp / f"{name}.parquet")
        shutil.copyfile(folder / "dataset.json", tmp / "dataset.json")
    return Path(out)
