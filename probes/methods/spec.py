"""What each probe module says about its method: :class:`Probe`. The table of methods
(:mod:`factprobe.evaluators.methods`) pairs each probe with its metrics."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, TYPE_CHECKING

from factprobe.probes.plan import Plan

if TYPE_CHECKING:  # annotations only: building the CLI's parser imports this module
    import pandas as pd

BACKENDS = ("hf-causal", "hf-masked")


@dataclass(frozen=True)
class Pipeline:
    """The method's stage in the DVC pipelines: the shipped ``dvc.yaml`` / ``params.yaml`` and
    ``factprobe init``'s. factprobe.scaffold.stages writes (and tests check) both from these."""
    dataset: str                 # the dataset it reads: the suffix after the sample's/graph's
    #                              name (mc: data/datasets/sample-mc, <name>-mc under init)
    args: str = ""               # the shipped params.yaml's eval.<key>.args
    init_args: str = ""          # init's params.yaml args ({{holes}} are init's sizes)
    note: str = ""               # a comment line above the shipped params entry
    # init only: flags before --out, and the deps and params they bring
    flags: str = ""
    deps: tuple[str, ...] = ()
    params: tuple[str, ...] = ()


@dataclass(frozen=True)
class Probe:
    name: str                         # the `factprobe eval NAME` subcommand and run.json's method
    summary: str                      # one line for `factprobe eval --help`
    examples: str                     # command lines shown under `factprobe eval NAME --help`
    config: type                      # the method's config dataclass (run.json method_config)
    tables: tuple[str, ...]           # tables of the dataset folder the plan reads
    # (dataset tables by name, config) -> the requests to run
    plan: Callable[[dict[str, pd.DataFrame], Any], Plan]
    # adds the method's own flags (an argument group) to its subcommand's parser
    add_flags: Callable[[argparse.ArgumentParser], None]
    # parsed flags -> config; a UserError for flags that do not go together
    from_args: Callable[[argparse.Namespace], Any]
    # the paper: a key of factprobe.builders.publish.citations.PAPERS ("" for a method without one)
    citation: str = ""
    backend: str = "hf-causal"        # the model kind: hf-causal or hf-masked
    pipeline: Pipeline | None = None  # its DVC stage; None: no stage in the pipelines
    # what a dataset card (factprobe publish) says of the method and its paper, in the cards of
    # the dataset kinds it serves (reads, or whose construction follows the paper); "" leaves
    # it to another method of the same paper (the prompt baselines: ZP-LKE's line)
    card: str = ""
    serves: tuple[str, ...] = ()
    # what its plans ask of a backend at the default settings (names of
    # factprobe.probes.requests.CAPABILITIES; tests/probes/methods/test_needs.py checks them
    # against real plans): a loaded backend that offers less, such as a server without prompt
    # log-probabilities, is refused with the methods whose needs it has. None: not declared
    needs: frozenset[str] | None = None

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"{self.name}: backend {self.backend!r} is not one of {BACKENDS}")
