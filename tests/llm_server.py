"""A local OpenAI-compatible chat-completions server that answers from a script.

Each request takes the next step of ``script``: a string is the assistant's answer; a tuple
``("status", code, headers, body)`` is an HTTP error; ``("sleep", seconds, answer)`` answers
late (for timeouts); ``("raw", body)`` sends a 200 with a body that is not a chat completion.
When the script is empty, ``default(request_json)`` answers. Every request is recorded.
"""
from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Callable


class ScriptedChat:
    def __init__(self, script: list | None = None,
                 default: Callable[[dict], str] = lambda req: "[]"):
        self.script = list(script or [])
        self.default = default
        self.requests: list[dict] = []
        chat = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, body: bytes, headers: dict | None = None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = json.loads(raw)
                chat.requests.append({"path": self.path,
                                      "headers": {k.lower(): v for k, v in self.headers.items()},
                                      "json": req})
                step = chat.script.pop(0) if chat.script else chat.default(req)
                if isinstance(step, tuple) and step[0] == "status":
                    _, code, headers, body = step
                    self._send(code, body.encode("utf-8"), headers)
                    return
                if isinstance(step, tuple) and step[0] == "raw":
                    self._send(200, step[1].encode("utf-8"))
                    return
                if isinstance(step, tuple) and step[0] == "sleep":
                    time.sleep(step[1])
                    step = step[2]
                body = {"id": f"chatcmpl-{len(chat.requests)}", "object": "chat.completion",
                        "created": 0, "model": req.get("model", ""),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": step}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                  "total_tokens": 2}}
                self._send(200, json.dumps(body).encode("utf-8"))

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "ScriptedChat":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def user_message(request: dict) -> str:
    return request["json"]["messages"][-1]["content"]
