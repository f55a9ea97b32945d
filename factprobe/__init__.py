"""factprobe: factual-knowledge probing datasets from knowledge graphs, and the probing methods
of ZP-LKE, BELIEF and MONITOR.

From Python (docs/library.md)::

    import factprobe
    run = factprobe.evaluate("zp-lke", "data/datasets/sample-mc", "data/models/planted",
                             out="runs/zp-lke")
    print(run.metrics["accuracy_at_k"]["0.0"]["value"])

The names below load :mod:`factprobe.api` when first used (PEP 562): ``import factprobe`` and
every ``import factprobe.<module>`` (which runs this file first) import nothing else.
"""
from __future__ import annotations

__all__ = ["Run", "build", "evaluate", "load_run", "report"]


def __getattr__(name: str):
    if name in __all__:
        # by name, not an import statement: no dvc stage runs the API, and the stages' code
        # closures (tests/test_dvc_deps.py) follow import statements
        import importlib
        return getattr(importlib.import_module("factprobe.api"), name)
    raise AttributeError(f"module 'factprobe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
