"""The built-in sources' readers: each takes the build's :class:`FactsConfig` and returns a
:class:`~factprobe.builders.datasets.facts.SourceResult` (or a context manager yielding one).
The sources table names them lazily, so what reads only the table (the dataset card, init,
the CLI's choices) imports no parser or client."""
from __future__ import annotations

import contextlib
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.config import FactsConfig


def graph_endpoint(cfg: FactsConfig):
    """(endpoint, prefixes, source tag) of a graph source: an HTTP endpoint (wikidata, sparql)
    or a local RDF file loaded in process (rdf)."""
    from factprobe.core.retry import RetryPolicy
    from factprobe.core.transport import MB
    from factprobe.builders.sources.graph_flags import NAME, GraphOptions
    from factprobe.builders.sources.iris import WELL_KNOWN
    from factprobe.builders.sources.sparql import WIKIDATA_ENDPOINT, HttpEndpoint, LocalGraph
    own = cfg.option(NAME, GraphOptions())
    if cfg.source == "rdf":
        endpoint = LocalGraph(cfg.path)
        return (endpoint, {**WELL_KNOWN, **endpoint.prefixes, **own.prefixes},
                f"rdf:{Path(cfg.path).name}")
    url = cfg.endpoint or WIKIDATA_ENDPOINT
    net = cfg.network
    endpoint = HttpEndpoint(url, cache_dir=net.cache_dir, contact=net.contact,
                            timeout_s=net.timeout_s, policy=RetryPolicy(retries=net.retries),
                            refresh=net.refresh, max_bytes=int(net.max_answer_mb * MB))
    return (endpoint, dict(own.prefixes),
            "wikidata" if cfg.source == "wikidata" else f"sparql:{endpoint.shown}")


def graph(cfg: FactsConfig, opened=None) -> SourceResult:
    """wikidata, sparql and rdf: SPARQL queries over an HTTP endpoint or a local RDF file
    (``opened``: what :func:`graph_endpoint` returned, when the caller asked it already)."""
    from factprobe.builders.sources.graph import PREDICATES_QUERY, GraphQueryConfig, GraphReader
    from factprobe.builders.sources.graph_flags import NAME, GraphOptions
    from factprobe.builders.sources.iris import WELL_KNOWN, compact
    own = cfg.option(NAME, GraphOptions())
    endpoint, prefixes, tag = opened or graph_endpoint(cfg)
    reader = GraphReader(endpoint, GraphQueryConfig(
        lang=cfg.lang, page_size=own.page_size, limit=cfg.limit, date_format=cfg.date_format,
        prefixes=prefixes, subjects=cfg.subjects), source_tag=tag,
        wikidata=cfg.source == "wikidata",
        progress=cfg.progress)
    relations = cfg.relations
    if relations is None:
        if cfg.source != "rdf":
            raise UserError(f"--relations all works for rdf, trex and csv sources; name the "
                            f"relations for {cfg.source} (e.g. --relations P36,P37)")
        res = endpoint.select(PREDICATES_QUERY.replace(" LIMIT 40", ""), ("p",))
        skip = {WELL_KNOWN["rdf"] + "type"}
        relations = [compact(b["p"]["value"], prefixes)
                     for b in res["results"]["bindings"] if b["p"]["value"] not in skip]
    return reader.read(list(relations))


def trex(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.trex import read_trex
    return read_trex(cfg.path, list(cfg.relations) if cfg.relations else None,
                     limit=cfg.limit, skip_bad=cfg.skip_bad, progress=cfg.progress)


def csv(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.csv_triples import read_csv
    return read_csv(cfg.path, list(cfg.relations) if cfg.relations else None,
                    limit=cfg.limit, skip_bad=cfg.skip_bad, progress=cfg.progress)


def wikidata_dump(cfg: FactsConfig) -> contextlib.AbstractContextManager:
    from factprobe.builders.sources.wikidata_dump.flags import NAME
    from factprobe.builders.sources.wikidata_dump.options import DumpOptions
    from factprobe.builders.sources.wikidata_dump.to_facts import facts_from_dump
    return facts_from_dump(cfg.path, cfg.relations, lang=cfg.lang, limit=cfg.limit,
                           date_format=cfg.date_format, skip_bad=cfg.skip_bad,
                           options=cfg.option(NAME, DumpOptions()), progress=cfg.progress)


def lama(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.lama import read_lama
    return read_lama(cfg.path, _asked(cfg), limit=cfg.limit, skip_bad=cfg.skip_bad)


def popqa(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.popqa import read_popqa
    return read_popqa(cfg.path, _asked(cfg), limit=cfg.limit, skip_bad=cfg.skip_bad)


def entityquestions(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.entityquestions import read_entityquestions
    return read_entityquestions(cfg.path, _asked(cfg), limit=cfg.limit, skip_bad=cfg.skip_bad)


def bear(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.bear import read_bear
    return read_bear(cfg.path, _asked(cfg), limit=cfg.limit, skip_bad=cfg.skip_bad)


def pararel(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.pararel import read_pararel
    return read_pararel(cfg.path, _asked(cfg), limit=cfg.limit, skip_bad=cfg.skip_bad)


def _asked(cfg: FactsConfig) -> list[str] | None:
    return list(cfg.relations) if cfg.relations else None
