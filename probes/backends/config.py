from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendConfig:
    """How to load and run a model (read once from the command line)."""

    model: str                       # Hub name or local folder
    revision: str | None = None
    dtype: str = "auto"              # auto: bfloat16 on a GPU that supports it, else float32
    device: str = "auto"             # auto: cuda if available, else cpu
    batch_size: int = 32             # rows per forward pass; halved on out-of-memory
    trust_remote_code: bool = False  # never on unless asked: it runs code from the model repo
    # prepend BOS; None: as the tokenizer does by default (Llama-family yes, GPT-2/Pythia no),
    # which is what vLLM, the ZP-LKE authors' runner, sends; the backend resolves it
    add_bos: bool | None = None
    prefix_cache: bool = True        # reuse the key/value cache of shared prefixes
    kind: str = "hf-causal"          # a key of factprobe.probes.backends.KINDS: which backend loads it
