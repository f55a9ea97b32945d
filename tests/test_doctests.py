"""Every docstring example in the package, run by import name (one test per docstring).

pytest's ``--doctest-modules`` imports a file by its folder (``builders.datasets.mc``), which
for folders mapped under ``factprobe`` would import a second copy of each module; this runs the
same examples with pytest's default flags (ELLIPSIS) on the modules users import."""
from __future__ import annotations

import doctest
import importlib

import pytest

from tests.packages import modules


def _examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    cases = []
    for name in modules():
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            if test.examples:
                cases.append(pytest.param(test, id=test.name))
    return sorted(cases, key=lambda p: p.id)


@pytest.mark.parametrize("test", _examples())
def test_docstring_examples(test: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out: list[str] = []
    result = runner.run(test, out=out.append, clear_globs=False)
    assert result.failed == 0, "".join(out)
