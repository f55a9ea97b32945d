"""A real OpenAI-compatible completions server on 127.0.0.1 that runs a real Hugging Face causal
LM (the suite's tiny models, or the planted one): ``/v1/models`` and ``/v1/completions`` with
``echo``, ``logprobs`` (tokens, token_logprobs, text_offset, top_logprobs), ``max_tokens``,
``temperature``, ``seed`` and ``stop``, as vLLM and llama.cpp's server answer them.

It computes with plain full-sequence forward passes (no prefix cache, no packing): an
independent computation of what factprobe's own hf-causal backend computes. The prompt is
tokenized as vLLM does (the tokenizer's default special tokens: a BOS where the tokenizer adds
one); the echoed BOS has no log-probability, as every server's first token.

``prompt_logprobs=False`` answers as ``transformers serve`` does: no prompt log-probs, ``echo``
ignored. ``shifted_echo=True`` answers as llama-cpp-python's server does for a prompt without
a BOS token: each echoed prompt token gets the log-probability from its own logits row (the
one that predicts the next token). ``logit_bias`` (token id -> bias) moves the greedy choice
and the sampling, never the log-probabilities returned, as llama.cpp's and vLLM's samplers do.
``script``: failures to answer first, one per request, in order: ``("status", code,
headers)``, ``("malformed",)`` (a logprobs block of uneven lists), ``("sleep", seconds)``
(answers late) or ``("die",)`` (stop serving: from then on every connection, kept-alive ones
included, is cut without an answer, as a crashed server's are). Every request is recorded with
its headers.
"""
from __future__ import annotations

import http.server
import json
import threading
import time


class CompletionsServer:
    def __init__(self, model_dir, name: str = "tiny", prompt_logprobs: bool = True,
                 script: list | None = None, shifted_echo: bool = False):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.name = name
        self.prompt_logprobs = prompt_logprobs
        self.shifted_echo = shifted_echo
        self.script = list(script or [])
        self.requests: list[dict] = []
        self.dead = False
        self.lock = threading.Lock()
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, code: int, payload, headers: dict | None = None):
                body = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if srv.dead:
                    self.close_connection = True
                    return
                srv.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": srv.name, "object": "model", "owned_by": "factprobe-tests",
                         "created": int(time.time())}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if srv.dead:
                    self.close_connection = True
                    return
                req = json.loads(raw)
                srv.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                     "json": req})
                step = srv.script.pop(0) if srv.script else None
                if step and step[0] == "status":
                    self._send(step[1], {"error": {"message": "busy"}}, step[2])
                    return
                if step and step[0] == "sleep":     # answers, but late
                    time.sleep(step[1])
                if step and step[0] == "die":
                    srv.dead = True
                    threading.Thread(target=srv.close, daemon=True).start()
                    self.close_connection = True
                    return
                if not self.path.endswith("/v1/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                with srv.lock:
                    answer = srv.complete(req)
                if step and step[0] == "malformed":
                    answer["choices"][0]["logprobs"]["text_offset"] = [0]
                self._send(200, answer)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _encode(self, text: str):
        enc = self.tok(text, return_offsets_mapping=True)
        return list(enc["input_ids"]), [a for a, _ in enc["offset_mapping"]]

    def complete(self, req: dict) -> dict:
        torch = self.torch
        prompt = req["prompt"]
        if isinstance(prompt, list):          # token ids, as the API allows
            ids = [int(t) for t in prompt]
            prompt = self.tok.decode(ids)
            offsets = [len(self.tok.decode(ids[:k])) for k in range(len(ids))]
        else:
            ids, offsets = self._encode(prompt)
        echo = bool(req.get("echo")) and self.prompt_logprobs
        want_lp = req.get("logprobs") is not None and self.prompt_logprobs
        with torch.inference_mode():
            logits = self.model(torch.tensor([ids])).logits[0].float()
        lsm = torch.log_softmax(logits, -1)
        tokens, values, text_offset = [], [], []
        if echo:
            for k, (t, o) in enumerate(zip(ids, offsets)):
                tokens.append(self.tok.decode([t]) if t != self.tok.bos_token_id else "")
                row = k if self.shifted_echo else k - 1
                values.append(None if k == 0 else float(lsm[row, t]))
                text_offset.append(int(o))
        gen = self._generate(ids, lsm[-1], req)
        text = self.tok.decode([t for t, _ in gen], skip_special_tokens=True)
        stops = [s for s in (req.get("stop") or []) if s]
        cut = min((text.find(s) for s in stops if s in text), default=len(text))
        was_cut, text = cut < len(text), text[:cut]
        at = len(prompt)
        so_far = ""
        for k, (t, lp) in enumerate(gen):
            piece = self.tok.decode([t for t, _ in gen[:k + 1]], skip_special_tokens=True)
            if was_cut and len(so_far) >= len(text):
                break
            tokens.append(piece[len(so_far):])
            values.append(lp)
            text_offset.append(at + len(so_far))
            so_far = piece
        out_text = (prompt if echo else "") + text
        lp_block = {"tokens": tokens, "token_logprobs": values, "text_offset": text_offset,
                    "top_logprobs": [None] * len(tokens)} if want_lp else None
        return {"id": "cmpl-1", "object": "text_completion", "created": 0, "model": self.name,
                "choices": [{"index": 0, "text": out_text, "logprobs": lp_block,
                             "finish_reason": "length" if not was_cut and len(gen) ==
                             int(req.get("max_tokens") or 16) else "stop"}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(gen),
                          "total_tokens": len(ids) + len(gen)}}

    def _generate(self, ids: list[int], last, req: dict) -> list[tuple[int, float]]:
        torch = self.torch
        temp = float(req.get("temperature", 1.0) or 0.0)
        g = torch.Generator().manual_seed(int(req.get("seed") or 0))
        out: list[tuple[int, float]] = []
        seq = list(ids)
        lsm = last
        stops = [s for s in (req.get("stop") or []) if s]
        bias = torch.zeros_like(lsm)
        for k, v in (req.get("logit_bias") or {}).items():
            bias[int(k)] = float(v)
        for _ in range(int(req.get("max_tokens") or 16)):
            if temp == 0:
                t = int((lsm + bias).argmax())
            else:
                t = int(torch.multinomial(torch.softmax((lsm + bias) / temp, -1), 1,
                                          generator=g))
            if t == self.tok.eos_token_id:
                break
            out.append((t, float(lsm[t])))
            seq.append(t)
            if stops and any(s in self.tok.decode([x for x, _ in out]) for s in stops):
                break
            with torch.inference_mode():
                lsm = torch.log_softmax(self.model(torch.tensor([seq])).logits[0, -1].float(), -1)
        return out
