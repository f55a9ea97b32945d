"""Model results -> rows of the outputs table (one row per continuation, sample or mask)."""
from __future__ import annotations

from probes.requests import prompt_id


def score_rows(stage: str, requests, results) -> list[dict]:
    rows = []
    for req, scored in zip(requests, results):
        pid = prompt_id(req.context)
        for k, s in enumerate(scored):
            om = req.option_meta[k] if k < len(req.option_meta) else {"option": k}
            rows.append({**req.meta, "prompt_id": pid, "stage": stage, "kind": "score", **om,
                         "token_logprobs": s.token_logprobs, "logprob": s.logprob,
                         "n_tokens": len(s.token_ids)})
    return rows


def generate_rows(stage: str, requests, results) -> list[dict]:
    rows = []
    for req, gens in zip(requests, results):
        pid = prompt_id(req.prompt)
        for s, g in enumerate(gens):
            row = {**req.meta, "prompt_id": pid, "stage": stage, "kind": "generate",
                   "sample": s if req.samples else -1, "text": g.text,
                   "token_ids": g.token_ids, "token_logprobs": g.token_logprobs,
                   "logprob": float(sum(g.token_logprobs)), "n_tokens": len(g.token_ids)}
            if req.watch:
                row["watched_logprobs"] = g.watched_logprobs
            rows.append(row)
    return rows


def mask_rows(stage: str, requests, results) -> list[dict]:
    return [{**req.meta, "prompt_id": prompt_id(req.prompt), "stage": stage, "kind": "fill_mask",
             "top_tokens": m.top_tokens, "top_probs": m.top_probs,
             "candidate_probs": m.candidate_probs, "candidate_tokens": m.candidate_tokens}
            for req, m in zip(requests, results)]


def request_text(req) -> str:
    return getattr(req, "context", None) if hasattr(req, "context") else req.prompt
