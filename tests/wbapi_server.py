"""A local stand-in for the Wikidata Action API's ``wbgetentities``, served over real HTTP.

It answers in the JSON shape of ``formatversion=2`` (labels and aliases filtered to the asked
languages, ``"missing": ""`` for unknown ids, redirects keyed by the asked id with a
``redirects`` record), enforces the 50-id limit and rejects malformed ids like the real API, and
records every request so tests can check what a client sent. ``script`` makes the next requests
fail in the ways the real service does.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

API_PATH = "/w/api.php"
_ID = re.compile(r"^[QPL][1-9][0-9]*$")


@dataclass
class Recorded:
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    at: float                       # time.monotonic() when it arrived

    @property
    def ids(self) -> list[str]:
        return self.params.get("ids", "").split("|")


def default_entities() -> tuple[dict[str, dict], dict[str, str]]:
    """Q1..Q120 minus a few special cases, and ``{redirect source: target}``.

    Q2 has non-ASCII names, Q7 has only a French label, Q8 does not exist, Q9 redirects to Q100,
    Q11 has an English label but no aliases.
    """
    entities: dict[str, dict] = {}
    for n in range(1, 121):
        entities[f"Q{n}"] = {"labels": {"en": f"item {n}", "fr": f"objet {n}"},
                             "aliases": {"en": [f"alias {n}a", f"alias {n}b"],
                                         "fr": [f"alias fr {n}"]}}
    entities["Q2"] = {"labels": {"en": "Zürich", "de": "Zürich"}, "aliases": {"en": ["東京 test"]}}
    entities["Q7"] = {"labels": {"fr": "seulement français"}, "aliases": {}}
    entities["Q11"] = {"labels": {"en": "item 11"}, "aliases": {}}
    del entities["Q8"], entities["Q9"]
    entities["P31"] = {"labels": {"en": "instance of"}, "aliases": {"en": ["is a", "type"]}}
    return entities, {"Q9": "Q100"}


@dataclass
class FakeWikidataApi:
    entities: dict[str, dict] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    redirect_key: str = "source"    # "target": key a redirect under its target, like some mirrors
    script: list[str] = field(default_factory=list)   # per request: "ok", "429", "maxlag", ...
    api_error: tuple[str, str] = ("readapidenied", "You need read permission to use this module.")
    requests: list[Recorded] = field(default_factory=list)

    def fail(self, n: int, kind: str) -> None:
        """Answer the next ``n`` requests with ``kind``: 429, 429-no-wait, maxlag, 500,
        apierror, html, or shape (valid JSON that is not a wbgetentities answer)."""
        self.script = [kind] * n

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{API_PATH}"

    def start(self) -> "FakeWikidataApi":
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def answer(self, params: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            kind = self.script.pop(0) if self.script else "ok"
        if kind == "429":
            return 429, {"Retry-After": "1"}, b"Too many requests"
        if kind == "429-no-wait":
            return 429, {}, b"Too many requests"
        if kind == "shape":   # an entity whose aliases are not a list: a broken mirror or proxy
            ids = params.get("ids", "").split("|")
            return 200, {}, _json({"entities": {i: {"id": i, "aliases": {"en": 5}} for i in ids}})
        if kind == "500":
            return 500, {}, b"<html>Internal error</html>"
        if kind == "html":
            return 200, {"Content-Type": "text/html"}, b"<html>Wikimedia maintenance</html>"
        if kind == "maxlag":
            return 200, {"Retry-After": "1", "X-Database-Lag": "7"}, _json(
                {"error": {"code": "maxlag", "info": "Waiting for 10.64.0.1: 7 seconds lagged.",
                           "host": "10.64.0.1", "lag": 7, "type": "db"}, "servedby": "fake"})
        if kind == "apierror":
            code, info = self.api_error
            return 200, {}, _json({"error": {"code": code, "info": info}, "servedby": "fake"})
        assert kind == "ok", kind
        return 200, {}, _json(self.wbgetentities(params))

    def wbgetentities(self, params: dict[str, str]) -> dict:
        if params.get("action") != "wbgetentities":
            return {"error": {"code": "badvalue", "info": "Unrecognized value for action."}}
        ids = params.get("ids", "").split("|")
        if len(ids) > 50:
            return {"error": {"code": "toomanyvalues",
                              "info": "Too many values supplied for parameter \"ids\". The "
                                      "limit is 50."}}
        for qid in ids:
            if not _ID.match(qid):
                return {"error": {"code": "no-such-entity",
                                  "info": f"Could not find an entity with the ID \"{qid}\".",
                                  "id": qid}}
        langs = set(params.get("languages", "").split("|")) if "languages" in params else None
        props = set(params.get("props", "info|labels|aliases").split("|"))
        out: dict[str, dict] = {}
        for qid in ids:
            target = self.redirects.get(qid, qid)
            data = self.entities.get(target)
            if data is None:
                out[qid] = {"id": qid, "missing": ""}
                continue
            entity: dict = {"type": "property" if target[0] == "P" else "item", "id": target}
            if target != qid:
                entity["redirects"] = {"from": qid, "to": target}
            if "labels" in props:
                entity["labels"] = {lg: {"language": lg, "value": v}
                                    for lg, v in data["labels"].items()
                                    if langs is None or lg in langs}
            if "aliases" in props:
                entity["aliases"] = {lg: [{"language": lg, "value": v} for v in vs]
                                     for lg, vs in data["aliases"].items()
                                     if langs is None or lg in langs}
            out[target if self.redirect_key == "target" else qid] = entity
        return {"entities": out, "success": 1}


def _json(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _handler(api: FakeWikidataApi):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"    # keep-alive, as a requests.Session would get

        def do_GET(self):
            split = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
            api.requests.append(Recorded(split.path, params, dict(self.headers.items()),
                                         time.monotonic()))
            if split.path != API_PATH:
                status, headers, body = 404, {}, b"Not Found"
            else:
                status, headers, body = api.answer(params)
            self.send_response(status)
            self.send_header("Content-Type",
                             headers.pop("Content-Type", "application/json; charset=utf-8"))
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler
