"""``factprobe build facts``: any source -> facts.parquet, relations.parquet, dataset.json.

The sources are the table :data:`builders.sources.table.SOURCES`; this module only reads the
one asked for and writes the dataset.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from builders.core.errors import UserError
from builders.core.tables import base_manifest, write_dataset
from builders.core.transport import DEFAULT_MAX_ANSWER_MB
from builders.datasets.facts import SourceResult, assemble_facts
from builders.sources.table import SOURCES, Source, source_for
from builders.sources.wikidata_dump.options import DumpOptions


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
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB
    retries: int = 3
    progress: bool = True
    dump: DumpOptions = field(default_factory=DumpOptions)   # how to read a wikidata-dump

    def manifest_params(self) -> dict:
        keep = ("source", "relations", "limit", "lang", "page_size", "date_format", "prefixes",
                "skip_bad")
        params = {k: v for k, v in asdict(self).items() if k in keep}
        params["relations"] = list(self.relations) if self.relations else "all"
        return params


def read_source(cfg: FactsConfig, sources: dict[str, Source] = SOURCES
                ) -> contextlib.AbstractContextManager:
    """The facts of ``cfg.source`` (an entry of ``sources``), as a context manager: a source
    that holds temporary files while it is read (wikidata-dump) keeps them until the facts are
    written."""
    source = source_for(cfg.source, cfg.path, cfg.endpoint, sources)
    result = source.read(cfg)
    if isinstance(result, contextlib.AbstractContextManager):
        return result
    return contextlib.nullcontext(result)


def build_facts(cfg: FactsConfig, sources: dict[str, Source] = SOURCES) -> Path:
    with read_source(cfg, sources) as result:
        return write_facts(cfg, result)


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
