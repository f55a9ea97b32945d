"""Causal LMs through transformers, with shared-prefix key/value caching.

Scoring (context, continuations) is done in three levels, each computed once:
the longest token prefix shared by a group of requests (ZP-LKE: a relation's 50 examples),
then each request's own context suffix, then its continuations, batched, each attending to the
cached keys and values of what precedes it. Rows are right-padded; padding is masked and the
position ids are given explicitly, so every number equals a plain full-sequence computation.
Tokens are split as lm-evaluation-harness splits them (encode context + continuation, drop the
context's tokens), so scores are comparable with it.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Iterable, Sequence

from builders.errors import UserError

from ..requests import GenerateRequest, Generated, ScoreRequest, Scored
from .config import BackendConfig


def common_prefix_len(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token sequences.

    >>> common_prefix_len([[1, 2, 3], [1, 2, 4], [1, 2]])
    2
    """
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return n


def _chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower()


class HFCausal:
    """``score``, ``generate`` and ``token_probs`` for one causal LM."""

    def __init__(self, model, tokenizer, device: str, config: BackendConfig):
        import torch
        self.torch = torch
        self.model = model
        self.tok = tokenizer
        self.device = device
        self.config = config
        self.batch_size = max(1, config.batch_size)
        self.name = config.model
        mc = model.config
        self.max_length = int(getattr(mc, "max_position_embeddings", None)
                              or getattr(mc, "n_positions", None) or 2048)
        self.eos_id = tokenizer.eos_token_id
        self.prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None \
            else tokenizer.eos_token_id
        self.tokens_computed = 0     # tokens actually fed to the model
        self.tokens_full = 0         # tokens a per-sequence approach would feed
        self._enc_cache: dict[str, list[int]] = {}

    # ----------------------------------------------------------------------------- tokens
    def encode(self, text: str) -> list[int]:
        ids = self._enc_cache.get(text)
        if ids is None:
            ids = self.tok(text, add_special_tokens=self.config.add_bos)["input_ids"]
            if len(self._enc_cache) < 200_000:
                self._enc_cache[text] = ids
        return list(ids)

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """lm-evaluation-harness's split: trailing spaces of the context move to the
        continuation; the continuation's tokens are those of context + continuation after the
        context's own tokens."""
        if context == "":
            return [self.prefix_token_id], self.encode(continuation)
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        whole = self.encode(context + continuation)
        ctx = self.encode(context)
        return ctx, whole[len(ctx):]

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    # ----------------------------------------------------------------------------- forward
    def _forward(self, rows: list[list[int]], past=None, past_mask=None):
        """One right-padded batch after an optional cache; returns (logits, cache, mask)."""
        torch = self.torch
        n = len(rows)
        width = max(len(r) for r in rows)
        ids = torch.full((n, width), self.prefix_token_id or 0, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, :len(r)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        start = past_mask.sum(dim=1, keepdim=True) if past_mask is not None else \
            torch.zeros((n, 1), dtype=torch.long, device=self.device)
        positions = start + torch.arange(width, device=self.device)[None, :]
        full_mask = torch.cat([past_mask, mask], dim=1) if past_mask is not None else mask
        out = self.model(input_ids=ids, attention_mask=full_mask, position_ids=positions,
                         past_key_values=past, use_cache=True)
        self.tokens_computed += int(mask.sum())
        return out.logits, out.past_key_values, full_mask

    def _select(self, cache, index: list[int]):
        """A new cache holding the given batch rows (repeats allowed)."""
        from transformers import DynamicCache
        idx = self.torch.tensor(index, dtype=self.torch.long, device=self.device)
        return DynamicCache(ddp_cache_data=[(layer.keys.index_select(0, idx),
                                             layer.values.index_select(0, idx))
                                            for layer in cache.layers])

    def _prefix(self, seqs: list[list[int]]):
        """Shared prefix of a group, its cache and mask; every sequence keeps >= 1 token."""
        if not self.config.prefix_cache or len(seqs) == 0:
            return 0, None, None
        p = min(common_prefix_len(seqs), min(len(s) for s in seqs) - 1)
        if p <= 0:
            return 0, None, None
        with self.torch.inference_mode():
            _, cache, mask = self._forward([seqs[0][:p]])
        return p, cache, mask

    def _oom_safe(self, run: Callable[[list], None], items: list) -> None:
        """Run ``run`` on chunks of ``items``; halve the batch size on out-of-memory."""
        i = 0
        while i < len(items):
            chunk = items[i:i + self.batch_size]
            try:
                run(chunk)
            except (RuntimeError, MemoryError) as exc:  # torch.OutOfMemoryError is a RuntimeError
                if not _is_oom(exc) or self.batch_size == 1:
                    raise
                self.batch_size = max(1, self.batch_size // 2)
                if self.device.startswith("cuda"):
                    self.torch.cuda.empty_cache()
                continue
            i += len(chunk)

    # ----------------------------------------------------------------------------- score
    def score(self, requests: Sequence[ScoreRequest], progress=None) -> list[list[Scored]]:
        """Token log-probs of every continuation of every request, in request order."""
        results: list[list[Scored] | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.group, []).append(i)
        for members in groups.values():
            self._score_group(requests, members, results, progress)
        return results  # type: ignore[return-value]

    def _encode_request(self, r: ScoreRequest) -> tuple[list[int], list[list[int]]]:
        if r.continuation_ids:
            ctx = self.encode(r.context) if r.context else [self.prefix_token_id]
            return ctx, [list(c) for c in r.continuation_ids]
        pairs = [self.encode_pair(r.context, c) for c in r.continuations]
        ctx = pairs[0][0] if pairs else self.encode(r.context)
        for c_ctx, _ in pairs:
            if c_ctx != ctx:  # only when continuations move different trailing spaces
                raise UserError("continuations of one request must not differ in leading "
                                "whitespace handling; put the separator into every option")
        return ctx, [c for _, c in pairs]

    def _check_length(self, ctx: list[int], conts: list[list[int]]) -> None:
        longest = len(ctx) + max((len(c) for c in conts), default=0)
        if longest > self.max_length:
            raise UserError(f"a prompt of {longest} tokens exceeds the model's context of "
                            f"{self.max_length}; use fewer examples or --too-long skip")

    def _score_group(self, requests, members, results, progress) -> None:
        torch = self.torch
        encoded = {i: self._encode_request(requests[i]) for i in members}
        for i in members:
            self._check_length(*encoded[i])
            self.tokens_full += sum(len(encoded[i][0]) + len(c) for c in encoded[i][1])
        p, cache_p, mask_p = self._prefix([encoded[i][0] for i in members])

        def run(chunk: list[int]) -> None:
            with torch.inference_mode():
                suffixes = [encoded[i][0][p:] for i in chunk]
                past = self._select(cache_p, [0] * len(chunk)) if p else None
                past_mask = mask_p.expand(len(chunk), -1) if p else None
                logits, cache_c, mask_c = self._forward(suffixes, past, past_mask)
                last = torch.stack([logits[j, len(s) - 1] for j, s in enumerate(suffixes)])
                last_lp = torch.log_softmax(last.float(), dim=-1)
                scored: dict[tuple[int, int], list[float]] = {}
                long_pairs = []
                for j, i in enumerate(chunk):
                    for k, cont in enumerate(encoded[i][1]):
                        if not cont:
                            scored[(j, k)] = []
                            continue
                        scored[(j, k)] = [float(last_lp[j, cont[0]])]
                        if len(cont) > 1:
                            long_pairs.append((j, k, cont))
                for sub in _chunks(long_pairs, self.batch_size * 4):
                    past2 = self._select(cache_c, [j for j, _, _ in sub])
                    logits2, _, _ = self._forward([c[:-1] for _, _, c in sub], past2,
                                                  mask_c[[j for j, _, _ in sub]])
                    lp2 = torch.log_softmax(logits2.float(), dim=-1)
                    for row, (j, k, cont) in enumerate(sub):
                        target = torch.tensor(cont[1:], device=lp2.device)
                        got = lp2[row, torch.arange(len(cont) - 1, device=lp2.device), target]
                        scored[(j, k)].extend(got.tolist())
                for j, i in enumerate(chunk):
                    conts = encoded[i][1]
                    results[i] = [Scored(scored[(j, k)], conts[k]) for k in range(len(conts))]
            if progress is not None:
                progress.update(len(chunk))

        self._oom_safe(run, members)

    def token_probs(self, pairs: Sequence[tuple[str, Sequence[int]]], group: str = ""
                    ) -> list[list[float]]:
        """Teacher-forced probability of each given target token after its prompt."""
        import math
        reqs = [ScoreRequest(prompt, (), group=group, continuation_ids=(tuple(ids),))
                for prompt, ids in pairs]
        return [[math.exp(x) for x in r[0].token_logprobs] for r in self.score(reqs)]

    # ----------------------------------------------------------------------------- generate
    def generate(self, requests: Sequence[GenerateRequest], progress=None) -> list[list[Generated]]:
        """Greedy output (one per request) or ``samples`` samples per request."""
        results: list[list[Generated] | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.group, []).append(i)
        for members in groups.values():
            self._generate_group(requests, members, results, progress)
        return results  # type: ignore[return-value]

    def _row_generator(self, req: GenerateRequest, sample: int):
        # One generator per sample, seeded from the prompt: the draws do not depend on batch
        # size or on which other prompts share the batch, so reruns and resumes agree.
        h = hashlib.sha1(f"{req.seed}\x1f{sample}\x1f{req.prompt}".encode()).digest()
        g = self.torch.Generator(device="cpu")
        g.manual_seed(int.from_bytes(h[:8], "little") & ((1 << 63) - 1))
        return g

    def _generate_group(self, requests, members, results, progress) -> None:
        torch = self.torch
        encoded = {i: self.encode(requests[i].prompt) for i in members}
        for i in members:
            r = requests[i]
            if len(encoded[i]) + r.max_new_tokens > self.max_length:
                raise UserError(f"a prompt of {len(encoded[i])} tokens plus {r.max_new_tokens} "
                                f"new ones exceeds the model's context of {self.max_length}")
            self.tokens_full += max(1, r.samples) * (len(encoded[i]) + r.max_new_tokens)
        p, cache_p, mask_p = self._prefix([encoded[i] for i in members])
        out: dict[int, list[Generated]] = {i: [] for i in members}

        def run_prompts(chunk: list[int]) -> None:
            with torch.inference_mode():
                suffixes = [encoded[i][p:] for i in chunk]
                past = self._select(cache_p, [0] * len(chunk)) if p else None
                past_mask = mask_p.expand(len(chunk), -1) if p else None
                logits, cache_c, mask_c = self._forward(suffixes, past, past_mask)
                last = torch.stack([logits[j, len(s) - 1] for j, s in enumerate(suffixes)])
                rows = [(j, i, s) for j, i in enumerate(chunk)
                        for s in range(max(1, requests[i].samples))]
                for sub in _chunks(rows, self.batch_size * 4):
                    self._decode(requests, sub, last, cache_c, mask_c, out)
            if progress is not None:
                progress.update(len(chunk))

        self._oom_safe(run_prompts, members)
        for i in members:
            results[i] = out[i]

    def _decode(self, requests, rows, last_logits, cache_c, mask_c, out) -> None:
        torch = self.torch
        js = [j for j, _, _ in rows]
        cache = self._select(cache_c, js)
        mask = mask_c[js]
        lp = torch.log_softmax(last_logits[js].float(), dim=-1)
        reqs = [requests[i] for _, i, _ in rows]
        gens = [None if r.samples == 0 else self._row_generator(r, s)
                for r, (_, _, s) in zip(reqs, rows)]
        ids: list[list[int]] = [[] for _ in rows]
        lps: list[list[float]] = [[] for _ in rows]
        watched: list[list[float]] = [[] for _ in rows]
        done = [False] * len(rows)
        steps = max(r.max_new_tokens for r in reqs)
        for t in range(steps):
            greedy = lp.argmax(dim=-1)
            probs_cpu = None
            next_ids = []
            for n, r in enumerate(reqs):
                if gens[n] is None:
                    tok = int(greedy[n])
                else:
                    if probs_cpu is None:
                        probs_cpu = lp.exp().cpu()
                    tok = int(torch.multinomial(probs_cpu[n], 1, generator=gens[n]))
                if t < len(r.watch):
                    watched[n].append(float(lp[n, r.watch[t]]))
                if not done[n]:
                    if tok == self.eos_id or t >= r.max_new_tokens:
                        done[n] = True
                    else:
                        ids[n].append(tok)
                        lps[n].append(float(lp[n, tok]))
                        if r.stop and any(s in self.tok.decode(ids[n]) for s in r.stop):
                            done[n] = True
                next_ids.append(tok)
            need_watch = any(t + 1 < len(r.watch) for r in reqs)
            if (all(done) and not need_watch) or t == steps - 1:
                break
            logits, cache, mask = self._forward([[x] for x in next_ids], cache, mask)
            lp = torch.log_softmax(logits[:, 0].float(), dim=-1)
        for n, (_, i, _) in enumerate(rows):
            text, keep = self._cut(ids[n], reqs[n].stop)
            out[i].append(Generated(text, ids[n][:keep], lps[n][:keep], watched[n]))

    def _cut(self, ids: list[int], stop: tuple[str, ...]) -> tuple[str, int]:
        text = self.tok.decode(ids, skip_special_tokens=True)
        if not stop:
            return text, len(ids)
        cut = min((text.find(s) for s in stop if s in text), default=-1)
        if cut < 0:
            return text, len(ids)
        text = text[:cut]
        keep = len(ids)
        while keep > 0 and len(self.tok.decode(ids[:keep - 1], skip_special_tokens=True)) >= cut:
            keep -= 1
        return text, keep
