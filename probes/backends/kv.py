"""Key/value caches for the causal backend, built on transformers' ``DynamicCache``.

``expand``: every row sees one shared prefix, as views (no copy). ``select``: chosen rows of a
cache copied once into buffers with room for ``extra`` more tokens, so that decoding writes
each new token in place instead of concatenating the whole cache again at every step (which
made sampling 100 continuations of a long prompt memory-bound).
"""
from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class BufferedLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values are views of larger preallocated buffers."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, extra: int):
        super().__init__()
        b, h, t, d = keys.shape
        self._k = keys.new_empty((b, h, t + extra, d))
        self._v = values.new_empty((b, h, t + extra, values.shape[-1]))
        self._k[:, :, :t] = keys
        self._v[:, :, :t] = values
        self.keys, self.values = self._k[:, :, :t], self._v[:, :, :t]
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        t, n = self.keys.shape[-2], key_states.shape[-2]
        if t + n > self._k.shape[-2]:          # out of room: grow as DynamicLayer does
            self._k = torch.cat([self.keys, key_states], dim=-2)
            self._v = torch.cat([self.values, value_states], dim=-2)
        else:
            self._k[:, :, t:t + n] = key_states
            self._v[:, :, t:t + n] = value_states
        self.keys, self.values = self._k[:, :, :t + n], self._v[:, :, :t + n]
        return self.keys, self.values


def _empty_like(kv: list) -> DynamicCache:
    return DynamicCache(ddp_cache_data=[(k[:, :, :0], v[:, :, :0]) for k, v in kv])


def expand(kv: list, rows: int) -> DynamicCache:
    """A cache whose every row is the same prefix (``kv``: per layer (keys, values) with one
    row): views, no copy; the model's concatenation with the new tokens is the only copy."""
    cache = _empty_like(kv)
    for layer, (k, v) in zip(cache.layers, kv):
        layer.keys, layer.values = k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1)
    return cache


def select(cache, index: list[int], extra: int = 0) -> DynamicCache:
    """A new cache holding the given rows of ``cache`` (repeats allowed), with room for
    ``extra`` more tokens per row."""
    kv = [(layer.keys, layer.values) for layer in cache.layers]
    # a model split over devices (--device-map) keeps each layer's cache on that layer's
    # device: the index goes to each device once
    idx = {}
    for k, _ in kv:
        if k.device not in idx:
            idx[k.device] = torch.tensor(index, dtype=torch.long, device=k.device)
    out = _empty_like(kv)
    out.layers = [BufferedLayer(k.index_select(0, idx[k.device]),
                                v.index_select(0, idx[k.device]), extra) for k, v in kv]
    return out
