"""What the Hugging Face backends share: the loaded model, token counts, and what run.json and
the checkpoints record about them."""
from __future__ import annotations

import threading
from dataclasses import asdict

from factprobe.core.lanes import Lanes
from factprobe.probes.backends.base import Usage
from factprobe.probes.backends.config import BackendConfig


class HFBackend:
    """A transformers model and tokenizer on a device (subclasses add the capabilities)."""

    capabilities: frozenset[str] = frozenset()
    masked = False          # recorded in the identity: the same folder loads as either head

    def __init__(self, model, tokenizer, device: str, config: BackendConfig):
        import torch
        self.torch = torch
        self.model = model
        self.tok = tokenizer
        self.device = device
        self.config = config
        self.batch_size = max(1, config.batch_size)
        self.tokens_computed = 0     # tokens actually fed to the model
        self.tokens_full = 0         # tokens a per-sequence approach would feed
        # the threads a group's independent units (forward passes, batches of prompts) may be
        # spread over (the executor's); each unit's bits are those of a one-thread run
        self.lanes = Lanes(1)
        self._counting = threading.Lock()
        self._tokenizing = threading.Lock()

    def shares_lanes(self) -> bool:
        """Whether several lanes may compute with this model at once: on the CPU, and not
        under accelerate's hooks (``--device-map``), which move weights in and out of the
        modules around each forward pass."""
        return str(self.device) == "cpu" and not self.config.device_map

    def tokenize(self, *args, **kwargs):
        """The tokenizer called under a lock that every copy of this backend shares: a fast
        tokenizer keeps its padding setting in the one Rust object, and a call with
        ``padding=True`` beside one without, on two lanes, pads the wrong call's output."""
        with self._tokenizing:
            return self.tok(*args, **kwargs)

    def count(self, **added: int) -> None:
        """Add to the token counters (units of one group may finish on several threads)."""
        with self._counting:
            for name, n in added.items():
                setattr(self, name, getattr(self, name) + int(n))

    def usage(self) -> Usage:
        return Usage(self.tokens_computed, self.tokens_full)

    def describe(self) -> dict:
        config, model = self.config, self.model
        settings = asdict(config)
        del settings["kind"]   # run.json's backend block predates kinds; the kind follows
        for key in config.PLACEMENT:     # from the method, which run.json names
            if not settings[key]:
                del settings[key]
        described = {"name": config.model, "type": model.config.model_type,
                     "revision": config.revision or getattr(model.config, "_commit_hash", None),
                     "parameters": int(sum(p.numel() for p in model.parameters())),
                     "device": self.device, "dtype": str(next(model.parameters()).dtype)}
        placed = getattr(model, "hf_device_map", None)
        if config.device_map and placed:
            described["device_map"] = {m: str(d) for m, d in placed.items()}
        return {"backend": settings, "model": described}

    def identity(self) -> dict:
        from factprobe.probes.backends.identity import model_identity
        return model_identity(self.config, self, masked=self.masked)
