"""What ``factprobe build facts`` reads: one typed config for every source of
:data:`factprobe.builders.sources.table.SOURCES` (each reader takes the fields it needs)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from factprobe.core.transport import DEFAULT_MAX_ANSWER_MB
from factprobe.builders.sources.wikidata_dump.options import DumpOptions


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
    # relation id -> subject ids: read only those facts (build refresh; the SPARQL sources
    # query just them, the others read everything and the caller keeps what it asked for)
    subjects: dict | None = None

    def manifest_params(self) -> dict:
        keep = ("source", "relations", "limit", "lang", "page_size", "date_format", "prefixes",
                "skip_bad")
        params = {k: v for k, v in asdict(self).items() if k in keep}
        params["relations"] = list(self.relations) if self.relations else "all"
        return params
