"""What the hostile-input contract tests share: a local HTTP server that answers every request
with a body the test chooses (a SPARQL endpoint, the Wikidata API or a chat endpoint, as the
command sees it), deeply nested JSON, and a module shim that hides ``orjson``."""
from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest


DEPTH = 200_000
DEEP_ARRAY = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a":' * DEPTH + "1" + "}" * DEPTH


def nested(depth: int, leaf=1):
    """A value nested ``depth`` lists deep (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def medium(obj: dict, depth: int = 500) -> str:
    """``obj`` as JSON with one more key holding a value nested ``depth`` deep: decodable by
    Python's json (under its recursion limit), too deep for anything that walks it later."""
    return json.dumps({**obj, "x_nested": nested(depth)})


def chat_completion(content) -> str:
    return json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}]})


class FixedAnswer:
    """Answers every GET and POST with ``status``, ``ctype`` and ``body`` (set them per test);
    records each request's path, headers and body."""

    def __init__(self):
        self.status, self.ctype, self.body = 200, "application/json", b"{}"
        self.requests: list[dict] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length", 0) or 0)
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "body": self.rfile.read(length) if length else b""})
                body = server.body if isinstance(server.body, bytes) else \
                    server.body.encode("utf-8")
                self.send_response(server.status)
                self.send_header("Content-Type", server.ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def hide_orjson(folder: Path) -> str:
    """A folder to put first on PYTHONPATH so that ``import orjson`` fails, as where it is not
    installed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "orjson.py").write_text('raise ImportError("orjson hidden by the test")\n')
    return str(folder)


def files_under(root: Path):
    """Every file under ``root`` (the cache included)."""
    return [p for p in root.rglob("*") if p.is_file()]




@pytest.fixture(scope="module")
def server():
    srv = FixedAnswer()
    yield srv
    srv.close()
