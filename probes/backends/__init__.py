"""Model backends: raw numbers out (log-probs, texts), reductions belong to evaluators.

:data:`KINDS` is the one table of backend kinds (no registry filled by import side effects):
each kind's capabilities, known before any model loads, and its loader. The contract a
backend meets is in :mod:`factprobe.probes.backends.base`. Adding a backend: its module, and its row here.
"""
from __future__ import annotations

from collections.abc import Mapping

from factprobe.core.errors import UserError
from factprobe.probes.backends import hf_causal, hf_masked  # cheap: torch loads only in ``load``
from factprobe.probes.backends.base import Backend, BackendKind
from factprobe.probes.backends.config import BackendConfig

KINDS: dict[str, BackendKind] = {
    "hf-causal": BackendKind(hf_causal.CAPABILITIES, hf_causal.load),
    "hf-masked": BackendKind(hf_masked.CAPABILITIES, hf_masked.load),
}


def backend_kind(config: BackendConfig, kinds: Mapping[str, BackendKind] = KINDS
                 ) -> BackendKind:
    """The row of ``kinds`` that ``config`` names."""
    if config.kind not in kinds:
        raise UserError(f"backend kind {config.kind!r} is not known; known kinds: "
                        f"{', '.join(sorted(kinds))}")
    return kinds[config.kind]


def load_backend(config: BackendConfig, kinds: Mapping[str, BackendKind] = KINDS) -> Backend:
    """Load the backend of ``config.kind`` (``hf-causal``: ``score``, ``generate``,
    ``token_probs``; ``hf-masked``: ``fill_mask``)."""
    return backend_kind(config, kinds).load(config)


__all__ = ["KINDS", "Backend", "BackendConfig", "BackendKind", "backend_kind", "load_backend"]
