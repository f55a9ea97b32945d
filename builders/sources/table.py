"""The facts sources of ``factprobe build facts --source NAME``: one explicit table.

Each entry names the reader (a function of the build's :class:`FactsConfig` that returns a
:class:`~factprobe.builders.datasets.facts.SourceResult`, or a context manager yielding one when the
source holds temporary files while it is read) and the flag the source reads its input from.
The CLI's ``--source`` choices, the flag checks and the dispatch all come from this table, so a
new source is its module plus one entry here (see docs/extending.md, "Adding a source").

Readers import their module when called: listing the sources loads no parser or client.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

from factprobe.core.errors import UserError

if TYPE_CHECKING:  # the builder imports this table; the type is for readers only
    from factprobe.builders.sources.config import FactsConfig
    from factprobe.builders.datasets.facts import SourceResult


@dataclass(frozen=True)
class Source:
    """A facts source: how to read it, and from which flag.

    ``reads``: ``"path"`` (a file, folder or id: ``--path``) or ``"endpoint"`` (a URL:
    ``--endpoint``). ``needs``: what the flag takes, for the line that says it is missing
    (``--source NAME needs --FLAG NEEDS``); None when the flag is optional (wikidata has a
    default endpoint). ``strict``: the other flag is refused rather than ignored.
    """
    read: Callable[[FactsConfig], SourceResult | contextlib.AbstractContextManager]
    reads: Literal["path", "endpoint"]
    needs: str | None
    strict: bool = True


def _graph(cfg: FactsConfig) -> SourceResult:
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
        prefixes=prefixes), source_tag=tag, wikidata=cfg.source == "wikidata",
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


def _trex(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.trex import read_trex
    return read_trex(cfg.path, list(cfg.relations) if cfg.relations else None,
                     limit=cfg.limit, skip_bad=cfg.skip_bad, progress=cfg.progress)


def _csv(cfg: FactsConfig) -> SourceResult:
    from factprobe.builders.sources.csv_triples import read_csv
    return read_csv(cfg.path, list(cfg.relations) if cfg.relations else None,
                    limit=cfg.limit, skip_bad=cfg.skip_bad, progress=cfg.progress)


def _wikidata_dump(cfg: FactsConfig) -> contextlib.AbstractContextManager:
    from factprobe.builders.sources.wikidata_dump.to_facts import facts_from_dump
    return facts_from_dump(cfg.path, cfg.relations, lang=cfg.lang, limit=cfg.limit,
                           date_format=cfg.date_format, skip_bad=cfg.skip_bad,
                           options=cfg.dump, progress=cfg.progress)


# name -> source; the order is the order of --source's choices.
SOURCES: dict[str, Source] = {
    "wikidata": Source(_graph, "endpoint", None),
    "sparql": Source(_graph, "endpoint", "URL"),
    "rdf": Source(_graph, "path", "FILE (Turtle, N-Triples, RDF/XML...)"),
    "trex": Source(_trex, "path", "(a folder of P<id>.jsonl files, a local copy of "
                                  "relbert/t_rex, or a Hub dataset id)"),
    "csv": Source(_csv, "path", "FILE.csv (columns subject, relation, object)"),
    "wikidata-dump": Source(_wikidata_dump, "path",
                            "(latest-all.json.bz2 or latest-truthy.nt.bz2)", strict=False),
}


def _readers_of(flag: str, sources: dict[str, Source]) -> str:
    """'rdf, trex and csv': the strict sources reading ``flag``, those requiring it first."""
    names = sorted((n for n, s in sources.items() if s.reads == flag and s.strict),
                   key=lambda n: sources[n].needs is None)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def source_for(name: str, path: str | None, endpoint: str | None,
               sources: dict[str, Source] = SOURCES) -> Source:
    """The source ``name``, once its flags are right: a flag it would ignore is a mistake worth
    a line, not a silent surprise, and a missing one is named.

    >>> source_for("rdf", None, "http://127.0.0.1:9/q")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: --endpoint is for the sparql and wikidata sources; --source rdf reads --path
    """
    if name not in sources:
        raise UserError(f"unknown --source {name!r}; choose one of {', '.join(sources)}")
    source = sources[name]
    given = {"path": path, "endpoint": endpoint}
    other = "endpoint" if source.reads == "path" else "path"
    if source.strict and given[other]:
        if other == "path":
            raise UserError(f"--path is for the {_readers_of('path', sources)} sources; "
                            f"--source {name} reads from --endpoint")
        raise UserError(f"--endpoint is for the {_readers_of('endpoint', sources)} sources; "
                        f"--source {name} reads --path")
    if source.needs is not None and not given[source.reads]:
        raise UserError(f"--source {name} needs --{source.reads} {source.needs}")
    return source
