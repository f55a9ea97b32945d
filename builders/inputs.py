"""The one way to open a dataset a command reads (``--facts``, ``--types``, ``--templates``,
``--dataset``): from wherever it is (a dataset folder, a folder in the Hub layout,
``hf://ORG/NAME[@REVISION]``, see :mod:`factprobe.builders.open`), then checked against what the
command needs, before any work: a folder that exists, holds a manifest of the right kind, and a
table with the columns the builder reads. A wrong input is one :class:`UserError` that names
the flag, never a ``KeyError`` halfway through a build.

The CLI resolves every input with :func:`resolve_input` and hands the builder the
:class:`InputDataset`; each builder declares what it reads as a :class:`Needs` next to its code,
and :func:`as_input` lets a library caller pass a plain path instead.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.core.tables import (
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


@dataclass(frozen=True)
class Needs:
    """What a command needs of a dataset it reads.

    ``flag`` names it in messages; ``kinds``: the manifest kinds accepted (None: any);
    ``table`` must exist with ``columns``, typed as in ``reference`` (default: the facts schema).
    """
    flag: str
    kinds: tuple[str, ...] | None
    table: str = "facts"
    columns: tuple[str, ...] = ()
    reference: pa.Schema | None = None


@dataclass(frozen=True)
class InputDataset:
    """A dataset opened and checked: ``spec`` as the user gave it (messages name it), the local
    factprobe dataset ``folder`` it resolved to, and its manifest."""
    spec: str
    folder: Path
    manifest: dict


def open_input(spec: str | os.PathLike) -> Path:
    """The local dataset folder for ``spec``, unchecked: for a command whose checks depend on
    more than a kind (``eval --dataset``: the method's tables, checked by the method table)."""
    from factprobe.builders.open import open_dataset
    return open_dataset(spec)


def resolve_input(spec: str | os.PathLike, needs: Needs) -> InputDataset:
    """Open the dataset ``spec`` and check it against ``needs``."""
    path = Path(spec)
    if path.is_file():
        raise UserError(f"{needs.flag} {spec} is a file; give a dataset folder built by "
                        f"'factprobe build'")
    folder = open_input(spec)
    if (folder / "run.json").is_file() and not (folder / "dataset.json").exists():
        raise UserError(f"{needs.flag} {spec} is an eval run folder, not a dataset; give a "
                        f"dataset folder built by 'factprobe build'")
    manifest = read_manifest(folder)
    if needs.kinds is not None:
        check_kind(spec, manifest, needs.kinds, needs.flag)
    require_columns(read_schema(folder, needs.table), needs.columns,
                    table_path(folder, needs.table), needs.reference)
    return InputDataset(spec=str(spec), folder=folder, manifest=manifest)


def as_input(value: InputDataset | str | os.PathLike | None, needs: Needs
             ) -> InputDataset | None:
    """``value`` as an :class:`InputDataset`: as is when the CLI already resolved it, resolved
    here when a library caller gave a path; None stays None (an optional input not given)."""
    if value is None or value == "":
        return None
    if isinstance(value, InputDataset):
        return value
    return resolve_input(value, needs)


def templates_needs() -> Needs:
    """What ``--templates`` (a templates dataset) must hold."""
    from factprobe.builders.templates.files import TEMPLATES_SCHEMA
    return Needs("--templates", TEMPLATES, table="templates",
                 columns=tuple(TEMPLATES_SCHEMA.names), reference=TEMPLATES_SCHEMA)
