"""English labels and aliases of Wikidata entities through the Action API (``wbgetentities``).

SPARQL can return labels too, but one label query per fact table times out on large relations;
``wbgetentities`` answers 50 entities per request, cheaply, and every answer is cached on disk so
a rebuild replays it without touching the network.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import requests
from tqdm import tqdm

from factprobe.core import jsonsafe
from factprobe.core.cache import ResponseCache, request_key
from factprobe.core.errors import UserError
from factprobe.core.redact import redact_url
from factprobe.core.retry import Retryable, RetryPolicy, parse_retry_after
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
from factprobe.core.urls import http_url
from factprobe.builders.sources.sparql import user_agent

API_URL = "https://www.wikidata.org/w/api.php"
BATCH_SIZE = 50          # the most ids the API accepts per request from a non-bot client
MAXLAG_S = 5             # Wikimedia asks automated clients to back off when replicas lag more
_ID = re.compile(r"^[QPL][1-9][0-9]*$")


@dataclass(frozen=True)
class EntityNames:
    label: str | None
    aliases: tuple[str, ...] = ()


class NamesById(dict):
    """``{asked id: EntityNames}`` plus what a manifest needs to describe the retrieval.

    ``retrieval_dates``: sorted ``YYYY-MM-DD`` days the answers used were retrieved (cached
    answers keep their original date). ``redirects``: asked id -> the id it now redirects to.
    ``missing``: asked ids that do not exist (deleted or never created); they have no entry.
    """

    def __init__(self):
        super().__init__()
        self.retrieval_dates: list[str] = []
        self.redirects: dict[str, str] = {}
        self.missing: list[str] = []


def fetch_labels_aliases(ids: list[str], *, lang: str = "en", api_url: str = API_URL,
                         cache_dir: str | os.PathLike | None, contact: str | None = None,
                         policy: RetryPolicy = RetryPolicy(), timeout_s: float = 30.0,
                         refresh: bool = False, progress: bool = True,
                         max_bytes: int = DEFAULT_MAX_ANSWER_MB * MB) -> NamesById:
    """Labels and aliases in ``lang`` of the entities ``ids``, as a :class:`NamesById`.

    Ids that are not Wikidata entity ids (``Q``/``P``/``L`` + number) are skipped: they come
    from literals or blank nodes, and the API would reject the whole batch for one of them.
    An entity without a label in ``lang`` gets ``label=None``. A redirected id is answered with
    its target's names under the asked id. Raises :class:`UserError` when the API refuses the
    request or stays unreachable after ``policy.retries`` more attempts.
    """
    http_url(api_url, "Wikidata API", f"--api-url {API_URL}")
    shown = redact_url(api_url)   # what may be shown or recorded: no credentials
    wanted = sorted({i for i in ids if isinstance(i, str) and _ID.match(i)})
    batches = [wanted[i:i + BATCH_SIZE] for i in range(0, len(wanted), BATCH_SIZE)]
    cache = ResponseCache(cache_dir, "wbgetentities", entities_problem)
    result, dates = NamesById(), set()
    with requests.Session() as session:
        session.headers["User-Agent"] = user_agent(contact)
        for batch in tqdm(batches, desc="Wikidata labels", unit="batch", disable=not progress):
            key = request_key(shown, "|".join(batch), lang)
            hit = None if refresh else cache.get(key)
            if hit is None:
                hit = cache.retrieve(key, lambda: _fetch(session, api_url, batch, lang, timeout_s,
                                                         max_bytes),
                                     policy, f"Wikidata API request to {shown}",
                                     endpoint=shown)
            dates.add(hit["retrieved"][:10])
            _collect(hit["response"]["entities"], batch, lang, result)
    result.retrieval_dates = sorted(dates)
    return result


def _fetch(session: requests.Session, api_url: str, batch: list[str], lang: str,
           timeout_s: float, max_bytes: int = DEFAULT_MAX_ANSWER_MB * MB) -> dict:
    params = {"action": "wbgetentities", "ids": "|".join(batch), "props": "labels|aliases",
              "languages": lang, "format": "json", "formatversion": "2", "maxlag": str(MAXLAG_S)}

    def download(deadline: Deadline) -> tuple[requests.Response, bytes]:
        # timeout= bounds each read; bounded() the whole answer. Streamed, so a flood is cut
        # at the cap (counted after gzip is undone) instead of being read whole.
        with session.get(api_url, params=params, timeout=timeout_s, stream=True) as resp:
            check_length(resp.headers, max_bytes)
            return resp, read_capped(resp.iter_content(CHUNK), max_bytes, deadline)

    try:
        resp, body = bounded(download, timeout_s)
    except AnswerTooLarge:
        raise UserError(too_large_message(f"Wikidata API {redact_url(api_url)}", max_bytes,
                                          "check --api-url")) from None
    except requests.Timeout:
        raise Retryable(f"no answer within {timeout_s:g} s (--timeout)") from None
    except requests.RequestException as exc:
        raise Retryable(f"cannot reach it ({type(exc).__name__})") from None
    retry_after = parse_retry_after(resp.headers.get("Retry-After"))
    if resp.status_code == 429 or resp.status_code >= 500:
        raise Retryable(f"HTTP {resp.status_code}", retry_after)
    if resp.status_code != 200:
        raise UserError(f"Wikidata API {redact_url(api_url)} answered HTTP {resp.status_code} "
                        f"{resp.reason}; check the URL.")
    try:
        data = jsonsafe.loads(body)
    except jsonsafe.TooDeep:
        raise Retryable(f"the answer is {jsonsafe.TooDeep()}") from None
    except ValueError:
        # Proxies and maintenance pages answer HTML with status 200; usually short-lived.
        raise Retryable("the answer was not JSON") from None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        code, info = error.get("code", "?"), str(error.get("info", ""))[:300]
        if code == "maxlag":
            raise Retryable(f"replicas lag {error.get('lag', '?')} s (maxlag)", retry_after)
        raise UserError(f"Wikidata API {redact_url(api_url)} refused the request: {code}: "
                        f"{info}")
    return data  # its shape is checked by entities_problem before it is cached


def entities_problem(data: Any) -> str | None:
    """Why ``data`` is not a ``wbgetentities`` answer that :func:`_collect` can read, or None.

    >>> entities_problem({"entities": {"Q1": {"labels": {"en": {"value": "x"}}, "aliases": []}}})
    >>> entities_problem({"entities": {"Q1": {"aliases": {"en": 5}}}})
    'has aliases of Q1 that are not a list'
    >>> entities_problem({"batchcomplete": ""})
    "is JSON but has no 'entities'"
    """
    entities = data.get("entities") if isinstance(data, dict) else None
    if not isinstance(entities, dict):
        return "is JSON but has no 'entities'"
    for qid, entity in entities.items():
        if not isinstance(entity, dict):
            return f"has an entity {qid} that is not a JSON object"
        # An empty map can arrive as ``[]`` (PHP arrays), hence lists are accepted when empty.
        for name in ("labels", "aliases"):
            value = entity.get(name, {})
            if not isinstance(value, dict) and value != []:
                return f"has {name} of {qid} that are not a map"
        labels = entity.get("labels") or {}
        if any(not (isinstance(v, dict) and isinstance(v.get("value", ""), str))
               for v in labels.values()):
            return f"has a label of {qid} that is not {{value: text}}"
        aliases = entity.get("aliases") or {}
        if any(not isinstance(v, list) for v in aliases.values()):
            return f"has aliases of {qid} that are not a list"
        if any(not (isinstance(a, dict) and isinstance(a.get("value", ""), str))
               for v in aliases.values() for a in v):
            return f"has an alias of {qid} that is not {{value: text}}"
    return None


def _collect(entities: dict, batch: list[str], lang: str, into: NamesById) -> None:
    # Wikibase keys a redirect under the asked id; some mirrors key it under the target. Finding
    # it through ``redirects.from`` as well works for both.
    by_source = {e["redirects"].get("from"): e for e in entities.values()
                 if isinstance(e, dict) and isinstance(e.get("redirects"), dict)}
    for qid in batch:
        entity = entities.get(qid)
        if not isinstance(entity, dict):
            entity = by_source.get(qid)
        if not isinstance(entity, dict) or "missing" in entity:
            into.missing.append(qid)
            continue
        redirect = entity.get("redirects")
        if isinstance(redirect, dict) and redirect.get("from") == qid and redirect.get("to"):
            into.redirects[qid] = redirect["to"]
        into[qid] = _names(entity, lang)


def _names(entity: dict, lang: str) -> EntityNames:
    # An empty map can arrive as ``[]`` (PHP arrays), hence the isinstance checks.
    labels, aliases = entity.get("labels"), entity.get("aliases")
    label = labels.get(lang) if isinstance(labels, dict) else None
    value = label.get("value") if isinstance(label, dict) else None
    alias_list = aliases.get(lang) if isinstance(aliases, dict) else None
    return EntityNames(value or None, tuple(
        a["value"] for a in alias_list or () if isinstance(a, dict) and a.get("value")))
