"""What ``factprobe build nobel`` is configured with: the graph's model (which properties and
class say who won what and when) and the build's options. Plain dataclasses in a module of their
own, so that building the command line's parser (which shows the defaults in ``--help``) imports
neither pandas nor pyarrow."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NobelModel:
    """The properties and class that say who won what and when (Wikidata's by default)."""
    award_statement: str = "p:P166"
    award_value: str = "ps:P166"
    award_time: str = "pq:P585"
    birth: str = "wdt:P569"
    gender: str = "wdt:P21"
    nobel_class: str = "wd:Q7191"
    instance_of: str = "wdt:P31"
    subclass_of: str = "wdt:P279"


@dataclass(frozen=True)
class NobelConfig:
    out: str
    model: NobelModel = field(default_factory=NobelModel)
    max_year: int = 2022
    lang: str = "en"
    page_size: int = 10_000
    progress: bool = True
