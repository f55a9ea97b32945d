"""Model backends: raw numbers out (log-probs, texts), reductions belong to evaluators.

:data:`KINDS` is the one table of backend kinds (no registry filled by import side effects):
each kind's capabilities, known before any model loads; its loader, named lazily (a kind's
heavy code is imported only when the kind is chosen); and the module owning its options (its
flags and config dataclass, light to import). The contract a backend meets is in
:mod:`factprobe.probes.backends.base`. Adding a backend: its module, and its row here.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping

from factprobe.core.errors import UserError
from factprobe.core.lazy import Lazy
from factprobe.probes.backends.base import Backend, BackendKind
from factprobe.probes.backends.config import BackendConfig

_HF = "factprobe.probes.backends.config"      # the Hugging Face kinds' flags and config
_PKG = "factprobe.probes.backends"

KINDS: dict[str, BackendKind] = {
    "hf-causal": BackendKind(frozenset({"score", "generate", "token_ids", "watch"}),
                             Lazy(f"{_PKG}.hf_causal", "load"), options=_HF, threads=True),
    "hf-masked": BackendKind(frozenset({"fill_mask", "mask_each"}),
                             Lazy(f"{_PKG}.hf_masked", "load"), options=_HF, threads=True),
    # deterministic numbers from a seed, no model (tests, dry plumbing): backends/fake.py
    "fake": BackendKind(frozenset({"score", "generate", "fill_mask", "token_ids", "watch",
                                   "mask_each"}),
                        Lazy(f"{_PKG}.fake", "load"), options=f"{_PKG}.fake"),
    # any OpenAI-compatible completions server (vLLM, llama.cpp, ...): backends/openai_server.py;
    # one without prompt log-probs loads with generate only (refused for scoring after load)
    "openai": BackendKind(frozenset({"score", "generate"}),
                          Lazy(f"{_PKG}.openai_server", "load"),
                          options=f"{_PKG}.openai_options"),
}


def backend_kind(config, kinds: Mapping[str, BackendKind] = KINDS) -> BackendKind:
    """The row of ``kinds`` that ``config`` (any kind's config: it has ``kind``) names."""
    return kind_named(config.kind, kinds)


def kind_named(name: str, kinds: Mapping[str, BackendKind] = KINDS) -> BackendKind:
    if name not in kinds:
        raise UserError(f"backend kind {name!r} is not known; known kinds: "
                        f"{', '.join(sorted(kinds))}")
    return kinds[name]


def options_module(kind: BackendKind):
    """The module owning ``kind``'s flags and config (``add_flags``, ``from_args``)."""
    return importlib.import_module(kind.options)


def kind_config(name: str, args, kinds: Mapping[str, BackendKind] = KINDS):
    """The config of kind ``name`` from parsed ``factprobe eval`` flags."""
    kind = kind_named(name, kinds)
    if not kind.options:
        raise UserError(f"backend kind {name!r} has no command-line options; use it from "
                        f"Python (factprobe.probes.engine.runner.run_eval)")
    return options_module(kind).from_args(args, name)


def load_backend(config, kinds: Mapping[str, BackendKind] = KINDS) -> Backend:
    """Load the backend of ``config.kind`` (``hf-causal``: ``score``, ``generate``,
    ``token_ids``, ``watch``; ``hf-masked``: ``fill_mask``, ``mask_each``; ``fake``: all of
    them; ``openai``: ``score`` and ``generate``, or ``generate`` alone for a server without
    prompt log-probs)."""
    return backend_kind(config, kinds).load(config)


__all__ = ["KINDS", "Backend", "BackendConfig", "BackendKind", "Lazy", "backend_kind",
           "kind_config", "kind_named", "load_backend", "options_module"]
