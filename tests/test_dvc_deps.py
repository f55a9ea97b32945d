"""Each DVC stage depends on the code it runs, and only on that (issue: editing the report must
not rerun model passes; editing a backend must not retrain the planted models).

The closure is static: every ``import`` / ``from ... import`` in a module, function-level ones
included (factprobe imports heavy code lazily), followed through first-party modules.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from factprobe.evaluators.methods import METHODS
from tests.packages import modules

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("factprobe", "builders", "probes", "evaluators")   # first parts of dep paths
MODULES = modules()

# What each stage's command runs: its CLI module (whose function-level imports serve other
# sub-commands, so only its module-level imports are followed) and the modules doing the work.
ENTRIES = {
    "facts": ("factprobe.cli.build", ["factprobe.builders.datasets.build_facts"]),
    "aliases": ("factprobe.cli.build", ["factprobe.builders.datasets.aliases"]),
    "mc": ("factprobe.cli.build", ["factprobe.builders.datasets.mc"]),
    "nobel": ("factprobe.cli.build", ["factprobe.builders.datasets.nobel_source"]),
    "templates": ("factprobe.cli.templates", ["factprobe.builders.templates.paraphrase"]),
    "misprimes": ("factprobe.cli.templates", ["factprobe.builders.datasets.misprimes"]),
    "multiprompt": ("factprobe.cli.templates", ["factprobe.builders.datasets.multiprompt"]),
    "fktc": ("factprobe.cli.templates", ["factprobe.builders.datasets.fktc"]),
    "plant": ("factprobe.cli.plant", ["factprobe.probes.planting.plant"]),
    "plant-masked": ("factprobe.cli.plant", ["factprobe.probes.planting.plant"]),
    **{f"eval-{m}": ("factprobe.cli.evaluate", ["factprobe.cli.evaluate"]) for m in METHODS},
    "report": ("factprobe.cli.report", ["factprobe.evaluators.report.build"]),
}
# Code a stage must not depend on: the point of fine-grained deps (a report change reruns no
# model pass, a backend change retrains no planted model).
MUST_NOT = {
    "plant": ["probes/backends", "probes/engine", "evaluators/report", "evaluators/metrics"],
    "plant-masked": ["probes/backends", "probes/engine", "evaluators/report",
                     "evaluators/metrics"],
    **{f"eval-{m}": ["evaluators/report", "builders/sources", "builders/publish/card.py"]
       for m in METHODS},
    "facts": ["probes", "evaluators/report", "evaluators/metrics"],
    "mc": ["probes", "evaluators/report", "evaluators/metrics"],
    "report": ["probes/backends", "probes/engine"],
}


def module_file(name: str) -> Path | None:
    return MODULES.get(name)


@lru_cache(maxsize=None)
def imports_of(name: str, top_level_only: bool = False) -> frozenset[str]:
    path = module_file(name)
    if path is None:
        return frozenset()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)   # submodules imported by name
    out = set()
    for m in found:
        if module_file(m) is not None:
            out.add(m)
            parts = m.split(".")   # importing a.b.c runs a/__init__ and a/b/__init__ too
            out.update(".".join(parts[:i]) for i in range(1, len(parts)) if module_file(".".join(parts[:i])))
    return frozenset(out)


def closure(cli: str, entries: list[str]) -> set[Path]:
    seen, todo = set(), list(entries) + list(imports_of(cli, top_level_only=True))
    seen_cli = {cli}
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(imports_of(m))
    return {module_file(m).relative_to(ROOT) for m in seen | seen_cli if module_file(m)}


def stage_deps() -> dict[str, list[str]]:
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    out = {}
    for name, st in stages.items():
        body = st.get("do", st)
        out[name] = [d for d in body.get("deps", []) if not d.startswith("${")
                     and d.split("/")[0] in PACKAGES]
    return out


def trivial(path: Path) -> bool:
    """A package __init__ with nothing but a docstring, ``__future__`` imports and functions
    (``factprobe/__init__`` names the library API lazily, PEP 562): nothing runs at import,
    so no behaviour to depend on."""
    body = ast.parse((ROOT / path).read_text()).body
    return path.name == "__init__.py" and all(
        isinstance(n, ast.FunctionDef)
        or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        or (isinstance(n, ast.ImportFrom) and n.module == "__future__")
        or (isinstance(n, (ast.Assign, ast.AnnAssign)) and _literal(n.value))
        for n in body)


def _literal(node) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def covered(path: Path, deps: list[str]) -> bool:
    if trivial(path):
        return True
    return any(str(path) == d or str(path).startswith(d.rstrip("/") + "/") for d in deps)


@pytest.mark.parametrize("stage", sorted(ENTRIES))
def test_stage_depends_on_all_the_code_it_runs(stage):
    deps = stage_deps()[stage]
    cli, entries = ENTRIES[stage]
    missing = sorted(str(p) for p in closure(cli, entries) if not covered(p, deps))
    assert not missing, f"stage {stage} runs code its deps do not list: {missing}"


@pytest.mark.parametrize("stage", sorted(MUST_NOT))
def test_stage_does_not_depend_on_unrelated_code(stage):
    deps = stage_deps()[stage]
    for forbidden in MUST_NOT[stage]:
        assert not any(d == forbidden or d.startswith(forbidden + "/") or forbidden.startswith(d.rstrip("/") + "/")
                       or forbidden == d for d in deps), f"{stage} depends on {forbidden}"


def test_every_stage_with_code_is_checked():
    assert set(stage_deps()) == set(ENTRIES)


def test_each_eval_stage_reads_only_its_own_params():
    """Changing one method's settings must not rerun another method's evaluation."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    evals = {n: st["do"] for n, st in stages.items() if n.startswith("eval-")}
    assert len(evals) == 5
    for name, body in evals.items():
        key = name.removeprefix("eval-").replace("-", "_")
        assert body["params"] == [f"eval.{key}"], name
        assert f"${{eval.{key}." in body["cmd"], name
