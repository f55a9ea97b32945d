"""An HTTP server on 127.0.0.1 that answers like an attacker (or a broken proxy) would.

Every mode answers any GET or POST the same way:

- ``stream``: a valid-looking JSON answer (SPARQL results, a wbgetentities answer or a chat
  completion, by ``shape``) whose rows keep coming, one every ``interval`` seconds, forever;
- ``flood``: the same opening, then rows as fast as the socket takes them, without end;
- ``flood-length``: a ``Content-Length`` of 50 GB announced, then a flood;
- ``headers``: the status line, then header bytes one at a time, each just inside a read timeout;
- ``gzip``: a small gzip body (``Content-Encoding: gzip``) that inflates to gigabytes.

"Forever" is bounded: each handler stops after ``max_seconds`` or ``max_bytes``, so a test that
fails leaves nothing running; ``close()`` stops the server.
"""
from __future__ import annotations

import functools
import http.server
import socket
import threading
import time
import zlib

OPENINGS = {
    "sparql": (b'{"head":{"vars":["s","o"]},"results":{"bindings":[',
               b'{"s":{"type":"uri","value":"http://www.wikidata.org/entity/Q1"},'
               b'"o":{"type":"literal","value":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}},'),
    "wbapi": (b'{"entities":{', b'"Q1":{"labels":{"en":{"value":"xxxxxxxxxxxxxxxxxxxxxx"}}},'),
    "chat": (b'{"id":"x","object":"chat.completion","choices":[{"index":0,"message":'
             b'{"role":"assistant","content":"', b'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'),
}


@functools.lru_cache(maxsize=2)
def gzip_bomb(size: int) -> bytes:
    """``{`` and ``size`` bytes of JSON whitespace, gzip-compressed (about 1000:1)."""
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    out = [comp.compress(b"{")]
    for _ in range(size >> 20):
        out.append(comp.compress(block))
    out.append(comp.flush())
    return b"".join(out)


class HostileServer:
    def __init__(self, mode: str, shape: str = "sparql", interval: float = 0.5,
                 max_seconds: float = 120.0, max_bytes: int = 8 << 30):
        self.mode, self.shape, self.interval = mode, shape, interval
        self.max_seconds, self.max_bytes = max_seconds, max_bytes
        self.requests = 0
        self._bomb = gzip_bomb(1 << 30) if mode == "gzip" else b""
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests += 1
                try:
                    server.answer(self)
                except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
                    pass  # the client gave up: what a hostile server hopes for least
                self.close_connection = True

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/query"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, h: http.server.BaseHTTPRequestHandler) -> None:
        stop = time.monotonic() + self.max_seconds
        opening, row = OPENINGS[self.shape]
        if self.mode == "headers":
            h.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while time.monotonic() < stop:
                h.wfile.write(b"a")
                h.wfile.flush()
                time.sleep(self.interval)
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if self.mode == "gzip":
            h.send_header("Content-Encoding", "gzip")
            h.send_header("Content-Length", str(len(self._bomb)))
            h.end_headers()
            h.wfile.write(self._bomb)
            return
        if self.mode == "flood-length":
            h.send_header("Content-Length", str(50 << 30))
        h.end_headers()
        h.wfile.write(opening)
        sent = len(opening)
        block = row * max(1, (256 << 10) // len(row))
        while time.monotonic() < stop and sent < self.max_bytes:
            if self.mode == "stream":
                h.wfile.write(row)
                h.wfile.flush()
                sent += len(row)
                time.sleep(self.interval)
            else:
                h.wfile.write(block)
                sent += len(block)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "HostileServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
