"""Where ``factprobe build nobel`` reads its laureates from: Wikidata's endpoint, another SPARQL
endpoint, a local RDF file, or Wikidata's JSON dump. The CLI parses the flags into a
:class:`NobelSource`; which source that means, and what each one needs, is decided here.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from factprobe.core.errors import UserError
from factprobe.core.network import NetworkOptions
from factprobe.builders.datasets.nobel_config import NobelConfig
from factprobe.builders.sources.table import SOURCES

# the sources of `build facts` that hold laureates with Wikidata's model (or one given by flags)
NOBEL_SOURCES = tuple(name for name, s in SOURCES.items() if s.nobel)


@dataclass(frozen=True)
class NobelSource:
    source: str | None = None            # None: chosen from the flags (see choose_source)
    path: str | None = None
    endpoint: str | None = None
    network: NetworkOptions = field(default_factory=NetworkOptions)
    # each source's own options by its flags module's NAME (Source.flags), as for build facts
    options: Mapping[str, Any] = field(default_factory=dict)
    skip_bad: bool = False               # wikidata-dump: skip and count malformed lines


def choose_source(source: str | None, path: str | None, endpoint: str | None) -> str:
    """The source asked for, or the one the flags imply: sparql with an endpoint, rdf with a
    path (wikidata-dump when it is a compressed or JSON dump), else wikidata.

    >>> choose_source(None, None, "http://127.0.0.1:7878/query")
    'sparql'
    >>> choose_source(None, "data/kg/sample.ttl", None)
    'rdf'
    >>> choose_source("rdf", "data/kg/sample.ttl", "http://127.0.0.1:7878/query")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: --source rdf reads --path; drop --endpoint
    """
    chosen = source or ("sparql" if endpoint else "rdf" if path else "wikidata")
    if not source and path:
        from factprobe.builders.sources.wikidata_dump.stream import is_dump_path
        chosen = "wikidata-dump" if is_dump_path(path) else chosen
    reads_path = chosen in SOURCES and SOURCES[chosen].reads == "path"
    if reads_path and endpoint or not reads_path and path:
        raise UserError(f"--source {chosen} reads {'--path' if reads_path else '--endpoint'}"
                        f"; drop {'--endpoint' if reads_path else '--path'}")
    return chosen


def build_nobel_from(src: NobelSource, cfg: NobelConfig) -> Path:
    """Build the Nobel dataset from ``src`` into ``cfg.out``."""
    from factprobe.core.retry import RetryPolicy
    from factprobe.core.transport import MB
    from factprobe.builders.datasets.nobel import build_nobel
    from factprobe.builders.sources.iris import WELL_KNOWN
    from factprobe.builders.sources.sparql import WIKIDATA_ENDPOINT, HttpEndpoint, LocalGraph
    source = choose_source(src.source, src.path, src.endpoint)
    own = SOURCES[source].with_default_options(src.options)[SOURCES[source].flags_module().NAME]
    if source == "wikidata-dump":
        from factprobe.builders.sources.wikidata_dump.to_nobel import nobel_from_dump
        if not src.path:
            raise UserError("--source wikidata-dump needs --path latest-all.json.bz2")
        return nobel_from_dump(src.path, cfg, own, skip_bad=src.skip_bad)
    cfg = replace(cfg, page_size=own.page_size)
    if source == "rdf":
        if not src.path:
            raise UserError("--source rdf needs --path FILE")
        endpoint = LocalGraph(src.path)
        prefixes = {**WELL_KNOWN, **endpoint.prefixes, **own.prefixes}
        tag = f"rdf:{Path(src.path).name}"
    else:
        url = src.endpoint or (WIKIDATA_ENDPOINT if source == "wikidata" else None)
        if not url:
            raise UserError("--source sparql needs --endpoint URL")
        net = src.network
        endpoint = HttpEndpoint(url, cache_dir=net.cache_dir, contact=net.contact,
                                timeout_s=net.timeout_s, policy=RetryPolicy(retries=net.retries),
                                refresh=net.refresh, max_bytes=int(net.max_answer_mb * MB))
        prefixes = {**WELL_KNOWN, **own.prefixes}
        tag = "wikidata" if source == "wikidata" else f"sparql:{endpoint.shown}"
    return build_nobel(endpoint, cfg, prefixes, tag)
