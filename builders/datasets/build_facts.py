"""``factprobe build facts``: any source -> facts.parquet, relations.parquet, dataset.json."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from builders.core.errors import UserError
from builders.core.retry import RetryPolicy
from builders.core.tables import base_manifest, write_dataset
from builders.datasets.facts import SourceResult, assemble_facts
from builders.sources.iris import WELL_KNOWN, compact
from builders.sources.sparql import WIKIDATA_ENDPOINT, HttpEndpoint, LocalGraph
from builders.sources.wikidata_dump.options import DumpOptions

SOURCES = ("wikidata", "sparql", "rdf", "trex", "csv", "wikidata-dump")


@dataclass(frozen=True)
class FactsConfig:
    source: str
    relations: tuple[str, ...] | None          # None: every relation present
    out: str
    path: str | None = None
    endpoint: str | None = None
    limit: int | None = None
    lang: str = "en"
    page_size: int = 10_000
    date_format: str = "date"
    prefixes: dict = field(default_factory=dict)
    skip_bad: bool = False
    contact: str | None = None
    cache_dir: str | None = None
    refresh: bool = False
    timeout_s: float = 65.0
    retries: int = 3
    progress: bool = True
    dump: DumpOptions = field(default_factory=DumpOptions)   # how to read a wikidata-dump

    def manifest_params(self) -> dict:
        keep = ("source", "relations", "limit", "lang", "page_size", "date_format", "prefixes",
                "skip_bad")
        params = {k: v for k, v in asdict(self).items() if k in keep}
        params["relations"] = list(self.relations) if self.relations else "all"
        return params


def check_flags(cfg: FactsConfig) -> None:
    """A flag the source would ignore is a mistake worth a line, not a silent surprise."""
    if cfg.path and cfg.source in ("wikidata", "sparql"):
        raise UserError(f"--path is for the rdf, trex and csv sources; --source {cfg.source} "
                        f"reads from --endpoint")
    if cfg.endpoint and cfg.source in ("rdf", "trex", "csv"):
        raise UserError(f"--endpoint is for the sparql and wikidata sources; --source "
                        f"{cfg.source} reads --path")


def read_source(cfg: FactsConfig) -> SourceResult:
    from builders.sources.graph import PREDICATES_QUERY, GraphQueryConfig, GraphReader
    check_flags(cfg)
    if cfg.source in ("wikidata", "sparql", "rdf"):
        policy = RetryPolicy(retries=cfg.retries)
        if cfg.source == "rdf":
            if not cfg.path:
                raise UserError("--source rdf needs --path FILE (Turtle, N-Triples, RDF/XML...)")
            endpoint = LocalGraph(cfg.path)
            prefixes = {**WELL_KNOWN, **endpoint.prefixes, **cfg.prefixes}
            tag = f"rdf:{Path(cfg.path).name}"
        else:
            url = cfg.endpoint or (WIKIDATA_ENDPOINT if cfg.source == "wikidata" else None)
            if not url:
                raise UserError("--source sparql needs --endpoint URL")
            endpoint = HttpEndpoint(url, cache_dir=cfg.cache_dir, contact=cfg.contact,
                                    timeout_s=cfg.timeout_s, policy=policy, refresh=cfg.refresh)
            prefixes = dict(cfg.prefixes)
            tag = "wikidata" if cfg.source == "wikidata" else f"sparql:{url}"
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
    if cfg.source == "trex":
        from builders.sources.trex import read_trex
        if not cfg.path:
            raise UserError("--source trex needs --path (a folder of P<id>.jsonl files, a local "
                            "copy of relbert/t_rex, or a Hub dataset id)")
        return read_trex(cfg.path, list(cfg.relations) if cfg.relations else None,
                         limit=cfg.limit, skip_bad=cfg.skip_bad, progress=cfg.progress)
    if cfg.source == "csv":
        from builders.sources.csv_triples import read_csv
        if not cfg.path:
            raise UserError("--source csv needs --path FILE.csv (columns subject, relation, object)")
        return read_csv(cfg.path, list(cfg.relations) if cfg.relations else None,
                        limit=cfg.limit, skip_bad=cfg.skip_bad, progress=cfg.progress)
    raise UserError(f"unknown --source {cfg.source!r}; choose one of {', '.join(SOURCES)}")


def build_facts(cfg: FactsConfig) -> Path:
    if cfg.source == "wikidata-dump":
        from builders.sources.wikidata_dump.to_facts import facts_from_dump
        if not cfg.path:
            raise UserError("--source wikidata-dump needs --path (latest-all.json.bz2 or "
                            "latest-truthy.nt.bz2)")
        with facts_from_dump(cfg.path, cfg.relations, lang=cfg.lang, limit=cfg.limit,
                             date_format=cfg.date_format, skip_bad=cfg.skip_bad,
                             options=cfg.dump, progress=cfg.progress) as result:
            return write_facts(cfg, result)
    return write_facts(cfg, read_source(cfg))


def write_facts(cfg: FactsConfig, result: SourceResult) -> Path:
    if len(result.triples) == 0:
        raise UserError(f"the {cfg.source} source {cfg.path or cfg.endpoint or ''} holds no facts "
                        f"for the relations asked ({', '.join(cfg.relations or ['all'])}); "
                        f"check the input and --relations")
    facts, relations, counts = assemble_facts(result)
    if facts.num_rows == 0:
        raise UserError("no facts left after dropping entities without a label in "
                        f"{cfg.lang!r}; check --lang and the relations ({counts['dropped']})")
    manifest = base_manifest(Path(cfg.out).name, "facts", result.provenance,
                             cfg.manifest_params(), counts)
    return write_dataset(cfg.out, {"facts": facts, "relations": relations}, manifest)
