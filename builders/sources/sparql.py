"""Two ways to answer a SPARQL SELECT with the same JSON results: over HTTP, or in process.

``HttpEndpoint`` talks to the Wikidata Query Service or any SPARQL 1.1 endpoint through
SPARQLWrapper (one query at a time, descriptive User-Agent, Retry-After, bounded retries, disk
cache). ``LocalGraph`` loads an RDF file into pyoxigraph and serialises its answers to the same
SPARQL-results JSON, so everything downstream has one code path.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.error
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

from factprobe.core import jsonsafe
from factprobe.core.cache import ResponseCache, request_key
from factprobe.core.errors import UserError
from factprobe.core.redact import redact_url
from factprobe.core.retry import Retryable, RetryPolicy, parse_retry_after
from factprobe.core.tables import factprobe_version, file_sha256
from factprobe.core.transport import (
    CHUNK,
    DEFAULT_MAX_ANSWER_MB,
    MB,
    AnswerTooLarge,
    Deadline,
    bounded,
    check_length,
    read_capped,
    too_large_message,
)
from factprobe.core.urls import header_text, http_url
from factprobe.builders.sources.rdf_guard import MAX_LITERAL, check_rdf_xml

WIKIDATA_ENDPOINT = "https://query.wikidata.org/sparql"
PROJECT_URL = "https://github.com/factprobe/factprobe"
CONTACT_ENV = "FACTPROBE_CONTACT"


def user_agent(contact: str | None = None) -> str:
    """A descriptive User-Agent as the Wikimedia policy asks: tool, version, URL and contact."""
    contact = header_text(contact or os.environ.get(CONTACT_ENV, ""),
                          f"the contact (--contact or ${CONTACT_ENV})")
    who = f"{PROJECT_URL}; {contact}" if contact else PROJECT_URL
    return f"factprobe/{factprobe_version()} ({who})"


def results_problem(payload: Any, required: tuple[str, ...] = ()) -> str | None:
    """Why ``payload`` is not SPARQL 1.1 JSON results of a SELECT that binds every variable of
    ``required`` in every row; None when it is.

    >>> results_problem({"head": {"vars": ["s"]}, "results": {"bindings": [
    ...     {"s": {"type": "uri", "value": "http://x/a"}}]}}, ("s",)) is None
    True
    >>> results_problem({"head": {"vars": ["s"]}, "results": {"bindings": [{}]}}, ("s",))
    'binds no ?s in a result row'
    >>> results_problem({"error": "rate limited"})
    'is JSON but not SPARQL results (no results.bindings)'
    """
    results = payload.get("results") if isinstance(payload, dict) else None
    bindings = results.get("bindings") if isinstance(results, dict) else None
    if not isinstance(bindings, list):
        return "is JSON but not SPARQL results (no results.bindings)"
    for row in bindings:
        if not isinstance(row, dict):
            return "has a result row that is not a JSON object"
        for var, term in row.items():
            if not (isinstance(term, dict) and isinstance(term.get("type"), str)
                    and isinstance(term.get("value"), str)):
                return f"has a malformed value of ?{var} (not {{type, value}})"
        missing = [v for v in required if v not in row]
        if missing:
            return f"binds no ?{', ?'.join(missing)} in a result row"
    return None


class Endpoint(Protocol):
    description: dict

    def select(self, query: str, required: tuple[str, ...] = ()) -> dict:
        """SPARQL 1.1 JSON results of a SELECT query whose rows all bind ``required``."""

    def retrieval_dates(self) -> list[str]:
        """When the answers used so far were retrieved (empty for local files)."""


class HttpEndpoint:
    def __init__(self, url: str, *, cache_dir: str | os.PathLike | None, contact: str | None = None,
                 timeout_s: float = 65.0, policy: RetryPolicy = RetryPolicy(),
                 refresh: bool = False, max_bytes: int = DEFAULT_MAX_ANSWER_MB * MB):
        self.url = http_url(url, "SPARQL endpoint", "--endpoint http://host:port/query")
        # what may be shown or recorded: no credentials (they stay in self.url for requests)
        self.shown = redact_url(self.url)
        # urllib takes user:password@ for part of the host name: they go as HTTP Basic instead
        self._request_url, self._credentials = _split_credentials(self.url)
        self.cache = ResponseCache(cache_dir, "sparql", results_problem)
        self.agent = user_agent(contact)
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.policy = policy
        self.refresh = refresh
        self._dates: set[str] = set()
        self.description = {"endpoint": self.shown}

    def retrieval_dates(self) -> list[str]:
        return sorted(self._dates)

    def select(self, query: str, required: tuple[str, ...] = ()) -> dict:
        key = request_key(self.shown, query)
        binds = (lambda payload: results_problem(payload, required)) if required else None
        hit = None if self.refresh else self.cache.get(key, binds)
        if hit is None:
            hit = self.cache.retrieve(key, lambda: self._fetch(query), self.policy,
                                      f"SPARQL query to {self.shown}", check=binds,
                                      endpoint=self.shown)
        self._dates.add(hit["retrieved"][:10])
        return hit["response"]

    def _fetch(self, query: str) -> dict:
        # Imported here: SPARQLWrapper pulls in rdflib, which only the HTTP path needs.
        from SPARQLWrapper import JSON, POST, SPARQLWrapper
        from SPARQLWrapper.SPARQLExceptions import (
            EndPointInternalError,
            EndPointNotFound,
            QueryBadFormed,
            SPARQLWrapperException,
            Unauthorized,
        )
        sw = SPARQLWrapper(self._request_url, agent=self.agent)
        if self._credentials:
            sw.setCredentials(*self._credentials)
        sw.setQuery(query)
        sw.setMethod(POST)
        sw.setReturnFormat(JSON)
        # Set directly: setTimeout() truncates to whole seconds, and 0 there means no timeout.
        # It bounds each read; bounded() bounds the whole answer.
        sw.timeout = self.timeout_s
        try:
            raw = bounded(lambda deadline: self._read(sw, deadline), self.timeout_s)
        except AnswerTooLarge:
            raise UserError(too_large_message(
                f"SPARQL endpoint {self.url}", self.max_bytes,
                "ask for less (a smaller --page-size or --limit)")) from None
        except urllib.error.HTTPError as exc:
            if exc.code == 429 or exc.code >= 500:
                raise Retryable(f"HTTP {exc.code}",
                                parse_retry_after(exc.headers.get("Retry-After"))) from None
            raise UserError(f"SPARQL endpoint {self.shown} answered HTTP {exc.code} {exc.reason}; "
                            f"check the URL.") from None
        except EndPointInternalError:
            raise Retryable("HTTP 500 (internal server error)") from None
        except QueryBadFormed as exc:
            first = str(exc).strip().splitlines()[-1][:300]
            raise UserError(f"SPARQL endpoint {self.shown} rejected the query as malformed: "
                            f"{first}") from None
        except EndPointNotFound:
            raise UserError(f"SPARQL endpoint {self.shown} answered 404: no SPARQL service at "
                            f"that URL; check --endpoint.") from None
        except Unauthorized:
            raise UserError(f"SPARQL endpoint {self.shown} refused access (401/403).") from None
        except SPARQLWrapperException as exc:
            raise Retryable(str(exc).splitlines()[0]) from None
        except urllib.error.URLError as exc:
            raise Retryable(f"cannot reach it ({exc.reason})") from None
        except (socket.timeout, TimeoutError):
            raise Retryable(f"no answer within {self.timeout_s:g} s (--timeout)") from None
        except (ConnectionError, OSError) as exc:
            raise Retryable(f"connection failed ({exc})") from None
        except http.client.HTTPException as exc:  # a header line too long, too many headers...
            raise Retryable(f"a malformed HTTP answer ({type(exc).__name__})") from None
        try:
            return jsonsafe.loads(raw)
        except jsonsafe.TooDeep:
            raise Retryable(f"the answer is {jsonsafe.TooDeep()}") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise Retryable("the answer was not JSON (an error page?)") from None

    def _read(self, sw, deadline: Deadline) -> bytes:
        response = sw.query().response
        try:
            check_length(response.headers, self.max_bytes)
            return read_capped(iter(lambda: response.read(CHUNK), b""), self.max_bytes, deadline)
        finally:
            response.close()


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user info, and the (user, password) it held.

    >>> _split_credentials("http://me:p%40ss@host:7878/query?x=1")
    ('http://host:7878/query?x=1', ('me', 'p@ss'))
    >>> _split_credentials("http://host/query")
    ('http://host/query', None)
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return (urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment)),
            (unquote(user), unquote(password)))


def rdf_format(path: Path):
    import pyoxigraph as ox
    suffixes = [s.lstrip(".") for s in path.suffixes[-2:]]
    for ext in reversed(suffixes):
        fmt = ox.RdfFormat.from_extension(ext)
        if fmt is not None:
            return fmt
    raise UserError(f"cannot tell the RDF format of {path} from its extension; use .ttl, .nt, "
                    f".nq, .trig, .n3 or .rdf")


class LocalGraph:
    """An RDF file loaded into an in-memory pyoxigraph store."""

    def __init__(self, path: str | os.PathLike):
        import pyoxigraph as ox
        self.path = Path(path)
        if self.path.is_dir():
            raise UserError(f"{self.path} is a folder; --path takes one RDF file (.ttl, .nt, "
                            f".rdf...)")
        if not self.path.is_file():
            raise UserError(f"RDF file {self.path} not found; check --path.")
        fmt = rdf_format(self.path)
        if fmt == ox.RdfFormat.RDF_XML:
            check_rdf_xml(self.path)
        self.store = ox.Store()
        try:
            parser = ox.parse(path=str(self.path), format=fmt)
            self.store.extend(parser)
        except SyntaxError as exc:
            raise UserError(f"{self.path}: not valid {fmt.name} ({exc}); fix the file.") from None
        except MemoryError:  # pyoxigraph's parsers refuse a token (a literal) past 16 MB
            raise UserError(f"{self.path}: holds a term (a literal or IRI) longer than "
                            f"{MAX_LITERAL >> 20} MB, more than the RDF parser takes; a label "
                            f"or value that long is not a fact: remove it from the file"
                            ) from None
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot read {self.path} as {fmt.name} "
                            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                            ) from None
        self.prefixes: dict[str, str] = dict(getattr(parser, "prefixes", {}) or {})
        self.description = {"path": str(self.path), "sha256": file_sha256(self.path),
                            "format": fmt.name}

    def retrieval_dates(self) -> list[str]:
        return []

    def select(self, query: str, required: tuple[str, ...] = ()) -> dict:
        # In process, the engine's answers have the SPARQL shape by construction.
        import pyoxigraph as ox
        try:
            result = self.store.query(query)
        except SyntaxError as exc:
            raise UserError(f"query rejected by the RDF engine: {exc}") from None
        return json.loads(result.serialize(format=ox.QueryResultsFormat.JSON))
