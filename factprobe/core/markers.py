"""What an output folder is: factprobe's ownership markers, and what they list.

Every output folder carries a *marker*, a manifest factprobe writes last, naming the kind of
output (``"output"``) and every file it wrote there (``"files"``, the marker included; an empty
sub-folder as ``"name/"``)::

    dataset   dataset.json            (its ``kind`` is the dataset kind: facts, mc, ...)
    run       run.json                (factprobe eval)
    model     planted.json            (factprobe plant)
    report    report.json             (factprobe report)
    publish   factprobe_layout.json   (factprobe publish --dry-run; uploaded on purpose: it tells
                                       a reader how to rebuild the tables and what the folder holds)
    export    factprobe_export.json   (factprobe export: a task folder for another tool)

Markers written before ``output`` and ``files`` existed are recognised by their other keys,
and claim only the files their kind of output always has (:func:`identify`): anything else in
such a folder is the user's. A marker listing a path outside its folder is not factprobe's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from factprobe.core import jsonsafe

from factprobe.core.writer import WRITER

SENTINEL = ".factprobe-incomplete"   # in a temporary folder until it is complete (factprobe.core.swap)
# factprobe's own bookkeeping at the top of a folder it is writing or moving aside: never part
# of an output, never a user's file (factprobe.core.writer).
RECORDS = frozenset({SENTINEL, WRITER})
# Checked in this order: a Hub folder also holds the dataset's dataset.json.
MARKERS = (("publish", "factprobe_layout.json"), ("report", "report.json"),
           ("model", "planted.json"), ("run", "run.json"), ("export", "factprobe_export.json"),
           ("dataset", "dataset.json"))
MARKER = dict(MARKERS)
NOUN = {"dataset": "a dataset", "run": "a run folder (factprobe eval)",
        "model": "a model folder (factprobe plant)", "report": "a report (factprobe report)",
        "publish": "a Hub folder (factprobe publish --dry-run)",
        "export": "an export (factprobe export)"}
BOOKKEEPING = frozenset({".gitignore", ".gitkeep"})
# What transformers' save_pretrained writes for factprobe's models, for planted.json files
# written before markers listed their files.
_HF_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
             "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
# The tables each dataset kind always writes, for dataset.json files written before markers
# listed their files: such a marker claims these and nothing else (a user's own
# results.parquet in the folder stays the user's).
_DATASET_TABLES = {"facts": ("facts", "relations"), "mc": ("facts", "relations"),
                   "misprimes": ("facts", "relations"), "templates": ("templates", "relations"),
                   "multiprompt": ("facts", "relations", "templates"),
                   "fktc": ("facts", "relations", "templates"),
                   "nobel": ("laureates", "facts", "relations")}


@dataclass(frozen=True)
class Found:
    """What an existing folder is: the kind of output (None: no factprobe marker), the
    dataset kind, and the paths factprobe wrote there."""

    kind: str | None
    subkind: str | None = None
    owned: frozenset[str] = frozenset()

    def describe(self) -> str:
        if self.kind == "dataset" and self.subkind:
            return f"a '{self.subkind}' dataset"
        return NOUN.get(self.kind or "", "no factprobe output")


def contents(folder: Path) -> list[str]:
    """Every file, link and empty folder (``"name/"``) under ``folder``, relative, sorted.
    Raises OSError for a folder it cannot read: an unread folder is not an empty one."""
    def fail(exc: OSError) -> None:
        raise exc

    out = []
    for dirpath, dirnames, filenames in os.walk(folder, onerror=fail):
        rel = Path(dirpath).relative_to(folder)
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = [d for d in dirnames if d not in links]
        out.extend((rel / f).as_posix() for f in [*filenames, *links])
        if not dirnames and not filenames and not links and rel.parts:
            out.append(rel.as_posix() + "/")
    return sorted(out)


def stamp(manifest: dict, folder: Path, kind: str) -> dict:
    """``manifest`` with the ownership fields for ``folder``: call it when everything but the
    marker is written, and write the result as the marker."""
    files = set(contents(folder)) - RECORDS
    return {**manifest, "output": kind, "files": sorted(files | {MARKER[kind]})}


def _legacy_files(kind: str, folder: Path, data: dict) -> set[str] | None:
    """The files of a marker written before markers listed them, told by its own keys."""
    if kind == "dataset" and {"kind", "schema_version", "factprobe_version"} <= data.keys():
        tables = _DATASET_TABLES.get(data["kind"], ()) if isinstance(data["kind"], str) else ()
        return {f"{t}.parquet" for t in tables}
    if kind == "run" and {"method", "eval", "backend"} <= data.keys():
        return {"outputs.parquet", "prompts.parquet", "metrics.json"}
    if kind == "model" and {"planted", "held_out", "config"} <= data.keys():
        return set(_HF_FILES)
    if kind == "publish" and {"format", "tables"} <= data.keys():
        try:
            return {"README.md", "dataset.json", *(split["path"] for t in data["tables"].values()
                                                   for split in t["splits"].values())}
        except (AttributeError, KeyError, TypeError):
            return None
    return None


def _plain(rel: str) -> bool:
    """A path a marker may list: relative, inside the folder.

    >>> _plain("data/facts/train.parquet"), _plain("figures/")
    (True, True)
    >>> _plain("../notes.txt"), _plain("/etc/passwd"), _plain("")
    (False, False, False)
    """
    parts = rel.rstrip("/").split("/")
    return bool(rel.strip("/")) and not rel.startswith("/") and \
        all(p not in ("", ".", "..") for p in parts)


def identify(folder: Path) -> Found:
    for kind, name in MARKERS:
        path = folder / name
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = jsonsafe.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):   # a marker nested too deep is no marker
            continue
        if not isinstance(data, dict):
            continue
        files = data.get("files")
        if data.get("output") == kind and isinstance(files, list) and \
                all(isinstance(f, str) and _plain(f) for f in files):
            owned = set(files)
        else:
            owned = _legacy_files(kind, folder, data)
            if owned is None or not all(isinstance(f, str) and _plain(f) for f in owned):
                continue
        sub = data.get("kind") if kind == "dataset" else None
        return Found(kind, sub if isinstance(sub, str) else None, frozenset(owned | {name}))
    return Found(None)


def unlisted(folder: Path, found: Found) -> list[str]:
    """What is in ``folder`` that its marker does not list (an empty folder that held listed
    files counts as listed; factprobe's own :data:`RECORDS` are neither)."""
    dirs = {p.rstrip("/").rsplit("/", 1)[0] + "/" for p in found.owned if "/" in p.rstrip("/")}
    for d in list(dirs):
        while "/" in d.rstrip("/"):
            d = d.rstrip("/").rsplit("/", 1)[0] + "/"
            dirs.add(d)
    return [p for p in contents(folder)
            if p not in found.owned and p not in dirs and p not in RECORDS]


def clashes(folder: Path, rel: str) -> bool:
    """Whether ``rel`` cannot be moved into ``folder``: it, or a parent as a file, is there."""
    target = folder / rel.rstrip("/")
    if os.path.lexists(target):
        return True
    return any(os.path.lexists(p) and not p.is_dir() for p in target.parents
               if folder in p.parents)
