"""What ``factprobe build facts`` reads: one typed config for every source of
:data:`factprobe.builders.sources.table.SOURCES`. The fields every source may use are here; a
source's own flags (``Source.flags``: the graph sources' page size and prefixes, a dump's
executor and shards) are the typed value its flags module reads, under ``options``, so a new
source with flags of its own changes neither this config nor the command line."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from factprobe.core.network import NetworkOptions

T = TypeVar("T")


@dataclass(frozen=True)
class FactsConfig:
    source: str
    relations: tuple[str, ...] | None          # None: every relation present
    out: str
    path: str | None = None
    endpoint: str | None = None
    limit: int | None = None
    lang: str = "en"
    date_format: str = "date"                  # Wikidata's time values: date or year
    skip_bad: bool = False
    network: NetworkOptions = field(default_factory=NetworkOptions)
    options: Mapping[str, Any] = field(default_factory=dict)   # flags module NAME -> options
    progress: bool = True
    # relation id -> subject ids: read only those facts (build refresh; the SPARQL sources
    # query just them, the others read everything and the caller keeps what it asked for)
    subjects: dict | None = None

    def option(self, name: str, default: T) -> T:
        """The source's options read by the flags module ``name``, or ``default`` (a caller
        from Python that set none)."""
        return self.options.get(name, default)

    def manifest_params(self) -> dict:
        """What the dataset records of this build: the shared fields, and what the source's
        own options say they change (``params()``)."""
        params = {"source": self.source, "relations": list(self.relations) if self.relations
                  else "all", "limit": self.limit, "lang": self.lang,
                  "date_format": self.date_format, "skip_bad": self.skip_bad}
        for name in sorted(self.options):
            params.update(self.options[name].params())
        return params
