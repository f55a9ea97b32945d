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


def graph(cfg: FactsConfig) -> SourceResult:
    """wikidata, sparql and rdf: SPARQL queries over an HTTP endpoint or a local RDF file."""
    from factprobe.core.retry import RetryPolicy
    from factprobe.core.transport import MB
    from factprobe.builders.sources.graph import PREDICATES_QUERY, GraphQueryConfig, GraphReader
    from factprobe.builders.sources.iris import WELL_KNOWN, compact
    from factprobe.builders.sources.sparql import WIKIDATA_ENDPOINT, HttpEndpoint, LocalGraph
    if cfg.source == "rdf":
        endpoint = LocalGraph(cfg.path)
        prefixes = {**WELL_KNOWN, **endpoint.prefixes, **cfg.prefixes}
        tag = f"rdf:{Path(cfg.path).name}"
    else:
        url = cfg.endpoint or WIKIDATA_ENDPOINT
        endpoint = HttpEndpoint(url, cache_dir=cfg.cache_dir, contact=cfg.contact,
                                timeout_s=cfg.timeout_s, policy=RetryPolicy(retries=cfg.retries),
                                refresh=cfg.refresh, max_bytes=int(cfg.max_answer_mb * MB))
        prefixes = dict(cfg.prefixes)
        tag = "wikidata" if cfg.source == "wikidata" else f"sparql:{endpoint.shown}"
    reader = GraphReader(endpoint, GraphQueryConfig(
        lang=cfg.lang, page_size=cfg.page_size, limit=cfg.limit, date_format=cfg.date_format,
        prefixes=prefixes, subjects=cfg.subjects), source_tag=tag, wikidata=cfg.source == "wikidata",
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
    from factprobe.builders.sources.wikidata_dump.to_facts import facts_from_dump
    return facts_from_dump(cfg.path, cfg.relations, lang=cfg.lang, limit=cfg.limit,
                           date_format=cfg.date_format, skip_bad=cfg.skip_bad,
                           options=cfg.dump, progress=cfg.progress)
