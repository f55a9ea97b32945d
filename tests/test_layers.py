"""The package's import graph, read from every module's source (imports inside functions and
under ``TYPE_CHECKING`` included): no circle, and no import from a lower layer to a higher one.

Layers, lowest first: the kernel ``factprobe.core`` (errors, tables, markers, swap, provenance)
that every layer may use; ``factprobe.builders`` (graphs -> tables); ``factprobe.probes``
(tables -> model requests and numbers); ``factprobe.evaluators`` (numbers -> metrics, reports);
the app layer on top: the command line (``factprobe.cli``), ``factprobe init``'s scaffold, the
exports and the library API (``factprobe`` itself)."""
from __future__ import annotations

import ast

import pytest

from tests.packages import modules

LAYERS = ("factprobe.core", "factprobe.builders", "factprobe.probes", "factprobe.evaluators")
APP = len(LAYERS)


def layer(module: str) -> int:
    for i, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return APP


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports() -> dict[str, set[str]]:
    """module -> the package modules it imports (a name imported from a package counts as an
    import of the submodule when one of that name exists)."""
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    deps.add(t)
        graph[name] = deps
    return graph


def test_the_package_is_read_whole():
    mods = modules()
    assert "factprobe.core.errors" in mods and "factprobe.cli.app" in mods
    assert not [m for m in mods if m.split(".")[1:2] == ["core"] and "builders" in m]


def test_no_import_runs_up_a_layer():
    bad = sorted(f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
                 for a, deps in imports().items() for b in deps
                 # the package's own face (factprobe/__init__) may name the API lazily
                 if layer(b) > layer(a) and a != "factprobe")
    assert not bad, "\n".join(bad)


def test_the_command_line_sits_in_the_app_layer():
    graph = imports()
    cli = [m for m in graph if m.startswith("factprobe.cli")]
    assert cli and all(layer(m) == APP for m in cli)
    users = sorted(a for a, deps in graph.items() if layer(a) < APP
                   and any(d.startswith(("factprobe.cli", "factprobe.scaffold")) for d in deps))
    assert not users, users


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components (iterative: the graph is a few hundred nodes)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_circle():
    graph = imports()
    # a package's __init__ that hands on its submodules' names is not a circle with them
    for name in graph:
        graph[name] = {d for d in graph[name] if not name.startswith(d + ".")}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
])
def test_the_circle_finder_finds_circles(graph, expected):
    assert _cycles(graph) == expected
