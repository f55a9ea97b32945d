"""The flags only the graph sources read (wikidata, sparql, rdf: builders/sources/table.py
names this module as their ``flags``): the SPARQL page size and namespace prefixes.

A flags module of a source gives ``NAME`` (its key in :attr:`FactsConfig.options`),
``add_flags(parser)`` (one argument group; building the parser must stay light: no pandas, no
client) and ``read_flags(args)`` (a typed options value with ``params()``, what the dataset's
manifest records of them).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from factprobe.core.argtypes import positive

NAME = "graph"



@dataclass(frozen=True)
class GraphOptions:
    page_size: int = 10_000                          # rows per SPARQL request (LIMIT/OFFSET)
    prefixes: dict = field(default_factory=dict)     # NAME -> IRI, for relation names and ids

    def params(self) -> dict:
        return {"page_size": self.page_size, "prefixes": self.prefixes}


OPTIONS = GraphOptions


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("graph sources (wikidata, sparql, rdf)")
    g.add_argument("--page-size", type=positive, default=10_000, help="SPARQL page size")
    g.add_argument("--prefix", action="append", metavar="NAME=IRI",
                   help="a namespace prefix for relation names and ids (repeatable)")


def read_flags(args: argparse.Namespace) -> GraphOptions:
    from factprobe.builders.sources.iris import parse_prefix_args
    return GraphOptions(page_size=args.page_size, prefixes=parse_prefix_args(args.prefix))
