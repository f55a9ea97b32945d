"""Opening a dataset from wherever it is: a factprobe dataset folder, a folder in the Hub
layout, or ``hf://ORG/NAME[@REVISION]``; always a local factprobe dataset folder back.

``open_dataset`` is the one entry point; the CLI reaches it through the input resolver
(:func:`factprobe.builders.inputs.resolve_input`), which also checks the manifest kind and columns.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.core.hub import HF_PREFIX, bound_hub_answers, hub_errors, parse_hf_spec
from factprobe.core.tables import file_sha256


def _folder_key(folder: Path) -> str:
    """Content hash of a Hub-layout folder: a changed file gives a new cache entry."""
    from factprobe.builders.publish.layout import LAYOUT_FILE
    h = hashlib.sha256()
    files = [folder / LAYOUT_FILE, folder / "dataset.json",
             *sorted((folder / "data").rglob("*.parquet"))]
    for path in files:
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(file_sha256(path).encode() if path.is_file() else b"missing")
    return h.hexdigest()[:20]


def _converted(folder: Path, out: Path) -> Path:
    if (out / "dataset.json").is_file():
        return out  # cache entries are keyed by content (or commit) and never change
    from factprobe.builders.publish.layout import assemble_dataset_folder
    return assemble_dataset_folder(folder, out)


def _download(repo_id: str, revision: str | None) -> Path:
    from huggingface_hub import snapshot_download
    bound_hub_answers()
    token = os.environ.get("HF_TOKEN") or None
    with hub_errors("download", f"hf://{repo_id}" + (f"@{revision}" if revision else ""), token):
        return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision,
                                      token=token))


def open_dataset(spec: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None
                 ) -> Path:
    """A local factprobe dataset folder for ``spec``.

    - a factprobe dataset folder (``dataset.json`` and ``<table>.parquet``): returned as is;
    - a folder in the Hub layout (``factprobe publish --dry-run``, or a download): converted
      back to the exact folder that was published;
    - ``hf://ORG/NAME[@REVISION]``: downloaded with huggingface_hub (its cache; ``HF_TOKEN``
      for private repos; offline works when the snapshot is cached), then converted.

    Converted folders live under ``<cache_dir>/hub/`` (default: factprobe's cache,
    ``$FACTPROBE_CACHE_DIR`` or ``~/.cache/factprobe``), keyed by commit or content, written
    atomically. Every command that takes a dataset calls this first, through
    :mod:`factprobe.builders.inputs` (the ``build`` commands' ``--facts``, ``--types`` and
    ``--templates``, ``eval --dataset``) or directly (``publish``), so the rest of the code only
    ever sees local folders.
    """
    from factprobe.core.cache import default_cache_dir
    from factprobe.builders.publish.layout import LAYOUT_FILE, is_hub_layout
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    text = str(spec)
    if text.startswith(HF_PREFIX):
        repo_id, revision = parse_hf_spec(text)
        snapshot = _download(repo_id, revision)
        if not is_hub_layout(snapshot):
            raise UserError(f"{text} has no {LAYOUT_FILE}: it was not published by factprobe; "
                            f"load it with datasets.load_dataset instead")
        out = cache / "hub" / repo_id.replace("/", "--") / snapshot.name  # snapshot = commit
        return _converted(snapshot, out)
    path = Path(spec)
    if is_hub_layout(path):
        return _converted(path, cache / "hub" / "local" / _folder_key(path))
    if path.is_dir() or path.exists():
        return path
    if _REVISION.match(text):
        return _from_revision(text, cache)
    raise UserError(f"{path} not found: give a dataset folder built by 'factprobe build', a "
                    f"folder in the Hub layout, hf://ORG/NAME[@REVISION], or REV:PATH (a git "
                    f"revision of this DVC repository)")


# REV:PATH, as git show writes it: a revision (tag, branch, commit, HEAD~1) and a path from the
# repository's root. Tried only when no file or folder has the name as given.
_REVISION = re.compile(r"^([^:\s/][^:\s]*):([^:]+)$")


def _from_revision(text: str, cache: Path) -> Path:
    """The dataset ``PATH`` as git revision ``REV`` of the DVC repository around the working
    directory has it, read through DVC (its cache, or its remote), under
    ``<cache>/dvc/<commit>/PATH``."""
    rev, rel = _REVISION.match(text).groups()
    try:
        from dvc.api import DVCFileSystem
        from dvc.exceptions import DvcException
        from dvc.repo import Repo
    except ImportError:
        raise UserError(f"{text}: reading a dataset at a git revision needs DVC (pip install "
                        f"'factprobe[pipeline]')") from None
    try:
        root = Repo.find_root()
    except DvcException:
        raise UserError(f"{text} is no folder here, and as REV:PATH it needs a DVC repository "
                        f"around {Path.cwd()}: run it from inside one") from None
    try:
        fs = DVCFileSystem(root, rev=rev)
        commit = fs.repo.get_rev()
        if not fs.isdir(rel):
            raise UserError(f"{text}: revision {rev} ({commit[:10]}) of {root} has no folder "
                            f"{rel}; check the path (from the repository's root)")
        out = cache / "dvc" / commit / rel
        if (out / "dataset.json").is_file():
            return out   # keyed by commit: what a commit holds never changes
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            fs.get(rel, str(tmp / "d"), recursive=True)
            os.replace(tmp / "d", out) if not out.exists() else None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except DvcException as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(f"{text}: DVC cannot read it at revision {rev} ({first})") from None
    except FileNotFoundError as exc:
        raise UserError(f"{text}: a file of it is in neither DVC's cache nor a remote "
                        f"({exc.filename or exc}); run 'dvc fetch' for that revision") from None
    return out
