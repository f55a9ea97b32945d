"""Loading a model and tokenizer, with one clear error when that is impossible."""
from __future__ import annotations

import os

from builders.errors import UserError

from .config import BackendConfig


def pick_device(requested: str) -> str:
    import torch
    if requested != "auto":
        if requested.startswith("cuda") and not torch.cuda.is_available():
            raise UserError(f"--device {requested}: no CUDA device is available here; use "
                            f"--device cpu")
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(requested: str, device: str):
    import torch
    names = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if requested == "auto":
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if requested not in names:
        raise UserError(f"--dtype {requested!r}: choose auto, float32, bfloat16 or float16")
    return names[requested]


def load_model(config: BackendConfig, *, masked: bool = False):
    from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM,
                              AutoTokenizer)
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    device = pick_device(config.device)
    dtype = pick_dtype(config.dtype, device)
    kwargs = {"revision": config.revision, "trust_remote_code": config.trust_remote_code}
    where = config.model
    try:
        model_config = AutoConfig.from_pretrained(where, **kwargs)
    except (OSError, ValueError) as exc:
        offline = os.environ.get("HF_HUB_OFFLINE") or not os.path.exists(where)
        hint = ("it is not a local folder, and the Hub copy is not in the local cache (is the "
                "network reachable?)" if offline else str(exc).splitlines()[0])
        raise UserError(f"cannot load model {where!r}: {hint}") from None
    auto = AutoModelForMaskedLM if masked else AutoModelForCausalLM
    archs = getattr(model_config, "architectures", None) or []
    # BERT has a causal head class too, so the auto mapping alone would accept it; the saved
    # architecture says what the weights were trained as.
    trained_masked = bool(archs) and all(a.endswith("ForMaskedLM") for a in archs)
    trained_causal = bool(archs) and all(a.endswith(("ForCausalLM", "LMHeadModel"))
                                         for a in archs)
    if (type(model_config) not in auto._model_mapping or (masked and trained_causal)
            or (not masked and trained_masked)):
        kind = "masked" if masked else "causal"
        other = "causal" if masked else "masked"
        raise UserError(f"model {where!r} ({model_config.model_type}) is not a {kind} language "
                        f"model; this method needs a {kind} LM (it looks like a {other} one)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
        model = auto.from_pretrained(where, dtype=dtype, **kwargs)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load model {where!r}: {str(exc).splitlines()[0]}") from None
    model.to(device)
    model.eval()
    return model, tokenizer, device
