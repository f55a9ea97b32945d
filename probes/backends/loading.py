"""Loading a model and tokenizer, with one clear error when that is impossible."""
from __future__ import annotations

from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.probes.backends.config import DEVICE, BackendConfig
from factprobe.probes.backends.model_files import check_model_folder


def pick_device(requested: str) -> str:
    import torch
    if not DEVICE.match(requested):
        raise UserError(f"--device {requested!r}: use auto, cpu, cuda, cuda:N or mps")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda"):
        if not torch.cuda.is_available():
            raise UserError(f"--device {requested}: no CUDA device is available here; use "
                            f"--device cpu")
        index = int(requested.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise UserError(f"--device {requested}: this machine has "
                            f"{torch.cuda.device_count()} CUDA device(s), numbered from 0")
    if requested == "mps" and not torch.backends.mps.is_available():
        raise UserError("--device mps: no Apple GPU (MPS) is available here; use --device cpu")
    return requested


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


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and len(out) < 8:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def hub_problem(where: str, revision: str | None, exc: BaseException) -> str:
    """Why a model that is not a local folder could not be loaded from the Hub."""
    from huggingface_hub import constants
    from huggingface_hub import errors as hf
    chain = _chain(exc)

    def seen(kind) -> bool:
        return any(isinstance(e, kind) for e in chain)
    here = "no such folder here"
    if seen(hf.HFValidationError):
        return f"{here}, and not a Hub model id (ORG/NAME) either"
    if seen(hf.GatedRepoError):
        return ("it is gated on the Hub: accept its terms on the model page and set "
                "HF_TOKEN to a token of that account")
    if seen(hf.RevisionNotFoundError):
        return f"the Hub model has no revision {revision!r}"
    if seen(hf.RepositoryNotFoundError):
        return (f"{here}, and no such model on the Hub (or it is private: set HF_TOKEN to "
                f"a token with access)")
    if constants.HF_HUB_OFFLINE:
        return (f"{here}, and with HF_HUB_OFFLINE set the Hub copy must be in the local "
                f"cache, which it is not; download it while online, or give a local folder")
    if seen(hf.LocalEntryNotFoundError):
        return (f"{here}, and the Hugging Face Hub ({constants.ENDPOINT}) could not be reached "
                f"to download it; check the network or HF_ENDPOINT, or give a local folder")
    return _first_line(exc)


def _load(what: str, where: str, local: bool, revision: str | None, fn):
    """``fn()``, with any failure turned into one line. transformers raises whatever its
    parsers and the Hub client raise (OSError, ValueError, KeyError, Rust errors, pickling
    errors for a damaged .bin...), so the net is wide on purpose; the message keeps the
    original reason."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 (see the docstring)
        if isinstance(exc, UserError):
            raise
        why = _local_problem(what, where, exc) if local else hub_problem(where, revision, exc)
        raise UserError(f"cannot load model {where!r}: {why}") from None


def _local_problem(what: str, where: str, exc: BaseException) -> str:
    """Which file of a local model folder failed, and how."""
    text = _first_line(exc)
    if what != "weights":
        return f"{what}: {text}"
    files = sorted(p.name for p in Path(where).iterdir()
                   if p.suffix in (".safetensors", ".bin", ".pt", ".pth"))
    named = ", ".join(files[:3]) or "the weights"
    if "mismatched_sizes" in text or "size mismatch" in text:
        return (f"the tensors in {named} do not have the shapes config.json describes; "
                f"the two come from different models")
    return f"{named} cannot be loaded ({text[:200]})"


def load_model(config: BackendConfig, *, masked: bool = False):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    device = pick_device(config.device) if not config.device_map else None
    where = config.model
    local = Path(where).is_dir()
    if local:
        if config.revision:
            raise UserError(f"--revision {config.revision}: {where} is a local folder, which "
                            f"has no revisions; drop --revision (it is for Hub models)")
        check_model_folder(Path(where))
    elif Path(where).exists():
        raise UserError(f"--model {where}: a file, not a model folder or Hub model id")
    kwargs = {"revision": config.revision, "trust_remote_code": config.trust_remote_code}
    model_config = _load("config.json", where, local, config.revision,
                         lambda: AutoConfig.from_pretrained(where, **kwargs))
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
    placed: dict = {}
    if config.device_map:
        import logging

        from factprobe.probes.backends import placement
        # accelerate warns that offloaded weights sit on the meta device: that is the request
        logging.getLogger("accelerate").setLevel(logging.ERROR)
        # --dtype auto follows the device that computes, as with --device
        dtype = pick_dtype(config.dtype, placement.planned_main_device(config))
        try:
            import accelerate  # noqa: F401
        except ImportError:
            raise UserError("--device-map needs accelerate: pip install 'factprobe[models]' "
                            "(or pip install accelerate)") from None
        try:
            device_map = placement.resolve(config, model_config, auto, dtype)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 (accelerate and the model's own code)
            raise UserError(f"--device-map {config.device_map}: accelerate cannot place "
                            f"model {where!r} ({_first_line(exc)[:200]})") from None
        placed = {"device_map": device_map}
        if config.offload_folder and "disk" in device_map.values():
            placed["offload_folder"] = placement.offload_dir(config.offload_folder)
    else:
        dtype = pick_dtype(config.dtype, device)
    tokenizer = _load("tokenizer", where, local, config.revision,
                      lambda: AutoTokenizer.from_pretrained(where, **kwargs))
    if len(tokenizer) <= len(tokenizer.all_special_tokens):
        raise UserError(f"the tokenizer of {where!r} has an empty vocabulary; save the "
                        f"model's own tokenizer beside it (tokenizer.save_pretrained)")
    model = _load("weights", where, local, config.revision,
                  lambda: auto.from_pretrained(where, dtype=dtype, **placed, **kwargs))
    if placed:
        # accelerate's hooks move every block's inputs; the token ids start where the
        # embeddings compute
        from factprobe.probes.backends.placement import input_device
        device = input_device(model, placed["device_map"])
    else:
        model.to(device)
    model.eval()
    return model, tokenizer, device
