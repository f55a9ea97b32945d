"""The Hugging Face Hub: publishing a built dataset, and opening a dataset from wherever it is.

``open_dataset`` is the one entry point for commands that take a dataset (``--facts``,
``--dataset``): it accepts a factprobe dataset folder, a folder in the Hub layout, or
``hf://ORG/NAME[@REVISION]``, and always returns a local factprobe dataset folder.

The token comes from ``HF_TOKEN`` only and never reaches a message, a file or a log: every
error from the Hub client is turned into a UserError whose text is scrubbed of it.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from builders.core.errors import UserError
from builders.core.tables import factprobe_version, file_sha256, read_manifest
from builders.publish.card import CardOptions
from builders.publish.export import (
    LAYOUT_FILE,
    assemble_dataset_folder,
    export_hub_folder,
    is_hub_layout,
)

HF_PREFIX = "hf://"
# Hub repo ids: an optional namespace and a name, of letters, digits, '-', '_' and '.'.
_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,95}/)?[A-Za-z0-9][\w.-]{0,95}$")
TOKEN_HELP = ("create a token with write access at https://huggingface.co/settings/tokens and "
              "export HF_TOKEN=...")


@dataclass(frozen=True)
class PublishConfig:
    dataset: str
    repo_id: str
    private: bool = False
    revision: str | None = None    # a branch; created when missing
    tag: str | None = None
    license: str | None = None     # None: chosen from the dataset's source
    dry_run: str | None = None     # write the Hub folder here and upload nothing
    progress: bool = True


def check_repo_id(repo_id: str, *, namespace: bool = True) -> str:
    """
    >>> check_repo_id("my-org/trex-mc")
    'my-org/trex-mc'
    >>> check_repo_id("trex-mc")
    Traceback (most recent call last):
    ...
    builders.core.errors.UserError: repo id 'trex-mc' is not ORG/NAME (letters, digits, '-', '_', '.')
    """
    ok = (_REPO_ID.match(repo_id) and ("/" in repo_id or not namespace)
          and "--" not in repo_id and ".." not in repo_id)
    if not ok:
        raise UserError(f"repo id {repo_id!r} is not ORG/NAME (letters, digits, '-', '_', '.')")
    return repo_id


def parse_hf_spec(spec: str) -> tuple[str, str | None]:
    """``hf://ORG/NAME[@REVISION]`` -> (repo id, revision). ``hf://datasets/ORG/NAME`` (the
    fsspec spelling) is accepted too.

    >>> parse_hf_spec("hf://my-org/trex-mc@v1.0")
    ('my-org/trex-mc', 'v1.0')
    >>> parse_hf_spec("hf://datasets/my-org/trex-mc")
    ('my-org/trex-mc', None)
    """
    rest = spec[len(HF_PREFIX):]
    if rest.startswith("datasets/") and rest.count("/") >= 2:
        rest = rest[len("datasets/"):]
    repo_id, _, revision = rest.partition("@")
    if "@" in spec and not revision:
        raise UserError(f"{spec}: nothing after '@'; give a branch, tag or commit, or drop '@'")
    return check_repo_id(repo_id, namespace=False), revision or None


def _network_errors() -> tuple[type[BaseException], ...]:
    """Transport errors of whichever HTTP library this huggingface_hub uses (requests, httpx,
    httpx2: it has changed across releases), plus the OS-level ones."""
    errors: list[type[BaseException]] = [OSError, ConnectionError, TimeoutError]
    for module, name in (("httpx2", "TransportError"), ("httpx", "TransportError"),
                         ("requests.exceptions", "RequestException")):
        with contextlib.suppress(ImportError, AttributeError):
            errors.append(getattr(importlib.import_module(module), name))
    return tuple(errors)


def _scrub(text: str, token: str | None) -> str:
    text = " ".join(str(text).split())
    if token:
        text = text.replace(token, "***")
    return re.sub(r"hf_[A-Za-z0-9]{8,}", "hf_***", text)


@contextlib.contextmanager
def hub_errors(what: str, repo_id: str, token: str | None = None, conflict: str = ""
               ) -> Iterator[None]:
    """Turn huggingface_hub failures into one UserError line that says what to do."""
    from huggingface_hub import constants
    from huggingface_hub import utils as hf  # the error classes, in every release since 0.23
    try:
        yield
    except UserError:
        raise
    except hf.OfflineModeIsEnabled:
        raise UserError(f"cannot {what} {repo_id}: HF_HUB_OFFLINE is set; unset it and connect "
                        f"to the network") from None
    except hf.RevisionNotFoundError:
        raise UserError(f"cannot {what} {repo_id}: no such revision (branch, tag or commit); "
                        f"check the part after '@'") from None
    except hf.RepositoryNotFoundError:
        raise UserError(f"cannot {what} {repo_id}: the dataset repo does not exist or this "
                        f"token cannot see it; check the id, and for a private repo set "
                        f"HF_TOKEN to a token with access") from None
    except hf.HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        access = "read access" if what == "download" else "write access"
        if status == 401:
            raise UserError(f"cannot {what} {repo_id}: the Hub rejected HF_TOKEN (401); set "
                            f"HF_TOKEN to a valid token with {access}") from None
        if status == 403:
            raise UserError(f"cannot {what} {repo_id}: HF_TOKEN has no {access} there (403); "
                            f"use a token with {access} to that namespace") from None
        if status == 409:
            raise UserError(f"cannot {what} {repo_id}: it already exists (409){conflict}"
                            ) from None
        detail = _scrub(getattr(exc, "server_message", None) or exc, token)[:300]
        raise UserError(f"cannot {what} {repo_id}: the Hub answered HTTP {status}: "
                        f"{detail}") from None
    except hf.LocalEntryNotFoundError:
        offline = getattr(constants, "HF_HUB_OFFLINE", False)
        why = ("HF_HUB_OFFLINE is set" if offline else
               f"the Hugging Face Hub ({constants.ENDPOINT}) is unreachable")
        todo = "unset HF_HUB_OFFLINE and connect" if offline else "connect to the network"
        raise UserError(f"cannot {what} {repo_id}: {why} and the dataset is not in the local "
                        f"cache; {todo}, then retry") from None
    except _network_errors() as exc:
        raise UserError(f"cannot {what} {repo_id}: the Hugging Face Hub ({constants.ENDPOINT}) "
                        f"is unreachable ({exc.__class__.__name__}); check the network or "
                        f"HF_ENDPOINT") from None


def publish(cfg: PublishConfig) -> str:
    """Export ``cfg.dataset`` in the Hub layout and upload it (or only write it: ``dry_run``)."""
    dataset = open_dataset(cfg.dataset)
    read_manifest(dataset)
    check_repo_id(cfg.repo_id)
    options = CardOptions(repo_id=cfg.repo_id, license=cfg.license, tag=cfg.tag,
                          revision=cfg.revision)
    if cfg.dry_run:
        out = export_hub_folder(dataset, cfg.dry_run, options)
        return f"wrote {out} (dataset card, data/, dataset.json); nothing was uploaded"
    token = os.environ.get("HF_TOKEN")
    if not token:
        raise UserError(f"HF_TOKEN is not set: {TOKEN_HELP} (or use --dry-run OUT_DIR to only "
                        f"write the folder)")
    with tempfile.TemporaryDirectory(prefix="factprobe-publish-") as tmp:
        folder = export_hub_folder(dataset, Path(tmp) / "hub", options)
        return _upload(cfg, folder, token)


def _upload(cfg: PublishConfig, folder: Path, token: str) -> str:
    from huggingface_hub import HfApi
    if not cfg.progress:
        from huggingface_hub.utils import disable_progress_bars
        disable_progress_bars()
    api = HfApi(token=token)
    repo = cfg.repo_id
    with hub_errors("publish to", repo, token):
        api.create_repo(repo, repo_type="dataset", private=True if cfg.private else None,
                        exist_ok=True)
        branch = cfg.revision if cfg.revision and cfg.revision != "main" else None
        if branch or cfg.tag:
            # Checked before uploading, so a taken tag or a tag given as --revision leaves
            # the repo untouched.
            refs = api.list_repo_refs(repo, repo_type="dataset")
            tags, branches = {t.name for t in refs.tags}, {b.name for b in refs.branches}
            if cfg.tag in tags:
                raise UserError(f"tag {cfg.tag} already exists on {repo}: a tag names one "
                                f"version for good, so choose a new --tag")
            if branch in tags:
                raise UserError(f"--revision {branch} is a tag of {repo}; give a branch name "
                                f"(tags are added with --tag)")
            if branch and branch not in branches:
                api.create_branch(repo, branch=branch, repo_type="dataset")
        name = read_manifest(folder).get("name", "dataset")
        commit = api.upload_folder(
            repo_id=repo, folder_path=str(folder), repo_type="dataset", revision=cfg.revision,
            commit_message=f"{name}: published with factprobe {factprobe_version()}",
            # Files of splits that no longer exist would linger; the card never lists them,
            # but a fresh snapshot should hold exactly this version.
            delete_patterns=["data/**"])
        oid = getattr(commit, "oid", None)
    if cfg.tag:
        with hub_errors(f"create tag {cfg.tag} on", repo, token,
                        "; a tag names one version for good, so choose a new --tag"):
            api.create_tag(repo, tag=cfg.tag, revision=oid or cfg.revision, repo_type="dataset",
                           tag_message=f"{name} (factprobe {factprobe_version()})")
    from huggingface_hub import constants
    where = f"{constants.ENDPOINT}/datasets/{repo}"
    ref = f"@{cfg.tag}" if cfg.tag else (f"@{cfg.revision}" if cfg.revision else "")
    commit_note = f" (commit {str(oid)[:12]})" if oid else ""
    return f"published {where}{commit_note}; read it back as hf://{repo}{ref}"


def _folder_key(folder: Path) -> str:
    """Content hash of a Hub-layout folder: a changed file gives a new cache entry."""
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
    return assemble_dataset_folder(folder, out)


def _download(repo_id: str, revision: str | None) -> Path:
    from huggingface_hub import snapshot_download
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
    atomically. Every command that takes a dataset calls this first (the ``build`` commands'
    ``--facts``, ``--types`` and ``--templates`` through :mod:`builders.core.inputs`, ``publish``;
    ``eval --dataset`` is meant to as well), so the rest of the code only ever sees local
    folders.
    """
    from builders.core.cache import default_cache_dir
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
    raise UserError(f"{path} not found: give a dataset folder built by 'factprobe build', a "
                    f"folder in the Hub layout, or hf://ORG/NAME[@REVISION]")
