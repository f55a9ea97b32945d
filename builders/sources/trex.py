"""Read T-REx triples: LAMA-style ``P<id>.jsonl`` files, or a Hugging Face dataset.

Two layouts are accepted by :func:`read_trex`:

* **LAMA** -- a folder of ``P<id>.jsonl`` files (or one such file), one JSON object a line with
  ``sub_uri``, ``sub_label``, ``obj_uri``, ``obj_label``, optionally ``predicate_id`` and
  ``evidences``. The first evidence becomes ``evidence_title``/``evidence_text``.
* **Hugging Face** -- anything :func:`datasets.load_dataset` opens (a Hub id such as
  ``relbert/t_rex``, which needs the Hub or its cache, or a local folder of parquet/json/csv
  files) whose columns are recognised by name (``relation``/``head``/``tail``... see
  :data:`HF_COLUMNS`). All splits are concatenated in the order train, validation, test, others.

Either way the reader only collects raw rows; labels, answers, de-duplication and the counting of
rows without labels happen in :func:`builders.facts.assemble_facts`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd
from tqdm.auto import tqdm

from ..errors import UserError
from ..facts import SourceResult
from ..tables import file_sha256

try:  # orjson is an optional speed-up (several times faster on multi-million-line T-REx dumps)
    import orjson as _orjson

    _loads = _orjson.loads
    JSON_PARSER = "orjson"
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    JSON_PARSER = "json"

SKIP_BAD_HINT = "fix the line or pass --skip-bad to skip and count bad lines"
# A LAMA file named after a Wikidata property: P19.jsonl holds "place of birth".
RELATION_FILE = re.compile(r"^P\d+$")
REQUIRED_KEYS = ("sub_uri", "sub_label", "obj_uri", "obj_label")
ID_KEYS = ("sub_uri", "obj_uri")
MAX_LISTED_RELATIONS = 30

# Column synonyms of a Hugging Face T-REx layout, first match wins (exact name, then any case).
HF_COLUMNS = {
    "relation": ("relation", "predicate", "predicate_id", "relation_id", "Relation_ID"),
    "subject": ("head", "subject", "sub_label", "Subject"),
    "object": ("tail", "object", "obj_label", "Object"),
    "subject_id": ("sub_uri", "head_id"),
    "object_id": ("obj_uri", "tail_id"),
    "title": ("title",),
    "text": ("text",),
}
REQUIRED_HF = ("relation", "subject", "object")
SPLIT_ORDER = ("train", "validation", "test")
HF_FILE_BUILDERS = {".parquet": ("parquet", {}), ".csv": ("csv", {}),
                    ".tsv": ("csv", {"delimiter": "\t"}), ".json": ("json", {})}
_DATA_SUFFIXES = {".parquet", ".csv", ".tsv", ".json", ".jsonl", ".arrow", ".txt"}
_ENV_TRUE = {"1", "ON", "YES", "TRUE"}


# --------------------------------------------------------------------------- shared helpers

def natural_key(text: str) -> list:
    """Sort key that puts P17 before P101.

    >>> sorted(["P101", "P17", "P2"], key=natural_key)
    ['P2', 'P17', 'P101']
    """
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", text)]


def wanted_relations(relations: Iterable[str] | None) -> list[str] | None:
    """Requested relations, stripped and de-duplicated in order; ``None`` (or empty) means all."""
    if not relations:
        return None
    out: list[str] = []
    for rel in relations:
        rel = str(rel).strip()
        if rel and rel not in out:
            out.append(rel)
    return out or None


def check_relations(wanted: list[str] | None, present: Iterable[str], where: str) -> None:
    """Raise :class:`UserError` when a requested relation is not in the source."""
    if wanted is None:
        return
    present = set(present)
    missing = [r for r in wanted if r not in present]
    if not missing:
        return
    listed = sorted(present, key=natural_key)
    shown = ", ".join(listed[:MAX_LISTED_RELATIONS]) or "none"
    if len(listed) > MAX_LISTED_RELATIONS:
        shown += f", ... ({len(listed) - MAX_LISTED_RELATIONS} more)"
    what = "relation" if len(missing) == 1 else "relations"
    raise UserError(f"{what} {', '.join(missing)} not found in {where}; relations present: {shown}")


def bad_line(where: str, reason: str) -> UserError:
    return UserError(f"{where}: {reason}; {SKIP_BAD_HINT}")


# --------------------------------------------------------------------------- entry point

def read_trex(path: str, relations: list[str] | None, *, limit: int | None = None,
              skip_bad: bool = False, progress: bool = True) -> SourceResult:
    """Read T-REx triples of ``relations`` (``None``: all present) from ``path``.

    ``path`` is a LAMA folder of ``P<id>.jsonl`` files or one ``.jsonl`` file, otherwise a
    Hugging Face dataset (local folder/file or Hub id). ``limit`` keeps at most that many rows
    per relation, the first in file (split) order. Malformed lines raise :class:`UserError`
    naming ``file:line`` unless ``skip_bad``, which skips them and counts them in
    ``dropped["bad_lines"]``.
    """
    if limit is not None and limit < 0:
        raise UserError(f"limit must be 0 or more, got {limit}")
    wanted = wanted_relations(relations)
    files = lama_files(path)
    if files is not None:
        return _read_lama(path, files, wanted, limit, skip_bad, progress)
    return _read_hf(path, wanted, limit, skip_bad, progress)


def lama_files(path: str) -> list[Path] | None:
    """The ``.jsonl`` files to read when ``path`` is LAMA-style, else ``None``.

    A ``.jsonl`` file is LAMA-style whatever its name; a folder is when it holds at least one
    ``*.jsonl`` named like a relation (``P19.jsonl``), and then only those are read (LAMA
    folders also hold files such as ``relations.jsonl`` that are not triples).
    """
    p = Path(path).expanduser()
    if p.is_file():
        return [p] if p.suffix == ".jsonl" else None
    if p.is_dir():
        named = sorted((f for f in p.glob("*.jsonl")
                        if f.is_file() and RELATION_FILE.match(f.stem)),
                       key=lambda f: natural_key(f.stem))
        return named or None
    return None


# --------------------------------------------------------------------------- LAMA jsonl

def _evidence(evidences, obj_label) -> tuple[str | None, str | None] | None:
    """(title, text) of the first evidence, or ``None`` when there is none."""
    if not isinstance(evidences, list) or not evidences:
        return None
    ev = evidences[0]
    if not isinstance(ev, dict):
        return None
    title = ev.get("title")
    title = title if isinstance(title, str) else ""
    masked = ev.get("masked_sentence")
    if isinstance(masked, str) and masked:
        surface = ev.get("obj_surface")
        if not (isinstance(surface, str) and surface):
            surface = obj_label if isinstance(obj_label, str) and obj_label else None
        return title, masked.replace("[MASK]", surface) if surface else masked
    for key in ("text", "sentence"):
        text = ev.get(key)
        if isinstance(text, str) and text:
            return title, text
    return title, None


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):  # orjson's error subclasses it too
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    return f"not valid JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"


def _read_lama(path: str, files: list[Path], wanted: list[str] | None, limit: int | None,
               skip_bad: bool, progress: bool) -> SourceResult:
    want = set(wanted) if wanted is not None else None
    rel_col: list[str] = []
    sid_col: list[str] = []
    oid_col: list[str] = []
    sub_col: list[str | None] = []
    obj_col: list[str | None] = []
    title_col: list[str | None] = []
    text_col: list[str | None] = []
    kept_per_rel: dict[str, int] = {}
    present: set[str] = set()
    files_info: dict[str, dict] = {}
    skipped_files: list[str] = []
    bad_total = 0
    any_evidence = False
    root = Path(path).expanduser()
    single = root.is_file()

    for f in tqdm(files, desc="T-REx files", unit="file", disable=not progress):
        name = f.name if single else f.relative_to(root).as_posix()
        stem_rel = f.stem if RELATION_FILE.match(f.stem) else None
        if want is not None and stem_rel is not None and stem_rel not in want and not single:
            # Relation known from the file name and not requested: not worth parsing.
            present.add(stem_rel)
            skipped_files.append(name)
            continue
        default_rel = f.stem
        where_file = str(f)
        h = hashlib.sha256()
        lines = bad = rows = 0
        with open(f, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                h.update(line)
                lines = lineno
                if not line.strip():
                    continue
                try:
                    rec = _loads(line)
                except ValueError as exc:
                    problem = _json_error(exc)
                else:
                    problem = None
                    if not isinstance(rec, dict):
                        problem = "not a JSON object"
                    else:
                        absent = [k for k in REQUIRED_KEYS if k not in rec]
                        if absent:
                            problem = f"missing key(s) {', '.join(absent)}"
                        else:
                            empty = [k for k in ID_KEYS
                                     if rec[k] is None or not str(rec[k]).strip()]
                            if empty:
                                problem = f"empty {', '.join(empty)}"
                if problem is not None:
                    if not skip_bad:
                        raise bad_line(f"{where_file}:{lineno}", problem)
                    bad += 1
                    continue
                pid = rec.get("predicate_id")
                rel = str(pid).strip() if pid is not None else ""
                if not rel:
                    rel = default_rel
                present.add(rel)
                if want is not None and rel not in want:
                    continue
                n = kept_per_rel.get(rel, 0)
                if limit is not None and n >= limit:
                    continue
                kept_per_rel[rel] = n + 1
                rows += 1
                sub, obj = rec["sub_label"], rec["obj_label"]
                sub = None if sub is None else str(sub)
                obj = None if obj is None else str(obj)
                rel_col.append(rel)
                sid_col.append(str(rec["sub_uri"]).strip())
                oid_col.append(str(rec["obj_uri"]).strip())
                sub_col.append(sub)
                obj_col.append(obj)
                ev = _evidence(rec.get("evidences"), obj)
                if ev is None:
                    title_col.append(None)
                    text_col.append(None)
                else:
                    any_evidence = True
                    title_col.append(ev[0])
                    text_col.append(ev[1])
        bad_total += bad
        files_info[name] = {"sha256": h.hexdigest(), "lines": lines, "rows": rows,
                            "bad_lines": bad}

    check_relations(wanted, present, path)
    data = {"relation_id": rel_col, "subject_id": sid_col, "object_id": oid_col,
            "subject": sub_col, "object": obj_col}
    if any_evidence:
        data["evidence_title"] = title_col
        data["evidence_text"] = text_col
    triples = pd.DataFrame(data)
    read = sorted(kept_per_rel, key=natural_key)
    provenance = {
        "path": str(path),
        "kind": "lama",
        "files": files_info,
        "files_not_read": skipped_files,
        "relations": read,
        "bad_lines": bad_total,
        "json_parser": JSON_PARSER,
    }
    return SourceResult(triples=triples, relations=pd.DataFrame({"relation_id": read}),
                        provenance=provenance, dropped={"bad_lines": bad_total},
                        source_tag="trex")


# --------------------------------------------------------------------------- Hugging Face

def _env_flag(name: str) -> bool | None:
    val = os.environ.get(name)
    return None if val is None else val.strip().upper() in _ENV_TRUE


@contextmanager
def _hf_session(progress: bool) -> Iterator[None]:
    """Honour HF_DATASETS_OFFLINE / HF_HUB_OFFLINE as set *now*, and quiet progress bars.

    ``datasets`` and ``huggingface_hub`` read the offline variables once, at import; a process
    that imported them earlier (or a caller that sets the variable later) would otherwise try
    the network and spend its retries before failing. Only ever switches offline on.
    """
    import datasets
    import datasets.config as dconfig
    import huggingface_hub.constants as hconst

    offline = _env_flag("HF_DATASETS_OFFLINE")
    if offline is None:
        offline = _env_flag("HF_HUB_OFFLINE")
    saved = (dconfig.HF_HUB_OFFLINE, getattr(dconfig, "HF_DATASETS_OFFLINE", None),
             hconst.HF_HUB_OFFLINE)
    bars_were_off = datasets.utils.are_progress_bars_disabled()
    try:
        if offline:
            dconfig.HF_HUB_OFFLINE = True
            if hasattr(dconfig, "HF_DATASETS_OFFLINE"):
                dconfig.HF_DATASETS_OFFLINE = True
            hconst.HF_HUB_OFFLINE = True
        if not progress and not bars_were_off:
            datasets.utils.disable_progress_bars()
        yield
    finally:
        dconfig.HF_HUB_OFFLINE = saved[0]
        if saved[1] is not None:
            dconfig.HF_DATASETS_OFFLINE = saved[1]
        hconst.HF_HUB_OFFLINE = saved[2]
        if not progress and not bars_were_off:
            datasets.utils.enable_progress_bars()


def _looks_local(path: str) -> bool:
    """A path that cannot be a Hub id (``owner/name``): absolute, relative with ./ or ~, nested,
    or with a data file extension."""
    return (path.startswith(("/", ".", "~")) or path.count("/") > 1 or "\\" in path
            or Path(path).suffix.lower() in _DATA_SUFFIXES)


def _load_hf(path: str):
    import datasets

    local = Path(path).expanduser()
    if local.exists():
        if local.is_dir() and ((local / "dataset_dict.json").is_file()
                               or (local / "state.json").is_file()):
            return datasets.load_from_disk(str(local))  # a save_to_disk() folder
        if local.is_file():
            builder = HF_FILE_BUILDERS.get(local.suffix.lower())
            if builder is None:
                raise UserError(
                    f"{path}: cannot read a {local.suffix or 'extension-less'} file as T-REx; "
                    f"pass a folder of P<id>.jsonl files, a .jsonl file, or a parquet/csv/json "
                    f"file or folder with relation, head and tail columns")
            return datasets.load_dataset(builder[0], data_files=str(local), **builder[1])
        return datasets.load_dataset(str(local))
    return datasets.load_dataset(path)


def _splits(loaded) -> list[tuple[str, object]]:
    import datasets

    if isinstance(loaded, datasets.Dataset):
        return [(str(loaded.split) if loaded.split is not None else "train", loaded)]
    names = list(loaded.keys())
    order = [s for s in SPLIT_ORDER if s in names] + sorted(s for s in names
                                                             if s not in SPLIT_ORDER)
    return [(s, loaded[s]) for s in order]


def _pick_columns(columns: list[str]) -> dict[str, str]:
    picked: dict[str, str] = {}
    lower = {c.lower(): c for c in reversed(columns)}  # first occurrence wins
    for role, names in HF_COLUMNS.items():
        for name in names:
            if name in columns:
                picked[role] = name
                break
        else:
            for name in names:
                if name.lower() in lower:
                    picked[role] = lower[name.lower()]
                    break
    return picked


def _as_text(s: pd.Series) -> pd.Series:
    """Strings with missing values as ``None`` (object dtype, what assembly expects)."""
    s = s.astype("string")
    return s.astype(object).where(s.notna(), None)


def _local_file_hashes(path: str) -> dict[str, str]:
    p = Path(path).expanduser()
    if p.is_file():
        return {p.name: file_sha256(p)}
    if not p.is_dir():
        return {}
    out = {}
    for f in sorted(p.rglob("*")):
        rel = f.relative_to(p)
        if f.is_file() and not any(part.startswith(".") for part in rel.parts) \
                and f.suffix.lower() in _DATA_SUFFIXES | {".md", ".yaml", ".yml"}:
            out[rel.as_posix()] = file_sha256(f)
    return out


def _read_hf(path: str, wanted: list[str] | None, limit: int | None, skip_bad: bool,
             progress: bool) -> SourceResult:
    local = Path(path).expanduser().exists()
    if not local and _looks_local(path):
        raise UserError(f"{path} not found: pass a folder of P<id>.jsonl files (LAMA T-REx), a "
                        f"local Hugging Face dataset folder, or a Hub dataset id such as "
                        f"relbert/t_rex")
    try:
        with _hf_session(progress):
            loaded = _load_hf(path)
    except UserError:
        raise
    except Exception as exc:  # datasets raises many types (ConnectionError, FileNotFoundError...)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        if local:
            raise UserError(f"could not load {path} as a Hugging Face dataset ({reason}); pass a "
                            f"folder of parquet/json/csv files with relation, head and tail "
                            f"columns, or of P<id>.jsonl files") from None
        raise UserError(f"could not load Hugging Face dataset {path!r} ({reason}); download it "
                        f"where the Hub is reachable (it then loads offline from the cache), or "
                        f"pass a local folder of its parquet/json/csv files") from None

    frames = []
    splits_info: dict[str, dict] = {}
    present: set[str] = set()
    bad_total = 0
    has_evidence = False
    for split, ds in tqdm(_splits(loaded), desc="T-REx splits", unit="split",
                          disable=not progress):
        cols = _pick_columns(list(ds.column_names))
        absent = [r for r in REQUIRED_HF if r not in cols]
        if absent:
            wanted_names = "; ".join(f"{r}: one of {', '.join(HF_COLUMNS[r])}" for r in absent)
            raise UserError(f"{path} (split {split}) has no column for {wanted_names}; columns "
                            f"found: {', '.join(ds.column_names)}")
        raw = ds.select_columns(sorted(set(cols.values()))).to_pandas()
        rel = raw[cols["relation"]].astype("string").str.strip()
        bad = rel.isna() | (rel == "")
        if bad.any():
            if not skip_bad:
                first = int(bad.to_numpy().nonzero()[0][0]) + 1
                raise UserError(f"{path} split {split} row {first}: empty relation; fix the data "
                                f"or pass --skip-bad to skip and count bad rows")
            bad_total += int(bad.sum())
        keep = ~bad
        sub = _as_text(raw.loc[keep, cols["subject"]])
        obj = _as_text(raw.loc[keep, cols["object"]])
        df = pd.DataFrame({"relation_id": rel[keep].astype(object), "subject": sub,
                           "object": obj})
        for side in ("subject", "object"):
            ids = (_as_text(raw.loc[keep, cols[f"{side}_id"]].astype("string").str.strip())
                   if f"{side}_id" in cols else None)
            if ids is None:
                df[f"{side}_id"] = df[side]
            else:  # a row without an id falls back to its label, as a source without ids does
                df[f"{side}_id"] = ids.where(ids.notna() & (ids != ""), df[side])
        if "title" in cols or "text" in cols:
            has_evidence = True
            df["evidence_title"] = (_as_text(raw.loc[keep, cols["title"]]) if "title" in cols
                                    else "")
            df["evidence_text"] = (_as_text(raw.loc[keep, cols["text"]]) if "text" in cols
                                   else None)
        present.update(df["relation_id"].unique())
        frames.append(df)
        splits_info[split] = {"rows": len(raw), "bad_rows": int(bad.sum()),
                              "fingerprint": getattr(ds, "_fingerprint", None),
                              "columns": cols}

    check_relations(wanted, present, path)
    order = ["relation_id", "subject_id", "object_id", "subject", "object"]
    if has_evidence:
        order += ["evidence_title", "evidence_text"]
    triples = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=order)
    for col in order:
        if col not in triples.columns:  # a split without title/text among splits with them
            triples[col] = None
    triples = triples[order]
    if wanted is not None:
        triples = triples[triples["relation_id"].isin(wanted)]
    if limit is not None:
        triples = triples[triples.groupby("relation_id", sort=False).cumcount() < limit]
    triples = triples.reset_index(drop=True)

    read = sorted(triples["relation_id"].unique(), key=natural_key)
    first = _splits(loaded)[0][1] if splits_info else None
    info = getattr(first, "info", None)
    provenance = {
        "path": str(path),
        "kind": "hf",
        "splits": splits_info,
        "relations": read,
        "bad_lines": bad_total,
    }
    if info is not None:
        provenance.update({
            "builder": info.builder_name,
            "config": info.config_name,
            "version": str(info.version) if info.version is not None else None,
        })
    if local:
        provenance["files"] = _local_file_hashes(path)
    elif info is not None and info.download_checksums:
        # Hub data-file URLs carry the revision (commit) they were downloaded from.
        provenance["data_files"] = sorted(info.download_checksums)
    return SourceResult(triples=triples, relations=pd.DataFrame({"relation_id": read}),
                        provenance=provenance, dropped={"bad_lines": bad_total},
                        source_tag="trex")
