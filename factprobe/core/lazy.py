"""A function named by its module and name, imported when first called: the explicit tables
(backend kinds, facts sources) name their heavy code without importing it -- and without the
import statement that would make everything that reads the table depend on it."""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Lazy:
    """``module.name``, imported when first called (a backend's loader, a source's reader). A
    plain value, so it pickles (a Ray replica receives the loader and imports it there)."""

    module: str
    name: str

    def __call__(self, *args, **kwargs):
        return getattr(importlib.import_module(self.module), self.name)(*args, **kwargs)
