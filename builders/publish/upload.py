"""Publishing a built dataset on the Hugging Face Hub: export it in the Hub layout
(:mod:`factprobe.builders.publish.export`) and upload it with ``HfApi``.

The token comes from ``HF_TOKEN`` only and never reaches a message, a file or a log
(:func:`factprobe.core.hub.hub_errors` scrubs every error of it).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.core.hub import check_repo_id, hub_errors
from factprobe.builders.open import open_dataset
from factprobe.core.tables import factprobe_version, read_manifest
from factprobe.builders.publish.card import CardOptions, MethodText
from factprobe.builders.publish.card_meta import CardMeta, load_card_meta
from factprobe.builders.publish.export import export_hub_folder

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
    pretty_name: str | None = None
    description: str | None = None
    authors: tuple[str, ...] = ()
    card_meta: str | None = None   # a YAML file of the four above; flags win over it
    methods: tuple[MethodText, ...] = ()   # what the card may say of each method (the caller's)


def publish(cfg: PublishConfig) -> str:
    """Export ``cfg.dataset`` in the Hub layout and upload it (or only write it: ``dry_run``)."""
    dataset = open_dataset(cfg.dataset)
    read_manifest(dataset)
    check_repo_id(cfg.repo_id)
    meta = CardMeta(pretty_name=cfg.pretty_name, description=cfg.description,
                    authors=tuple(cfg.authors), license=cfg.license)
    if cfg.card_meta:
        meta = meta.over(load_card_meta(cfg.card_meta))
    options = CardOptions(repo_id=cfg.repo_id, license=meta.license, tag=cfg.tag,
                          revision=cfg.revision, pretty_name=meta.pretty_name,
                          description=meta.description, authors=meta.authors,
                          methods=cfg.methods)
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
