"""One model over several devices: ``--device-map``, ``--max-memory`` and ``--offload-folder``.

The split itself is accelerate's big-model inference (the engine behind transformers'
``from_pretrained(device_map=...)``): accelerate's hooks move each block's inputs to the device
its weights compute on and bring the output back. factprobe only resolves the map *before*
the weights load, with accelerate's own ``infer_auto_device_map`` on an empty (meta) copy of
the model, as accelerate's big-model guide does. Knowing the map first lets a bad one be
refused in one line before minutes of loading (a GPU that is not there, a module the model
does not have, layers sent to disk without ``--offload-folder``) and gives run.json the map.

The flag parsers at the top need no model library (``--help`` imports them); the rest imports
torch and accelerate when a model loads.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from factprobe.core.errors import UserError

MODES = ("auto", "balanced", "balanced_low_0", "sequential")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?$", re.IGNORECASE)
_UNIT = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_PLACE = re.compile(r"^(cpu|disk|mps|\d+|cuda:\d+)$")


def parse_size(text: str) -> int:
    """Bytes in ``70GiB``, ``500MB``, ``1.5GiB`` or a plain byte count.

    >>> parse_size("70GiB"), parse_size("2 GB"), parse_size("1024")
    (75161927680, 2000000000, 1024)
    """
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size (write 70GiB, 500MB or a byte count)")
    return int(float(m.group(1)) * _UNIT[(m.group(2) or "B").upper()])


def parse_max_memory(text: str) -> tuple[tuple[str, int], ...]:
    """``--max-memory 0:70GiB,1:70GiB,cpu:200GiB``: (device, bytes) pairs; a device is a GPU
    number (as this process sees them), ``cpu`` or ``mps``.

    >>> parse_max_memory("0:70GiB, cpu:1MB")
    (('0', 75161927680), ('cpu', 1000000))
    >>> parse_max_memory("gpu0:1GiB")
    Traceback (most recent call last):
    ValueError: 'gpu0:1GiB': the device must be a GPU number, cpu or mps (as in 0:70GiB,cpu:200GiB)
    """
    out: dict[str, int] = {}
    for entry in text.split(","):
        entry = entry.strip()
        key, sep, size = entry.partition(":")
        key = key.strip().lower()
        if not sep or not size.strip():
            raise ValueError(f"{entry!r}: write DEVICE:SIZE, as in 0:70GiB,cpu:200GiB")
        if not (key.isdigit() or key in ("cpu", "mps")):
            raise ValueError(f"{entry!r}: the device must be a GPU number, cpu or mps (as in "
                             f"0:70GiB,cpu:200GiB)")
        key = str(int(key)) if key.isdigit() else key
        if key in out:
            raise ValueError(f"device {key} is given twice")
        try:
            out[key] = parse_size(size)
        except ValueError as exc:
            raise ValueError(f"{entry!r}: {exc}") from None
    return tuple(out.items())


def read_map_file(path: str) -> tuple[tuple[str, str], ...]:
    """A ``--device-map FILE.json``: a JSON object of module names (``""`` is the whole
    model) to a device (a GPU number, ``cuda:N``, ``cpu``, ``mps`` or ``disk``), as (module,
    device) pairs; read once here so Ray replicas on other nodes need no copy of the file."""
    where = Path(path)
    if not path.strip():
        raise UserError(f"--device-map is empty: give {', '.join(MODES)} or a JSON file")
    if where.is_dir():
        raise UserError(f"--device-map {path}: a folder; give {', '.join(MODES)} or a JSON "
                        f"file")
    if not where.is_file():
        raise UserError(f"--device-map {path}: neither {', '.join(MODES)} nor a JSON file "
                        f"(no such file)")
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"--device-map {path}: not readable JSON ({str(exc)[:120]}); write an "
                        f"object of module names to devices") from None
    if not isinstance(data, dict) or not data:
        raise UserError(f"--device-map {path}: the JSON must be a non-empty object of module "
                        f"names to devices, as {{\"transformer.h.0\": 0, \"lm_head\": \"cpu\"}}")
    out = []
    for module, device in data.items():
        text = str(device).strip().lower() if isinstance(device, (str, int)) \
            and not isinstance(device, bool) else None
        if text is None or not _PLACE.match(text):
            raise UserError(f"--device-map {path}: module {module!r} goes to {device!r}, which "
                            f"is not a device; use a GPU number, cpu, mps or disk")
        out.append((module, text.removeprefix("cuda:")))
    return tuple(out)


# ----------------------------------------------------------------------------- at load time
def _place(value: str | int):
    """A map value as accelerate takes it: GPU numbers as int."""
    text = str(value)
    return int(text) if text.isdigit() else text


def _check_gpus(places, what: str, fix: str) -> None:
    import torch
    wanted = sorted({int(p) for p in places if str(p).isdigit()})
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    missing = [g for g in wanted if g >= have]
    if missing:
        raise UserError(f"{what} names GPU {missing[0]}, but this process sees {have} GPU(s)"
                        f"{', numbered from 0' if have else ''}; {fix}")
    if "mps" in places and not torch.backends.mps.is_available():
        raise UserError(f"{what} names mps, but no Apple GPU (MPS) is available here")


def _owner(name: str, device_map: dict) -> str | None:
    """The map key that places module or parameter ``name`` (the longest module prefix)."""
    best = None
    for key in device_map:
        if key == "" or name == key or name.startswith(key + "."):
            if best is None or len(key) > len(best):
                best = key
    return best


def _check_file_map(name: str, device_map: dict, empty) -> None:
    """A map file names modules the model has (accelerate's hooks place modules, not single
    parameters), leaves no parameter without a device, and keeps tied weights (one tensor
    under two names) together: accelerate's hooks need both, and without them the first
    forward pass fails deep inside the hooks."""
    from accelerate.utils import find_tied_parameters
    known = {n for n, _ in empty.named_modules()}
    unknown = [m for m in device_map if m not in known]
    if unknown:
        top = ", ".join(n for n, _ in empty.named_children())
        raise UserError(f"--device-map {name}: the model has no module {unknown[0]!r}; its "
                        f"top modules are {top}")
    bare = [n for n, _ in empty.named_parameters(remove_duplicate=False)
            if _owner(n, device_map) is None]
    if bare:
        raise UserError(f"--device-map {name}: no device for {bare[0]} ({len(bare)} "
                        f"parameters in all); map every module, or give \"\" a device for "
                        f"the rest")
    for group in find_tied_parameters(empty):
        places = {n: device_map[_owner(n, device_map)] for n in group}
        if len(set(places.values())) > 1:
            shown = " and ".join(f"{n} ({d})" for n, d in sorted(places.items()))
            raise UserError(f"--device-map {name}: {shown} are one tied tensor and must go "
                            f"to the same device; change the map")


def resolve(config, model_config, auto_class, dtype) -> dict:
    """The module -> device map ``config`` asks for, for the model ``model_config`` describes,
    computed on an empty copy of it (no weights are read)."""
    from accelerate import infer_auto_device_map, init_empty_weights
    from accelerate.utils import get_balanced_memory
    with init_empty_weights():
        empty = auto_class.from_config(model_config, dtype=dtype,
                                       trust_remote_code=config.trust_remote_code)
    empty.tie_weights()     # tied weights (GPT-2's head and embeddings) are placed together
    if config.device_map_modules:
        device_map = {m: _place(d) for m, d in config.device_map_modules}
        _check_gpus(set(device_map.values()), f"--device-map {config.device_map}",
                    "change the map")
        _check_file_map(config.device_map, device_map, empty)
    else:
        max_memory = {_place(k): v for k, v in config.max_memory} or None
        if max_memory:
            _check_gpus(set(max_memory), "--max-memory", "change --max-memory")
        no_split = getattr(empty, "_no_split_modules", None) or []
        if config.device_map != "sequential":
            max_memory = get_balanced_memory(empty, max_memory=max_memory, dtype=dtype,
                                             no_split_module_classes=no_split,
                                             low_zero=config.device_map == "balanced_low_0")
        device_map = infer_auto_device_map(empty, max_memory=max_memory, dtype=dtype,
                                           no_split_module_classes=no_split)
    del empty
    if "disk" in device_map.values() and not config.offload_folder:
        if config.device_map_modules:
            raise UserError(f"--device-map {config.device_map} sends some modules to disk; "
                            f"give --offload-folder DIR")
        raise UserError(f"--device-map {config.device_map}: some layers do not fit the memory "
                        f"at hand (--max-memory) and go to disk; give --offload-folder DIR, or "
                        f"allow more memory")
    return device_map


def main_device(device_map: dict) -> str:
    """Where the layers kept on ``cpu`` or ``disk`` compute: accelerate's ``dispatch_model``
    runs them on a GPU of the map (the lowest-numbered one), streaming their weights in, or on
    the CPU when the map has none.

    >>> main_device({"a": "cpu", "b": 1, "c": 0, "d": "disk"}), main_device({"": "disk"})
    ('cuda:0', 'cpu')
    """
    gpus = sorted(p for p in device_map.values() if isinstance(p, int))
    if gpus:
        return f"cuda:{gpus[0]}"
    other = [p for p in device_map.values() if p not in ("cpu", "disk")]
    return str(other[0]) if other else "cpu"


def planned_main_device(config) -> str:
    """``main_device`` of the map ``config`` will resolve to, known before it is resolved (the
    dtype, which the map's sizes depend on, follows it)."""
    import torch
    if config.device_map_modules:
        return main_device({m: _place(d) for m, d in config.device_map_modules})
    keys = [k for k, _ in config.max_memory]
    gpus = sorted(int(k) for k in keys if k.isdigit())
    if gpus:
        return f"cuda:{gpus[0]}"
    if keys:
        return "mps" if "mps" in keys else "cpu"
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def execution_device(place, device_map: dict) -> str:
    if place in ("cpu", "disk"):
        return main_device(device_map)
    return f"cuda:{place}" if isinstance(place, int) else str(place)


def input_device(model, device_map: dict) -> str:
    """Where the token ids go: the device the input embeddings compute on."""
    embeddings = model.get_input_embeddings()
    name = next((n for n, m in model.named_modules() if m is embeddings), "")
    key = _owner(name, device_map)
    return execution_device(device_map[key] if key is not None else "cpu", device_map)


def compute_devices(device_map: dict) -> list[str]:
    """The devices the layers compute on, in the map's order, each once."""
    out: list[str] = []
    for place in device_map.values():
        d = execution_device(place, device_map)
        if d not in out:
            out.append(d)
    return out


_MADE: list[tuple[str, list[Path]]] = []   # (factprobe's offload folder, parents it created)


def offload_dir(folder: str) -> str:
    """A folder of factprobe's own inside ``--offload-folder`` for the offloaded weights (the
    user's folder may hold anything; this one alone is removed when the process ends, or by
    :func:`remove_offload_dirs`)."""
    import atexit
    import tempfile
    where = Path(folder)
    if where.exists() and not where.is_dir():
        raise UserError(f"--offload-folder {folder}: a file, not a folder; give a folder")
    made = []      # the folders this creates, innermost first: removed again when empty
    up = where.absolute()
    while not up.exists():
        made.append(up)
        up = up.parent
    try:
        where.mkdir(parents=True, exist_ok=True)
        mine = tempfile.mkdtemp(prefix="factprobe-offload-", dir=where)
    except OSError as exc:
        raise UserError(f"--offload-folder {folder}: cannot create a folder there "
                        f"({exc.strerror or exc}); give a writable folder") from None
    if not _MADE:
        atexit.register(remove_offload_dirs)
    _MADE.append((mine, made))
    return mine


def remove_offload_dirs() -> None:
    """Remove the offload folders this process made (a Ray replica is killed, not exited, so
    its driver asks for this first). The models using them must not run again."""
    import shutil
    while _MADE:
        mine, made = _MADE.pop()
        shutil.rmtree(mine, ignore_errors=True)
        for f in made:
            try:
                f.rmdir()
            except OSError:
                break    # not empty (someone else's files now live there) or already gone


def replica_config(config, gpus: float):
    """The config a Ray replica holding ``gpus`` GPUs loads: with more than one whole GPU and
    no --device-map, ``auto``, so the model spreads over the replica's GPUs (Ray shows each
    replica only its own, numbered from 0) instead of leaving all but one idle."""
    import dataclasses
    if (gpus > 1 and hasattr(config, "device_map") and not config.device_map
            and config.device == "auto"):
        return dataclasses.replace(config, device_map="auto")
    return config
