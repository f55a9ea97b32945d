"""The datasets a ``build`` command reads (``--facts``, ``--types``, ``--templates``), checked
before any work: a folder that exists, holds a manifest of the right kind, and tables with the
columns the builder reads. A wrong input is one :class:`UserError` that names the flag, never
a ``KeyError`` halfway through a build.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from builders.core.errors import UserError
from builders.core.tables import (
    check_kind,
    read_manifest,
    read_schema,
    require_columns,
    table_path,
)

FACTS = ("facts",)   # what 'build facts' and 'build aliases' write
# facts with a negatives column, which the builders that draw negatives draw again
FACTS_OR_MISPRIMES = ("facts", "misprimes")
TEMPLATES = ("templates",)


def input_dataset(spec: str | os.PathLike, flag: str, kinds: tuple[str, ...] | None,
                  table: str = "facts", columns=(), reference: pa.Schema | None = None
                  ) -> tuple[Path, dict]:
    """(local folder, manifest) of the dataset ``spec`` given to ``flag``.

    ``spec`` may be anything :func:`builders.publish.hub.open_dataset` opens. ``kinds``: the manifest
    kinds accepted (None: any). ``table`` must exist with ``columns`` (typed as in
    ``reference``, default the facts schema).
    """
    from builders.publish.hub import (
        open_dataset,  # a Hub-layout folder or hf://ORG/NAME becomes a local one
    )
    path = Path(spec)
    if path.is_file():
        raise UserError(f"{flag} {spec} is a file; give a dataset folder built by "
                        f"'factprobe build'")
    folder = open_dataset(spec)
    if (folder / "run.json").is_file() and not (folder / "dataset.json").exists():
        raise UserError(f"{flag} {spec} is an eval run folder, not a dataset; give a dataset "
                        f"folder built by 'factprobe build'")
    manifest = read_manifest(folder)
    if kinds is not None:
        check_kind(spec, manifest, kinds, flag)
    require_columns(read_schema(folder, table), columns, table_path(folder, table), reference)
    return folder, manifest


def templates_input(spec: str | os.PathLike | None) -> Path | None:
    """The templates dataset given to ``--templates`` (None when not given), checked."""
    if not spec:
        return None
    from builders.templates.files import TEMPLATES_SCHEMA
    folder, _ = input_dataset(spec, "--templates", TEMPLATES, table="templates",
                              columns=TEMPLATES_SCHEMA.names, reference=TEMPLATES_SCHEMA)
    return folder
