"""Masked LMs through transformers: the distribution at one ``[MASK]`` of each prompt."""
from __future__ import annotations

import math
from collections.abc import Sequence

from builders.core.errors import UserError
from probes.backends.config import BackendConfig
from probes.backends.hf_base import HFBackend
from probes.requests import MASK, Masked, MaskRequest

CAPABILITIES = frozenset({"fill_mask"})


def load(config: BackendConfig) -> HFMasked:
    from probes.backends.loading import load_model
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
        self._single: dict[str, int | None] = {}

    def single_token_id(self, word: str) -> int | None:
        """The id of ``word`` if the model writes it as exactly one token, else None."""
        if word not in self._single:
            ids = self.tok(word, add_special_tokens=False)["input_ids"]
            self._single[word] = ids[0] if len(ids) == 1 else None
        return self._single[word]

    def request_tokens(self, request) -> int:
        return 0   # never compared: max_length is None

    def fill_mask(self, requests: Sequence[MaskRequest], progress=None) -> list[Masked]:
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
            enc = self.tok(texts, return_tensors="pt", padding=True).to(self.device)
            with torch.inference_mode():
                logits = self.model(**enc).logits
            self.tokens_computed += int(enc["attention_mask"].sum())
            self.tokens_full += int(enc["attention_mask"].sum())
            rows, cols = (enc["input_ids"] == self.tok.mask_token_id).nonzero(as_tuple=True)
            probs = torch.softmax(logits[rows, cols].float(), dim=-1)
            for r, p in zip(chunk, probs):
                top = torch.topk(p, r.top_k)
                cand = []
                for c in r.candidates:
                    tid = self.single_token_id(c)
                    cand.append(float(p[tid]) if tid is not None else math.nan)
                out.append(Masked([self.tok.convert_ids_to_tokens(int(t)) for t in top.indices],
                                  top.values.tolist(), cand))
            if progress is not None:
                progress.update(len(chunk))
        return out
