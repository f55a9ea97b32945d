"""What numbers a loaded model gives: the identity an eval checkpoint is stored under.

A resumed run may reuse a checkpoint only if the model that would compute it now is the one
that did. The path says nothing about that (``dvc repro`` re-plants a model at the same path),
so the identity is made of what decides the numbers:

- the model's files: a content hash of every file ``from_pretrained`` may read in a local
  folder (weights, config, tokenizer), or the commit of a Hub snapshot;
- the revision asked for, the dtype and the device the weights compute on; for a model spread
  over devices (``--device-map``), the devices its layers compute on, not where each layer's
  weights are kept: a layer computes the same numbers whether its weights sit on the GPU, in
  CPU memory or on disk (accelerate streams them to the GPU), so a run resumes under another
  map over the same kind of devices, and starts over on another kind;
- the backend settings that change numbers (batch size, BOS, prefix cache, remote code);
- the versions of the libraries that compute them (torch, transformers, tokenizers).

Hashing a 14 GB checkpoint takes a while, so each file's hash is kept in factprobe's cache,
keyed by the file's path, size, inode and modification and change times: a resume costs a
``stat`` per file, and any rewrite of a file (a new inode, mtime or ctime) is hashed again.
"""
from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

from factprobe.core.cache import ResponseCache, default_cache_dir, request_key
from factprobe.core.errors import UserError
from factprobe.core.kernels import in_effect
from factprobe.core.tables import file_sha256
from factprobe.probes.backends.config import BackendConfig

# Files a PyTorch ``from_pretrained`` never reads: other frameworks' weights (a Hub repo often
# carries the same weights three times over) and a Trainer checkpoint's optimizer state (twice
# the weights' size). Hashing them would only cost time.
_NOT_READ = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin",
             "model.ckpt.index")
_NOT_READ_SUFFIXES = (".h5", ".msgpack", ".onnx", ".gguf", ".ot", ".ckpt", ".md", ".pth")


def hashed_files(folder: Path) -> list[Path]:
    """The top-level files of a model folder that loading it may read. With safetensors
    weights present, transformers never reads the ``.bin`` copies, so they are left out."""
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and not p.name.startswith(".") and p.name not in _NOT_READ
                   and not p.name.endswith(_NOT_READ_SUFFIXES))
    if any(p.name.endswith(".safetensors") for p in files):
        files = [p for p in files if not (p.name.endswith(".bin") and "model" in p.name)]
    return files


def sha256_problem(value) -> str | None:
    """Why a remembered hash is unusable (a damaged or foreign entry), or None.

    >>> sha256_problem("0" * 64) is None, sha256_problem("xyz")
    (True, 'not a sha256 hex digest')
    """
    ok = isinstance(value, str) and len(value) == 64 and set(value) <= set("0123456789abcdef")
    return None if ok else "not a sha256 hex digest"


def file_hash(path: Path, cache: ResponseCache | None = None) -> str:
    """sha256 of ``path``'s content, remembered in ``cache`` by the file's stat identity."""
    st = path.stat()  # follows a Hub cache's symlink to the blob
    key = request_key(str(path.resolve()), str(st.st_size), str(st.st_ino), str(st.st_dev),
                      str(st.st_mtime_ns), str(st.st_ctime_ns))
    if cache is not None:
        entry = cache.get(key)
        if entry is not None:
            return entry["response"]
    digest = file_sha256(path)
    if cache is not None:
        try:
            cache.put(key, digest, path=str(path))
        except UserError:
            pass  # an unwritable cache only means hashing again next time
    return digest


def files_fingerprint(folder: Path, cache: ResponseCache | None = None) -> dict[str, str]:
    """File name -> sha256 for the files of ``folder`` that loading reads."""
    return {p.name: file_hash(p, cache) for p in hashed_files(folder)}


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("torch", "transformers", "tokenizers"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _device_name(backend, device: str) -> str:
    if device.startswith("cuda"):
        # Two GPUs of one kind compute alike; another kind may not, in the last bits.
        return f"cuda:{backend.torch.cuda.get_device_name(backend.torch.device(device))}"
    return device.split(":")[0]


def _device(backend) -> str:
    placed = getattr(backend.model, "hf_device_map", None)
    if not backend.config.device_map or not placed:
        return _device_name(backend, str(backend.device))
    from factprobe.probes.backends.placement import compute_devices
    names: list[str] = []
    for device in compute_devices(placed):
        name = _device_name(backend, device)
        if name not in names:
            names.append(name)
    return "+".join(sorted(names))


def model_identity(config: BackendConfig, backend, *, masked: bool = False,
                   cache_dir: str | Path | None = None) -> dict:
    """The identity of ``backend``'s model and settings (see the module docstring)."""
    model = backend.model
    where = Path(config.model)
    if where.is_dir():
        cache = ResponseCache(cache_dir if cache_dir is not None else default_cache_dir(),
                              "file-sha256", check=sha256_problem)
        files: dict = {"files": files_fingerprint(where, cache)}
    else:
        # A Hub snapshot is immutable: its commit names its content.
        commit = getattr(model.config, "_commit_hash", None)
        files = {"hub": config.model, "commit": commit} if commit else \
            {"files": files_fingerprint(_snapshot_folder(config), None)}
    return {
        "model": files,
        "revision": config.revision,
        "masked": masked,
        "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
        "device": _device(backend),
        "settings": {"batch_size": config.batch_size, "add_bos": config.add_bos,
                     "prefix_cache": config.prefix_cache,
                     "trust_remote_code": config.trust_remote_code},
        "versions": _versions(),
        "kernels": in_effect(),              # AVX2 or the CPU's own: other bits (core/kernels)
    }


def _snapshot_folder(config: BackendConfig) -> Path:
    """The local snapshot a Hub model was loaded from (when its config lacks the commit)."""
    from huggingface_hub import try_to_load_from_cache
    found = try_to_load_from_cache(config.model, "config.json", revision=config.revision)
    if not isinstance(found, str):
        from factprobe.core.errors import UserError
        raise UserError(f"model {config.model!r}: cannot tell which snapshot was loaded, so a "
                        f"resumed run could mix two versions; give --revision COMMIT")
    return Path(found).parent


def identity_digest(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def describe_change(old: dict, new: dict) -> str:
    """What differs between two identities, for the line that says why a run starts over.

    >>> a = {"model": {"files": {"model.safetensors": "1", "config.json": "2"}},
    ...      "dtype": "float32"}
    >>> describe_change(a, {"model": {"files": {"model.safetensors": "3",
    ...                                          "config.json": "2"}}, "dtype": "float32"})
    'the model files changed (model.safetensors)'
    >>> describe_change(a, dict(a, dtype="bfloat16"))
    'dtype float32 -> bfloat16'
    """
    parts = []
    om, nm = old.get("model") or {}, new.get("model") or {}
    if om != nm:
        of, nf = om.get("files"), nm.get("files")
        if isinstance(of, dict) and isinstance(nf, dict):
            changed = sorted(k for k in set(of) | set(nf) if of.get(k) != nf.get(k))
            shown = ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
            parts.append(f"the model files changed ({shown})")
        else:
            parts.append("another model")
    for key in ("revision", "masked", "dtype", "device"):
        if old.get(key) != new.get(key):
            parts.append(f"{key} {old.get(key)} -> {new.get(key)}")
    for group in ("settings", "versions"):
        o, n = old.get(group) or {}, new.get(group) or {}
        for k in sorted(set(o) | set(n)):
            if o.get(k) != n.get(k):
                parts.append(f"{k} {o.get(k)} -> {n.get(k)}")
    return "; ".join(parts) or "a checkpoint format this factprobe does not read"
