"""The Hugging Face kinds' options (``hf-causal`` and ``hf-masked``): their config dataclass
and their ``factprobe eval`` flags, which only these kinds take.

A module light enough to import for ``--help``: the flags' checks need no model library.
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from factprobe.core.argtypes import positive
from factprobe.core.errors import UserError
from factprobe.probes.backends import placement

DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


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
    # One model over several devices (placement.py): accelerate's mode (auto, balanced,
    # balanced_low_0, sequential) or the JSON file's name, whose map is device_map_modules
    device_map: str | None = None
    device_map_modules: tuple[tuple[str, str], ...] = ()
    max_memory: tuple[tuple[str, int], ...] = ()   # (GPU number | cpu | mps, bytes)
    offload_folder: str | None = None

    # the placement fields, left out of run.json's backend block when unset: a run without
    # them writes the bytes it wrote before they existed
    PLACEMENT = ("device_map", "device_map_modules", "max_memory", "offload_folder")


def _device(value: str) -> str:
    if not DEVICE.match(value):
        raise argparse.ArgumentTypeError(f"{value!r}: use auto, cpu, cuda, cuda:N or mps")
    return value


def _max_memory(value: str) -> tuple[tuple[str, int], ...]:
    try:
        return placement.parse_max_memory(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_flags(g) -> None:
    """The flags of the Hugging Face kinds. Their parsed defaults are None or False (the
    defaults below are applied by :func:`from_args`), so a flag given to another kind can be
    told from one left alone."""
    g.add_argument("--revision", help="Hub revision (branch, tag or commit)")
    g.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"),
                   help="weights' dtype (auto: bfloat16 on a GPU that supports it, else "
                        "float32)")
    g.add_argument("--device", type=_device, help="auto, cpu, cuda, cuda:N or mps (auto)")
    g.add_argument("--batch-size", type=positive,
                   help="rows per forward pass (32; halved automatically on out-of-memory)")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="run code shipped with the model (off unless asked)")
    g.add_argument("--add-bos", action=argparse.BooleanOptionalAction, default=None,
                   help="prepend the BOS token to every prompt, or never (--no-add-bos); "
                   "default: as the tokenizer does (Llama-family yes, GPT-2/Pythia no), which "
                   "is what vLLM sends; run.json records the choice")
    g.add_argument("--no-prefix-cache", action="store_true",
                   help="compute every sequence in full (slower; for checking)")
    g.add_argument("--device-map", metavar="MODE|FILE.json",
                   help="spread one model over several devices with accelerate: auto, "
                        "balanced, balanced_low_0, sequential, or a JSON object of module "
                        "names to devices (docs/scaling.md)")
    g.add_argument("--max-memory", type=_max_memory, metavar="0:70GiB,cpu:200GiB",
                   help="with --device-map auto|balanced|...: memory each device may hold "
                        "(GPU numbers, cpu, mps); what does not fit goes to disk")
    g.add_argument("--offload-folder", metavar="DIR",
                   help="with --device-map: where layers kept on disk go (factprobe makes "
                        "a folder of its own inside and removes it at the end)")


def from_args(args, kind: str) -> BackendConfig:
    """The parsed flags (``--model`` and the ones above) as the config ``kind`` loads."""
    if args.revision is not None:
        if not args.revision.strip():
            raise UserError("--revision is empty: give a branch, tag or commit, or drop it")
        if Path(args.model).is_dir():
            raise UserError(f"--revision {args.revision}: {args.model} is a local folder, "
                            f"which has no revisions; drop --revision (it is for Hub models)")
    return BackendConfig(model=args.model, revision=args.revision, dtype=args.dtype or "auto",
                         device=args.device or "auto", batch_size=args.batch_size or 32,
                         trust_remote_code=args.trust_remote_code, add_bos=args.add_bos,
                         prefix_cache=not args.no_prefix_cache, kind=kind,
                         **_placement(args))


def _outside_run(offload: str, out: str) -> None:
    """The offload folder may not lie in the run's folder or its checkpoints (``.OUT.partial``,
    probes/engine/runner.py): both are factprobe's to replace, and a folder of offloaded
    weights inside --out would make it a folder factprobe did not write."""
    where, run = Path(offload).resolve(), Path(out).resolve()
    for taken in (run, run.with_name(f".{run.name}.partial")):
        if where == taken or taken in where.parents:
            raise UserError(f"--offload-folder {offload} is inside the run's own folder "
                            f"{taken.name}, which factprobe replaces; give a folder elsewhere")


def _placement(args) -> dict:
    """The placement flags, checked together (each alone is checked by its parser)."""
    device_map = getattr(args, "device_map", None)
    max_memory = getattr(args, "max_memory", None)
    offload = getattr(args, "offload_folder", None)
    if device_map is None:
        for flag, value in (("--max-memory", max_memory), ("--offload-folder", offload)):
            if value is not None:
                raise UserError(f"{flag} places a model over devices: it needs --device-map "
                                f"(auto, for instance)")
        return {}
    if args.device is not None:
        raise UserError(f"--device {args.device} and --device-map {device_map}: give one (a "
                        f"device map names its devices itself)")
    if offload is not None and not offload.strip():
        raise UserError("--offload-folder is empty: give a folder, or drop it")
    if offload is not None and getattr(args, "out", None):
        _outside_run(offload, args.out)
    modules: tuple = ()
    if device_map not in placement.MODES:
        modules = placement.read_map_file(device_map)
        if max_memory:
            raise UserError(f"--max-memory applies to --device-map {'|'.join(placement.MODES)};"
                            f" a map file ({device_map}) places every module itself: drop one")
    return {"device_map": device_map, "device_map_modules": modules,
            "max_memory": max_memory or (), "offload_folder": offload}
