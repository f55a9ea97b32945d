"""Masked LMs through transformers: the distribution at one ``[MASK]`` of each prompt.

A candidate answer is looked up as the token the model would read at the mask: the prompt is
tokenised with the candidate in the mask's place, and the candidate is one token when that
differs from the masked prompt's tokens at the mask position only. WordPiece (BERT) gives
"Paris"; byte-level BPE (RoBERTa, whose ``<mask>`` swallows the space before it) gives
"ĠParis", a different token from the bare word "Paris" (looking the bare word up would miss
every RoBERTa-style gold); SentencePiece gives "▁Paris".

A request with ``mask_each_from`` (capability ``mask_each``) asks for a pseudo-log-likelihood
instead (Salazar et al., 2020): the text is tokenised once, as the model reads a text (with
its start and end tokens), and each token from that character on is replaced by the mask
token in a copy of its own, the rest unchanged. Masking in the token ids rather than in the
text keeps a word's later pieces ("##vath" of "Quorvath") what they are: "Quor[MASK]vath" as
text would read "vath", another token.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from factprobe.core.errors import UserError
from factprobe.probes.backends.config import BackendConfig
from factprobe.probes.backends.hf_base import HFBackend
from factprobe.probes.requests import MASK, Masked, MaskRequest

CAPABILITIES = frozenset({"fill_mask", "mask_each"})


def load(config: BackendConfig) -> HFMasked:
    from factprobe.probes.backends.loading import load_model
    return HFMasked(*load_model(config, masked=True), config)


class HFMasked(HFBackend):
    """``fill_mask`` for one masked LM (the prompt's MASK becomes the model's mask token)."""

    capabilities = CAPABILITIES
    masked = True
    max_length = None   # one short statement per request: no --too-long policy applies

    def __init__(self, model, tokenizer, device: str, config: BackendConfig):
        super().__init__(model, tokenizer, device, config)
        if tokenizer.mask_token is None:
            raise UserError(f"model {config.model!r} has no mask token; BELIEF needs a masked LM")

    def candidate_ids(self, prompts: Sequence[str], words: Sequence[Sequence[str]]
                      ) -> list[list[int | None]]:
        """Per prompt and each of its words, the one token the word is at the prompt's mask,
        or None when it is more (or merges with the text around the mask). Two tokenizer
        calls for a whole batch: one per text cost more than the model's forward passes.

        The ids are those of one call per text (a fast tokenizer encodes each text of a batch
        on its own, and nothing here pads)."""
        masked = self.tokenize([p.replace(MASK, self.tok.mask_token) for p in prompts],
                               add_special_tokens=False)["input_ids"] if prompts else []
        flat = [p.replace(MASK, w) for p, ws in zip(prompts, words) for w in ws]
        filled = iter(self.tokenize(flat, add_special_tokens=False)["input_ids"]
                      if flat else [])
        out = []
        for m, ws in zip(masked, words):
            at = m.index(self.tok.mask_token_id)
            got = [next(filled) for _ in ws]
            out.append([ids[at] if len(ids) == len(m) and ids[:at] == m[:at]
                        and ids[at + 1:] == m[at + 1:] else None for ids in got])
        return out

    def request_tokens(self, request) -> int:
        return 0   # never compared: max_length is None

    def check_fits(self, tokens: int, prompt: str) -> None:
        """A text longer than the model's positions is a user error (a subject of a
        thousand words), not a tensor-size traceback."""
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if isinstance(limit, int) and tokens > limit:
            raise UserError(f"a fill-mask text is {tokens} tokens, more than the {limit} "
                            f"positions of model {self.config.model!r}: {prompt[:60]!r}...; "
                            f"shorten the dataset's names or templates")

    def fill_mask(self, requests: Sequence[MaskRequest], progress=None) -> list[Masked]:
        each = [i for i, r in enumerate(requests) if r.mask_each_from is not None]
        if not each:
            return self._fill(requests, progress)
        plain = [i for i, r in enumerate(requests) if r.mask_each_from is None]
        got = dict(zip(plain, self._fill([requests[i] for i in plain], progress)))
        got |= dict(zip(each, self._mask_each([requests[i] for i in each], progress)))
        return [got[i] for i in range(len(requests))]

    def mask_each_ids(self, request: MaskRequest) -> tuple[list[int], list[int]]:
        """The request's text as the model reads it (token ids, start and end tokens
        included), and the positions to mask one at a time: the tokens that start at or after
        ``mask_each_from``."""
        if MASK in request.prompt:
            raise UserError(f"a pseudo-log-likelihood text must hold no {MASK} (each of its "
                            f"tokens is masked in turn): {request.prompt!r}")
        if not self.tok.is_fast:
            raise UserError(f"model {self.config.model!r} has a slow tokenizer without "
                            f"character offsets; the subject-only check needs a fast one")
        enc = self.tokenize(request.prompt, return_offsets_mapping=True,
                       return_special_tokens_mask=True)
        start, text = request.mask_each_from, request.prompt
        # a token from ``start`` on; one whose offsets take in the space before it (byte-level
        # BPE without trimmed offsets: "ĠLima" from the space) counts from its word
        at = [i for i, ((a, b), special) in enumerate(zip(enc["offset_mapping"],
                                                          enc["special_tokens_mask"]))
              if not special and b > max(a, start) and not text[a:start].strip()]
        self.check_fits(len(enc["input_ids"]), request.prompt)
        return list(enc["input_ids"]), at

    def _mask_each(self, requests: Sequence[MaskRequest], progress=None) -> list[Masked]:
        torch = self.torch
        texts = [self.mask_each_ids(r) for r in requests]
        # one copy of the text per masked position, every request's copies batched together
        rows = [(k, pos) for k, (_, at) in enumerate(texts) for pos in at]
        logps: list[list[float]] = [[] for _ in requests]
        for i in range(0, len(rows), self.batch_size):
            chunk = rows[i:i + self.batch_size]
            width = max(len(texts[k][0]) for k, _ in chunk)
            ids = torch.full((len(chunk), width), self.tok.pad_token_id or 0)
            attn = torch.zeros((len(chunk), width), dtype=torch.long)
            for j, (k, pos) in enumerate(chunk):
                seq = texts[k][0]
                ids[j, :len(seq)] = torch.tensor(seq)
                ids[j, pos] = self.tok.mask_token_id
                attn[j, :len(seq)] = 1
            ids, attn = ids.to(self.device), attn.to(self.device)
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=attn).logits
            self.tokens_computed += int(attn.sum())
            self.tokens_full += int(attn.sum())
            for j, (k, pos) in enumerate(chunk):
                lp = torch.log_softmax(logits[j, pos].float(), dim=-1)
                logps[k].append(float(lp[texts[k][0][pos]]))
        if progress is not None:
            progress.update(len(requests))
        return [Masked([], [], [], [], token_ids=[seq[p] for p in at], token_logprobs=lp)
                for (seq, at), lp in zip(texts, logps)]

    def _fill(self, requests: Sequence[MaskRequest], progress=None) -> list[Masked]:
        torch = self.torch
        vocab = int(self.model.config.vocab_size)
        top_k = max((r.top_k for r in requests), default=0)
        if top_k > vocab:
            raise UserError(f"--top-k {top_k} is more than the {vocab} tokens of the model's "
                            f"vocabulary; lower --top-k")
        out: list[Masked] = []
        for i in range(0, len(requests), self.batch_size):
            chunk = requests[i:i + self.batch_size]
            texts = []
            for r in chunk:
                if r.prompt.count(MASK) != 1:
                    raise UserError(f"a fill-mask prompt needs exactly one {MASK}: {r.prompt!r}")
                texts.append(r.prompt.replace(MASK, self.tok.mask_token))
            enc = self.tokenize(texts, return_tensors="pt", padding=True).to(self.device)
            for r, n in zip(chunk, enc["attention_mask"].sum(dim=1).tolist()):
                self.check_fits(int(n), r.prompt)
            with torch.inference_mode():
                logits = self.model(**enc).logits
            self.tokens_computed += int(enc["attention_mask"].sum())
            self.tokens_full += int(enc["attention_mask"].sum())
            rows, cols = (enc["input_ids"] == self.tok.mask_token_id).nonzero(as_tuple=True)
            probs = torch.softmax(logits[rows, cols].float(), dim=-1)
            cands = self.candidate_ids([r.prompt for r in chunk],
                                       [list(r.candidates) for r in chunk])
            for r, p, ids in zip(chunk, probs, cands):
                top = torch.topk(p, r.top_k)
                out.append(Masked(
                    [self.tok.convert_ids_to_tokens(int(t)) for t in top.indices],
                    top.values.tolist(),
                    [float(p[t]) if t is not None else math.nan for t in ids],
                    [self.tok.convert_ids_to_tokens(t) if t is not None else None for t in ids]))
            if progress is not None:
                progress.update(len(chunk))
        return out
