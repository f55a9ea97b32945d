"""How a command talks to a server (a SPARQL endpoint, Wikidata's API, an LLM): one typed value,
read at the edge from the network flags every such command shares."""
from __future__ import annotations

from dataclasses import dataclass

from factprobe.core.transport import DEFAULT_MAX_ANSWER_MB


@dataclass(frozen=True)
class NetworkOptions:
    contact: str | None = None           # for the User-Agent (Wikimedia's policy asks for one)
    cache_dir: str | None = None         # the response cache; None: no cache
    refresh: bool = False                # ignore cached answers (they are still written)
    timeout_s: float = 65.0              # for a whole answer to arrive
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB
    retries: int = 3                     # after a failure, with backoff
