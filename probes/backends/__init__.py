"""Model backends: raw numbers out (log-probs, texts), reductions belong to evaluators.

``load_backend`` is the one factory; there is no registry filled by import side effects.
"""
from __future__ import annotations

from probes.backends.config import BackendConfig


def load_backend(config: BackendConfig, *, masked: bool = False):
    """A causal-LM backend (``score``, ``generate``, ``token_probs``) or, with ``masked``, a
    masked-LM backend (``fill_mask``)."""
    from probes.backends.loading import load_model
    model, tokenizer, device = load_model(config, masked=masked)
    if masked:
        from probes.backends.hf_masked import HFMasked
        return HFMasked(model, tokenizer, device, config)
    from probes.backends.hf_causal import HFCausal
    return HFCausal(model, tokenizer, device, config)


__all__ = ["BackendConfig", "load_backend"]
