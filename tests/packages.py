"""The package's modules, read from setup.py's folder map: the doctests and the layer test walk
them by import name (``factprobe.builders.datasets.mc``), never by folder, so a module is imported
once under the name users import it by."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def folders() -> dict[str, Path]:
    """setup.py's ``FOLDERS``: import name -> folder."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "FOLDERS":
            return {k: ROOT / v for k, v in ast.literal_eval(node.value).items()}
    raise AssertionError("setup.py defines no FOLDERS")


def modules() -> dict[str, Path]:
    """Every module of the package: import name -> file, sorted by name."""
    found: dict[str, Path] = {}
    roots = folders()
    for name, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if "__pycache__" in rel.parts or rel.name == "__main__" or any(
                    not (folder / Path(*rel.parts[:i]) / "__init__.py").exists()
                    for i in range(1, len(rel.parts))):
                continue  # not inside a package (scaffold templates, stray scripts)
            full = ".".join([name, *parts])
            # a folder mapped elsewhere is walked under its own name
            if not any(full.startswith(other + ".") and other != name and other.startswith(name)
                       for other in roots):
                found[full] = path
    return dict(sorted(found.items()))
