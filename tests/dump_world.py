"""Shared by the dump tests: the fixture knowledge written as dumps, and helpers that build facts
from a dump or from a SPARQL endpoint serving the same knowledge."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from factprobe.builders.datasets.build_facts import FactsConfig, build_facts
from factprobe.builders.sources.wikidata_dump import DumpOptions
from factprobe.core.network import NetworkOptions
from tests import wikidata_dump_fixture as fx

RELATIONS = ("P36", "P37", "P19", "P569", "P1082", "P1448", "P856", "P214", "P6254")


def write_world(folder: Path, entities=None) -> dict[str, Path]:
    return fx.write(folder, fx.ENTITIES if entities is None else entities)


def dump_facts(path: Path, out: Path, work: Path, relations=RELATIONS, **kw) -> Path:
    opts = kw.pop("options", None) or DumpOptions(work_root=str(work), workers=0)
    return build_facts(FactsConfig(source="wikidata-dump", path=str(path), relations=relations,
                                   out=str(out), progress=False,
                                   options={"wikidata-dump": opts}, **kw))


def sparql_facts(url: str, out: Path, cache: Path, relations=RELATIONS, **kw) -> Path:
    return build_facts(FactsConfig(source="sparql", endpoint=url, relations=relations,
                                   out=str(out), network=NetworkOptions(cache_dir=str(cache)),
                                   progress=False, **kw))


def table(folder: Path, name: str, drop_source: bool = True):
    t = pq.read_table(folder / f"{name}.parquet")
    return t.drop(["source"]) if drop_source and "source" in t.column_names else t
