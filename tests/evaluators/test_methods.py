"""The table of methods: each entry is consistent with itself and with what the CLI, the
report and the dataset cards read from it."""
from __future__ import annotations

import pytest

from factprobe.builders.publish.citations import PAPERS
from factprobe.evaluators.methods import METHODS

# the figures of factprobe.evaluators.report.plots a method can take part in
FIGURES = {"calibration", "accuracy_vs_examples", "accuracy_at_k", "monitor_vs_accuracy"}


@pytest.mark.parametrize("name", list(METHODS))
def test_entry(name):
    m = METHODS[name]
    assert m.name == name == m.probe.name == m.metrics.name
    assert m.probe.citation == "" or m.probe.citation in PAPERS    # "": a method without a paper
    assert "facts" in m.probe.tables
    assert m.metrics.main in m.metrics.headlines
    assert m.metrics.lower_is_better <= set(m.metrics.headlines)
    assert m.metrics.plots <= FIGURES
    assert m.probe.examples.endswith("\n") and f"factprobe eval {name} " in m.probe.examples


# the shipped methods' model kinds (a method added to the table needs no line here)
SHIPPED_BACKENDS = {"zp-lke": "hf-causal", "prompt": "hf-causal", "belief": "hf-masked",
                    "belief-icl": "hf-causal", "monitor": "hf-causal"}


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_names_a_backend_kind_of_the_table(name):
    from factprobe.probes.backends import KINDS
    backend = METHODS[name].probe.backend
    assert backend in KINDS
    assert backend == SHIPPED_BACKENDS.get(name, backend)


def test_the_shipped_methods_keep_their_model_kinds():
    assert {n: METHODS[n].probe.backend for n in SHIPPED_BACKENDS} == SHIPPED_BACKENDS


def test_run_json_names_an_unknown_method():
    from factprobe.core.errors import UserError
    from factprobe.evaluators.methods import method
    with pytest.raises(UserError) as err:
        method("x", "r/run.json")
    assert str(err.value) == (f"r/run.json: method 'x' is not one factprobe knows "
                              f"({', '.join(METHODS)})")
    assert list(METHODS)[:5] == ["zp-lke", "prompt", "belief", "belief-icl", "monitor"]
