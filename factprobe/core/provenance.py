"""Provenance: where a dataset came from, back to the graph, file or endpoint at the bottom.

Every builder records, in its manifest's ``provenance``:

- ``build``: the factprobe version, and whether the factprobe source tree and the git working
  tree it was run in had uncommitted changes (``clean``, ``dirty``, or no git at all);
- ``source``: what it read that is not a factprobe dataset (a graph file and its sha256, an
  endpoint and the sha256 of each query, a dump and its date, template files), when it read any;
- ``inputs``: for each dataset it read (``facts``, ``templates``, ``types``), its name and kind,
  the sha256 of each of its tables, and that dataset's own ``provenance``, so the chain reaches
  the source however many builders lie between. Not the path it was read from: the same
  dataset read from a folder or from ``hf://`` is the same input, and gives the same bytes.

Nothing here reads a clock: the same inputs in the same working trees give the same bytes. The
dirty flags follow ``git describe --dirty``: changes to tracked files count, untracked files do
not, and neither do the files DVC itself rewrites while it runs a pipeline (``dvc.lock`` and
``.gitignore``), which would otherwise make every stage after the first one "dirty".
"""
from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

from factprobe.core.digests import factprobe_version, file_sha256

CLEAN, DIRTY, NO_GIT = "clean", "dirty", "not a git repository"
# The parts of factprobe's own checkout whose changes change what a build writes.
_CODE = ("factprobe", "builders", "probes", "evaluators", "pyproject.toml", "setup.py")
# Files DVC rewrites during `dvc repro`: their changes say nothing about the inputs.
_BOOKKEEPING = (":(exclude,glob)**/dvc.lock", ":(exclude,glob)**/.gitignore")


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None


def git_state(folder: str | Path, pathspecs: tuple[str, ...] = ()) -> str:
    """``clean`` or ``dirty`` for the git working tree holding ``folder`` (only ``pathspecs``
    of it when given), or ``not a git repository``."""
    folder = Path(folder)
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return NO_GIT
    status = _git(Path(top.stdout.strip()), "status", "--porcelain", "--untracked-files=no",
                  "--", *(pathspecs or (".",)), *_BOOKKEEPING)
    if status is None or status.returncode != 0:
        return NO_GIT
    return DIRTY if status.stdout.strip() else CLEAN


@lru_cache(maxsize=1)
def _factprobe_root() -> Path:
    return Path(__file__).resolve().parents[2]


def factprobe_tree_state() -> str:
    """The state of factprobe's own code: a checkout (an editable install) is clean or dirty;
    an installed wheel is no git repository."""
    root = _factprobe_root()
    if not (root / ".git").exists() or not (root / "builders").is_dir():
        return NO_GIT
    return git_state(root, _CODE)


def build_record() -> dict:
    return {"factprobe_version": factprobe_version(), "factprobe_tree": factprobe_tree_state(),
            "work_tree": git_state(Path.cwd())}


def dataset_input(folder: Path, manifest: Mapping[str, Any]) -> dict:
    """What a dataset built from another records about it (see the module docstring). A
    dataset built before provenance was recorded passes on its manifest's ``source``."""
    prov = manifest.get("provenance")
    if not isinstance(prov, dict):
        prov = {"source": dict(manifest.get("source") or {})}
    return {"dataset": manifest.get("name"), "kind": manifest.get("kind"),
            "sha256": {p.name: file_sha256(p) for p in sorted(Path(folder).glob("*.parquet"))},
            "provenance": prov}


def input_of(inp: Any) -> dict | None:
    """:func:`dataset_input` of an opened input (a :class:`factprobe.builders.inputs.InputDataset`,
    not imported here: this module sits below the input resolver, which pulls in the Hub
    reader); None for an optional input not given."""
    return None if inp is None else dataset_input(inp.folder, inp.manifest)


def make_provenance(source: Mapping[str, Any] | None = None,
                    inputs: Mapping[str, Mapping[str, Any] | None] | None = None) -> dict:
    """The ``provenance`` of a new dataset: this build, what it read directly (``source``) and
    the datasets it read (``inputs``: role -> :func:`dataset_input`; None entries are dropped)."""
    out: dict[str, Any] = {"build": build_record()}
    if source:
        out["source"] = dict(source)
    kept = {role: dict(v) for role, v in (inputs or {}).items() if v}
    if kept:
        out["inputs"] = kept
    return out


def walk(prov: Mapping[str, Any], path: tuple[str, ...] = ()
         ) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Every step of a provenance tree, depth first, with the roles that lead to it.

    >>> leaf = {"source": {"sha256": "ab"}}
    >>> tree = {"inputs": {"facts": {"provenance": {"inputs": {"facts": {"provenance": leaf}}}}}}
    >>> [(p, s.get("source")) for p, s in walk(tree)]
    [((), None), (('facts',), None), (('facts', 'facts'), {'sha256': 'ab'})]
    """
    yield path, prov
    for role, entry in sorted((prov.get("inputs") or {}).items()):
        sub = entry.get("provenance") if isinstance(entry, dict) else None
        if isinstance(sub, dict):
            yield from walk(sub, (*path, role))


def sources(prov: Mapping[str, Any]) -> list[dict]:
    """Every ``source`` record in the tree (graph files, endpoints, template files...)."""
    return [dict(step["source"]) for _, step in walk(prov) if isinstance(step.get("source"),
                                                                           dict)]


def facts_root(prov: Mapping[str, Any]) -> dict:
    """The source at the bottom of the facts lineage (following ``inputs.facts``): where the
    facts, and so the license and the language, came from."""
    step = prov
    while isinstance((step.get("inputs") or {}).get("facts"), dict):
        nxt = step["inputs"]["facts"].get("provenance")
        if not isinstance(nxt, dict):
            break
        step = nxt
    src = step.get("source") if isinstance(step.get("source"), dict) else {}
    while isinstance(src.get("facts_source"), dict):  # a dataset from before provenance
        src = src["facts_source"]
    return dict(src)
