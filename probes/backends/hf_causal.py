"""Causal LMs through transformers, with shared-prefix key/value caching.

Scoring (context, continuations) computes every token once: the longest token prefix shared
by a group of requests (ZP-LKE: a relation's 50 examples) in one pass whose keys and values are
cached; then each request's own context suffix and the trie of its continuations (options that
begin alike share those tokens) as one small tree, many trees packed side by side into the rows
of one forward pass (``packing.py``). A 4D attention mask restricts every token to the prefix
and its own ancestors and the position ids are given explicitly, so every number equals a plain
full-sequence computation. Logits are computed only where a continuation token is predicted,
and a log-prob is that logit minus the row's logsumexp (no full log-softmax table).
Tokens are split as lm-evaluation-harness splits them (encode context + continuation, drop the
context's tokens), so scores are comparable with it.

Over 400 lines on purpose: scoring and generation share the prefix cache, the forward pass and
the out-of-memory halving, which would otherwise cross module boundaries as private calls.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from factprobe.core.errors import UserError
from factprobe.probes.backends.config import BackendConfig
from factprobe.probes.backends.hf_base import HFBackend
from factprobe.probes.backends.packing import build_segment, make_batch, pack
from factprobe.probes.backends.tokens import PairEncoder, bos_by_default
from factprobe.probes.requests import Generated, GenerateRequest, Scored, ScoreRequest

ROW_TOKENS = 256                      # target length of a packed row
TOKENS_PER_ROW_OF_BATCH = {"cpu": 64, "cuda": 256}   # packed tokens per forward = batch x this
LOGIT_BYTES = {"cpu": 512 << 20, "cuda": 4 << 30}     # cap on the logits of one forward
CAPABILITIES = frozenset({"score", "generate", "token_ids", "watch"})


def load(config: BackendConfig) -> HFCausal:
    from factprobe.probes.backends.loading import load_model
    return HFCausal(*load_model(config, masked=False), config)


def resolve_add_bos(wanted: bool | None, tokenizer) -> bool:
    """``--add-bos`` / ``--no-add-bos``, or with neither (None) what the tokenizer does by
    default, as vLLM does."""
    if wanted is None:
        return bos_by_default(tokenizer)
    if wanted and tokenizer.bos_token_id is None:
        raise UserError("--add-bos: this tokenizer has no BOS token; drop --add-bos")
    return bool(wanted)


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


def keeps_per_row(model) -> bool:
    """Whether ``model.forward`` honours a per-row (2-D) ``logits_to_keep``: positions per row,
    or a boolean (rows, width) mask. Transformers' models have it through
    ``slice_logits_to_keep`` (5.23 does; 5.17 does not); before, their forwards index
    ``hidden[:, keep, :]``, which takes a 2-D tensor as one table of positions for every row
    and returns the logits of the wrong positions without an error (transformers 5.17 on a
    GPU: scores off by up to 6.6 nats; on a CPU an IndexError). The forward's own source is
    read rather than the library's version, because a model class (remote code, an
    architecture not yet moved over) may slice its own way; where the source cannot be read,
    or a subclass's forward only calls its parent's, the answer is no, and every logit is computed
    and the kept ones selected afterwards: slower, never wrong."""
    model = getattr(model, "_orig_mod", model)     # torch.compile's wrapper: read the model's
    try:
        source = inspect.getsource(inspect.unwrap(type(model).forward))
    except (OSError, TypeError):
        return False
    return "slice_logits_to_keep(" in source


def _chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower()


class HFCausal(HFBackend):
    """``score``, ``generate`` and ``token_probs`` for one causal LM."""

    capabilities = CAPABILITIES

    def __init__(self, model, tokenizer, device: str, config: BackendConfig):
        config = dataclasses.replace(config, add_bos=resolve_add_bos(config.add_bos, tokenizer))
        super().__init__(model, tokenizer, device, config)     # run.json records the choice
        self.name = config.model
        mc = model.config
        self.max_length = int(getattr(mc, "max_position_embeddings", None)
                              or getattr(mc, "n_positions", None) or 2048)
        self.eos_id = tokenizer.eos_token_id
        self.prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None \
            else tokenizer.eos_token_id
        self.attended_keys = 0       # (token, key) pairs attended by scored tokens (FLOP counts)
        self.logit_rows = 0          # positions whose logits scoring computed (FLOP counts)
        self._enc_cache: dict[str, list[int]] = {}
        self._keep_arg = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._keep_rows = self._keep_arg and keeps_per_row(model)
        self._pairs = PairEncoder(tokenizer, config.add_bos, self.prefix_token_id, self.encode,
                                  self.tokenize)
        self._kind = "cuda" if str(device).startswith("cuda") else "cpu"
        vocab = int(getattr(mc, "vocab_size", 0) or len(tokenizer))
        self._max_logit_rows = max(1, LOGIT_BYTES[self._kind] // (vocab * 4))

    # ----------------------------------------------------------------------------- tokens
    def encode(self, text: str) -> list[int]:
        ids = self._enc_cache.get(text)
        if ids is None:
            ids = self._pairs.bos + self.tokenize(text, add_special_tokens=False)["input_ids"]
            if len(self._enc_cache) < 200_000:
                self._enc_cache[text] = ids
        return list(ids)

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """lm-evaluation-harness's split: trailing spaces of the context move to the
        continuation; the continuation's tokens are those of context + continuation after the
        context's own tokens."""
        ctx, conts = self.encode_pairs(context, [continuation])
        return ctx, conts[0]

    def encode_pairs(self, context: str, continuations: Sequence[str]
                     ) -> tuple[list[int], list[list[int]]]:
        """``encode_pair`` for many continuations of one context."""
        return self._pairs.encode([(context, tuple(continuations))])[0]

    def request_tokens(self, request) -> int:
        """Context positions ``request`` takes: its context and longest continuation, or its
        prompt and new tokens."""
        if isinstance(request, ScoreRequest):
            if request.continuation_ids:
                return len(self.encode(request.context)) + \
                    max(len(c) for c in request.continuation_ids)
            pairs = [self.encode_pair(request.context, c) for c in request.continuations] or \
                [(self.encode(request.context), [])]
            return max(len(a) + len(b) for a, b in pairs)
        if isinstance(request, GenerateRequest):
            return len(self.encode(request.prompt)) + request.max_new_tokens
        return 0

    # ----------------------------------------------------------------------------- forward
    def _forward(self, rows: list[list[int]], past=None, past_mask=None, last_only=False):
        """One right-padded batch after an optional cache; returns (logits, cache, mask).
        ``last_only``: logits of each row's last real token only, shape (rows, vocab)."""
        torch = self.torch
        n = len(rows)
        width = max(len(r) for r in rows)
        lens = [len(r) for r in rows]
        pad = self.prefix_token_id or 0
        ids = torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], dtype=torch.long)
        mask = (torch.arange(width)[None, :] < torch.tensor(lens)[:, None]).long()
        ids, mask = ids.to(self.device), mask.to(self.device)
        start = past_mask.sum(dim=1, keepdim=True) if past_mask is not None else \
            torch.zeros((n, 1), dtype=torch.long, device=self.device)
        positions = start + torch.arange(width, device=self.device)[None, :]
        full_mask = torch.cat([past_mask, mask], dim=1) if past_mask is not None else mask
        kwargs = {}
        last = torch.tensor(lens, device=self.device) - 1
        if last_only and self._keep_rows:
            kwargs["logits_to_keep"] = last[:, None]
        out = self.model(input_ids=ids, attention_mask=full_mask, position_ids=positions,
                         past_key_values=past, use_cache=True, **kwargs)
        self.count(tokens_computed=sum(lens))
        logits = out.logits
        if last_only:
            logits = logits[:, 0] if self._keep_rows else logits[torch.arange(n), last]
        return logits, out.past_key_values, full_mask

    def _prefix(self, seqs: list[list[int]]):
        """Shared prefix of a group: (length, per-layer keys and values, mask); every sequence
        keeps >= 1 token of its own. No logits are needed here."""
        if not self.config.prefix_cache or len(seqs) == 0:
            return 0, None, None
        p = min(common_prefix_len(seqs), min(len(s) for s in seqs) - 1)
        if p <= 0:
            return 0, None, None
        torch = self.torch
        ids = torch.tensor([seqs[0][:p]], dtype=torch.long, device=self.device)
        kwargs = {"logits_to_keep": 1} if self._keep_arg else {}
        with torch.inference_mode():
            out = self.model(input_ids=ids, position_ids=torch.arange(p, device=self.device)[None],
                             use_cache=True, **kwargs)
        self.count(tokens_computed=p, attended_keys=p * (p + 1) // 2, logit_rows=1)
        kv = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return p, kv, torch.ones((1, p), dtype=torch.long, device=self.device)

    def _oom_safe(self, run: Callable[[list], None], items: list,
                  take: Callable[[list, int], int] | None = None) -> None:
        """Run ``run`` on chunks of ``items`` (``take(items, i)``: where the chunk from ``i``
        ends; default ``batch_size`` items); halve the batch size on out-of-memory."""
        i = 0
        while i < len(items):
            end = take(items, i) if take is not None else i + self.batch_size
            chunk = items[i:end]
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

    def _spans(self, items: list, take: Callable[[list, int], int] | None = None
               ) -> list[tuple[int, int]]:
        """The (start, end) of each unit of ``items`` as ``_oom_safe`` would cut them now:
        fixed by the items and the batch size, never by how many threads compute them."""
        spans, i = [], 0
        while i < len(items):
            end = take(items, i) if take is not None else i + self.batch_size
            spans.append((i, end))
            i = end
        return spans

    def _in_lanes(self, run: Callable[[list], None], units: list) -> bool:
        """``run`` on every unit, spread over the lanes (each unit on one thread, so its bits
        do not depend on the lanes); False, with nothing to keep, after an out-of-memory, and
        the batch size halved: the caller then goes unit by unit as before."""
        try:
            for _ in self.lanes.imap(run, units):
                pass
        except (RuntimeError, MemoryError) as exc:
            if not _is_oom(exc) or self.batch_size == 1:
                raise
            self.batch_size = max(1, self.batch_size // 2)
            return False
        return True

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

    def _encode_requests(self, reqs: list[ScoreRequest]) -> list:
        """(context tokens, continuation tokens) of each request."""
        text_reqs = [r for r in reqs if not r.continuation_ids]
        encoded = iter(self._pairs.encode([(r.context, r.continuations) for r in text_reqs]))
        return [(self.encode(r.context) if r.context else [self.prefix_token_id],
                 [list(c) for c in r.continuation_ids]) if r.continuation_ids
                else next(encoded) for r in reqs]

    def _check_length(self, ctx: list[int], conts: list[list[int]]) -> None:
        longest = len(ctx) + max((len(c) for c in conts), default=0)
        if longest > self.max_length:
            raise UserError(f"a prompt of {longest} tokens exceeds the model's context of "
                            f"{self.max_length}; use fewer examples or --too-long skip")

    def _score_group(self, requests, members, results, progress) -> None:
        encoded = dict(zip(members, self._encode_requests([requests[i] for i in members])))
        for i in members:
            self._check_length(*encoded[i])
            self.tokens_full += sum(len(encoded[i][0]) + len(c) for c in encoded[i][1])
        p, kv, _ = self._prefix([encoded[i][0] for i in members])
        segments = [build_segment(i, encoded[i][0][p:], encoded[i][1]) for i in members]
        if self._kind == "cpu" and self._in_lanes(
                lambda chunk: self._finish(self._launch(chunk, p, kv), encoded, results,
                                           progress),
                [segments[i:j] for i, j in self._spans(segments, self._take_tokens)]):
            return
        pending: list = []

        def run(chunk) -> None:
            # launch this pass, then read the previous one: on a GPU the host prepares the
            # next pass while the device still computes the last
            pending.append(self._launch(chunk, p, kv))
            if len(pending) > 1:
                self._finish(pending.pop(0), encoded, results, progress)

        self._oom_safe(run, segments, self._take_tokens)
        for launched in pending:
            self._finish(launched, encoded, results, progress)

    def _take_tokens(self, segments, i: int) -> int:
        """End of the chunk from ``i`` that fills one forward pass's token budget."""
        budget = min(self.batch_size * TOKENS_PER_ROW_OF_BATCH[self._kind],
                     self._max_logit_rows)
        end, total = i, 0
        while end < len(segments) and (end == i or total + len(segments[end]) <= budget):
            total += len(segments[end])
            end += 1
        return end

    def _put(self, array: np.ndarray):
        t = self.torch.from_numpy(array)
        if self._kind == "cuda":   # pinned + non-blocking: the host does not wait for the GPU
            return t.pin_memory().to(self.device, non_blocking=True)
        return t if self.device == "cpu" else t.to(self.device)

    def _launch(self, segments, p: int, kv):
        """One forward pass over packed segments; returns the batch and the (not yet read)
        log-probs of its target tokens."""
        from factprobe.probes.backends.kv import expand
        torch = self.torch
        b = make_batch(pack(segments, ROW_TOKENS), p, self.prefix_token_id or 0)
        dev, dtype = self.device, self.model.dtype
        rows, width = b.ids.shape
        allowed = self._put(b.allowed)
        if p:
            allowed = torch.cat([torch.ones((rows, width, p), dtype=torch.bool, device=dev),
                                 allowed], 2)
        mask = torch.zeros(allowed.shape, dtype=dtype, device=dev)
        mask.masked_fill_(~allowed, torch.finfo(dtype).min)
        if not self._keep_rows:
            keep, where = None, b.keep_index()
        elif self._kind == "cuda":   # positions, not a boolean mask: no host sync
            slots, where = b.keep_slots()
            keep = self._put(slots)
        else:
            keep, where = self._put(b.keep), b.keep_index()
        with torch.inference_mode():
            out = self.model(input_ids=self._put(b.ids), attention_mask=mask[:, None],
                             position_ids=self._put(b.positions),
                             past_key_values=expand(kv, rows) if p else None,
                             use_cache=bool(p),
                             **({"logits_to_keep": keep} if keep is not None else {}))
            logits = out.logits.reshape(-1, out.logits.shape[-1])
            if keep is None:
                logits = logits.index_select(0, self._put(np.flatnonzero(b.keep)))
            lse = torch.cat([torch.logsumexp(part.float(), dim=-1)
                             for part in logits.split(self._lse_rows(logits.shape[-1]))])
            at = self._put(where)
            got = logits[at, self._put(b.t_tok)].float() - lse[at]
        self.count(tokens_computed=b.real.sum(), attended_keys=b.attended,
                   logit_rows=b.keep.sum())
        return b, got, len(segments)

    def _lse_rows(self, vocab: int) -> int:
        """Rows per logsumexp call. On a CPU, a few rows at a time (about 2 MB) stay in the
        core's cache between logsumexp's passes (max, then sum of exp): 3x faster than whole
        tables, which stream from memory twice. A GPU wants large calls."""
        if self._kind == "cuda":
            return 4096
        return max(1, (2 << 20) // (4 * vocab))

    def _finish(self, launched, encoded, results, progress) -> None:
        b, got, n = launched
        values = got.tolist()
        k = 0
        for request, n_conts in b.owners:
            conts = encoded[request][1]
            scored = []
            for j in range(n_conts):
                start = b.bounds[k - 1] if k else 0
                scored.append(Scored(values[start:b.bounds[k]], conts[j]))
                k += 1
            results[request] = scored
        if progress is not None:
            with self._counting:
                progress.update(n)

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
        from factprobe.probes.backends.kv import expand
        torch = self.torch
        encoded = {i: self.encode(requests[i].prompt) for i in members}
        for i in members:
            r = requests[i]
            if len(encoded[i]) + r.max_new_tokens > self.max_length:
                raise UserError(f"a prompt of {len(encoded[i])} tokens plus {r.max_new_tokens} "
                                f"new ones exceeds the model's context of {self.max_length}")
            self.tokens_full += max(1, r.samples) * (len(encoded[i]) + r.max_new_tokens)
        p, kv_p, mask_p = self._prefix([encoded[i] for i in members])
        out: dict[int, list[Generated]] = {i: [] for i in members}

        def run_prompts(chunk: list[int]) -> None:
            with torch.inference_mode():
                suffixes = [encoded[i][p:] for i in chunk]
                past = expand(kv_p, len(chunk)) if p else None
                past_mask = mask_p.expand(len(chunk), -1) if p else None
                last, cache_c, mask_c = self._forward(suffixes, past, past_mask, last_only=True)
                rows = [(j, i, s) for j, i in enumerate(chunk)
                        for s in range(max(1, requests[i].samples))]
                for sub in _chunks(rows, self.batch_size * 4):
                    self._decode(requests, sub, last, cache_c, mask_c, out)
            if progress is not None:
                with self._counting:
                    progress.update(len(chunk))

        if not (self._kind == "cpu" and self._in_lanes(
                run_prompts, [members[i:j] for i, j in self._spans(members)])):
            out.update({i: [] for i in members})      # what the failed pass kept
            self._oom_safe(run_prompts, members)
        for i in members:
            results[i] = out[i]

    def _decode(self, requests, rows, last_logits, cache_c, mask_c, out) -> None:
        from factprobe.probes.backends import kv
        torch = self.torch
        reqs = [requests[i] for _, i, _ in rows]
        steps = max(r.max_new_tokens for r in reqs)
        js = [j for j, _, _ in rows]
        cache = kv.select(cache_c, js, extra=steps)   # room for every new token: no re-copying
        mask = mask_c[js]
        lp = torch.log_softmax(last_logits[js].float(), dim=-1)
        gens = [None if r.samples == 0 else self._row_generator(r, s)
                for r, (_, _, s) in zip(reqs, rows)]
        ids: list[list[int]] = [[] for _ in rows]
        lps: list[list[float]] = [[] for _ in rows]
        watched: list[list[float]] = [[] for _ in rows]
        done = [False] * len(rows)
        alive = list(range(len(rows)))      # which of ``rows`` the batch's rows are
        for t in range(steps):
            toks = self._next_tokens(lp, [gens[n] for n in alive])
            tok_t = torch.tensor(toks, dtype=torch.long, device=lp.device)
            chosen = lp.gather(1, tok_t[:, None])[:, 0].tolist()
            looking = [k for k, n in enumerate(alive) if t < len(reqs[n].watch)]
            if looking:
                seen = lp[torch.tensor(looking, device=lp.device),
                          torch.tensor([reqs[alive[k]].watch[t] for k in looking],
                                       device=lp.device)].tolist()
                for k, value in zip(looking, seen):
                    watched[alive[k]].append(value)
            for k, n in enumerate(alive):
                if done[n]:
                    continue
                r = reqs[n]
                if toks[k] == self.eos_id or t >= r.max_new_tokens:
                    done[n] = True
                    continue
                ids[n].append(toks[k])
                lps[n].append(chosen[k])
                if r.stop and any(s in self.tok.decode(ids[n]) for s in r.stop):
                    done[n] = True
            keep = [k for k, n in enumerate(alive) if not done[n] or t + 1 < len(reqs[n].watch)]
            if not keep or t == steps - 1:
                break
            if len(keep) <= len(alive) * 3 // 4:      # drop finished rows once enough are
                cache, mask = kv.select(cache, keep, extra=steps - t), mask[keep]
                alive, tok_t = [alive[k] for k in keep], tok_t[keep]
            logits, cache, mask = self._forward(tok_t[:, None].tolist(), cache, mask)
            lp = torch.log_softmax(logits[:, 0].float(), dim=-1)
        for n, (_, i, _) in enumerate(rows):
            text, keep_n = self._cut(ids[n], reqs[n].stop)
            out[i].append(Generated(text, ids[n][:keep_n], lps[n][:keep_n], watched[n]))

    def _next_tokens(self, lp, gens) -> list[int]:
        """Greedy tokens for rows without a generator; for the others a multinomial draw by
        inverse transform: one uniform number from the row's own generator, located in the
        row's cumulative distribution (``sampling.py``), so a draw never depends on the batch."""
        from factprobe.probes.backends.sampling import draw
        torch = self.torch
        toks = [0] * len(gens)
        greedy = [k for k, g in enumerate(gens) if g is None]
        sampled = [k for k, g in enumerate(gens) if g is not None]
        if greedy:
            picked = (lp if len(greedy) == len(gens) else lp[greedy]).argmax(dim=-1).tolist()
            for k, tok in zip(greedy, picked):
                toks[k] = tok
        if sampled:
            u = torch.tensor([float(torch.rand(1, generator=gens[k], dtype=torch.float64))
                              for k in sampled], dtype=torch.float64, device=lp.device)
            rows = lp if len(sampled) == len(gens) else lp[sampled]
            for k, tok in zip(sampled, draw(rows.exp(), u).tolist()):
                toks[k] = tok
        return toks

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
