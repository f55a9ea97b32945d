"""Each method's declared needs (``Probe.needs``) cover what its plans really ask of a backend, on
the sample's datasets at the shipped pipeline's settings: the list a server that can
only generate is told it can run comes from these declarations, so a wrong one would name a
method that then fails, or leave out one that runs."""
from __future__ import annotations

import shlex

import pytest

from factprobe.cli.app import build_parser
from factprobe.evaluation import runnable_methods
from factprobe.evaluators.methods import METHODS, load_tables
from factprobe.probes.requests import CAPABILITIES
from tests.planted.conftest import TEMPLATES

DECLARED = [n for n, m in METHODS.items() if m.probe.needs is not None]


def test_the_shipped_methods_declare_their_needs():
    assert {n for n, m in METHODS.items() if m.probe.pipeline is not None} <= set(DECLARED)
    for name in DECLARED:
        assert METHODS[name].probe.needs <= CAPABILITIES, name


@pytest.mark.parametrize("name", DECLARED)
def test_declared_needs_cover_the_plan(name, sample_datasets):
    probe = METHODS[name].probe
    args = shlex.split(probe.pipeline.args.replace("data/templates", str(TEMPLATES))) \
        if probe.pipeline else []
    folder = sample_datasets / f"sample-{probe.pipeline.dataset if probe.pipeline else 'mc'}"
    parsed = build_parser().parse_args(["eval", name, "--dataset", str(folder), "--model", "m",
                                        "--out", "o", *args])
    plan = probe.plan(load_tables(folder, probe.tables, name), probe.from_args(parsed))
    assert plan.size() > 0
    assert plan.needs() <= probe.needs, (name, sorted(plan.needs()), sorted(probe.needs))


def test_a_generate_only_backend_is_told_what_it_can_run():
    only = runnable_methods(frozenset({"generate"}))
    assert only == [n for n in DECLARED if METHODS[n].probe.needs == {"generate"}]
    assert "belief-icl" in only and "zp-lke" not in only
    assert set(runnable_methods(frozenset(CAPABILITIES))) == set(DECLARED)
