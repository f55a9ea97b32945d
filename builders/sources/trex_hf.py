"""T-REx as a Hugging Face dataset: ``relbert/t_rex`` or any local copy, via ``datasets``."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd
from tqdm.auto import tqdm

from factprobe.core.errors import UserError
from factprobe.core.tables import file_sha256
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.collect import Collector
from factprobe.builders.sources.common import text_frame

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
    verbosity = datasets.utils.logging.get_verbosity()
    try:
        # datasets logs a failure before raising it; the raise becomes our one line
        datasets.utils.logging.set_verbosity(datasets.utils.logging.CRITICAL)
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
        datasets.utils.logging.set_verbosity(verbosity)
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


def read_hf(path: str, take: Collector, progress: bool) -> SourceResult:
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
        raise UserError(f"could not load Hugging Face dataset {path!r}: no such local folder, "
                        f"and from the Hub: {reason}; download it where the Hub is reachable (it "
                        f"then loads offline from the cache), or pass a local folder of its "
                        f"parquet/json/csv files") from None

    frames = []
    splits_info: dict[str, dict] = {}
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
            first = int(bad.to_numpy().nonzero()[0][0]) + 1
            take.bad_line(f"{path} split {split} row {first}", "empty relation",
                          count=int(bad.sum()), hint="fix the data or pass --skip-bad to skip "
                          "and count bad rows")
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
        take.present.update(df["relation_id"].unique())
        frames.append(df)
        splits_info[split] = {"rows": len(raw), "bad_rows": int(bad.sum()),
                              "fingerprint": getattr(ds, "_fingerprint", None),
                              "columns": cols}

    take.check(path)
    order = ["relation_id", "subject_id", "object_id", "subject", "object"]
    if has_evidence:
        order += ["evidence_title", "evidence_text"]
    triples = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=order)
    for col in order:
        if col not in triples.columns:  # a split without title/text among splits with them
            triples[col] = None
    triples = take.select(triples[order])
    read = take.read()
    first = _splits(loaded)[0][1] if splits_info else None
    info = getattr(first, "info", None)
    provenance = {
        "path": str(path),
        "kind": "hf",
        "splits": splits_info,
        "relations": read,
        "bad_lines": take.bad,
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
    return SourceResult(triples=triples, relations=text_frame({"relation_id": read}),
                        provenance=provenance, dropped={"bad_lines": take.bad},
                        source_tag="trex")
