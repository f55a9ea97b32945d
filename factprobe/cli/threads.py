"""``--threads`` of ``plant`` and ``eval``: torch's intra-op thread count, chosen from the work
and the machine (:mod:`factprobe.core.cpus`) unless given, applied before any model exists.

A thread count can change a result's last bits: training visibly (three AdamW steps of the
planted shape on 1 and 2 threads give different weights), inference at times (a run resumed on
another count wrote other outputs.parquet bytes). So ``eval`` takes ``OMP_NUM_THREADS`` or the
cores it may use (one for a small local model, which a second thread does not speed up), never
the load, unless ``--threads auto`` asks it to follow the load (faster
on a busy machine, same numbers to about 1e-7 but not the same bytes); ``plant`` takes one
thread unless told."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import positive

HELP = ("torch threads: a count, or 'auto' for the cores this process may use that no other "
        "process is keeping busy, measured at start (faster on a busy machine; the last bits "
        "may then differ from a quiet machine's). Default: OMP_NUM_THREADS if set, else the "
        "cores this process may use, one for a local model under 10M parameters (the same "
        "bytes however busy the machine is); recorded in {where}")


PLANT_HELP = ("torch threads (default 1: the trained bytes then depend on the inputs alone; "
              "a second thread changes them, so a count taken from the machine's load would "
              "plant different bytes on a busy and a quiet machine); recorded in planted.json")


def count_or_auto(text: str):
    """``--threads``: a positive count or ``auto``.

    >>> count_or_auto("2"), count_or_auto("auto")
    (2, 'auto')
    """
    return "auto" if text.strip().lower() == "auto" else positive(text)


def add_threads_flag(p: argparse.ArgumentParser, where: str, text: str | None = None,
                     auto: bool = True) -> None:
    p.add_argument("--threads", type=count_or_auto if auto else positive, default=None,
                   help=text or HELP.format(where=where))


# Below this many parameters a forward pass is too small for a second intra-op thread to pay:
# ZP-LKE on the sample's planted model (1.2M) took 7.6 s on one thread and 7.2 s on two on a
# near-quiet machine (2026-11-27), and 19.7 s on two while another process held a core. So
# such a model runs on one thread by default: never slower, no collapse on a busy machine, and
# the same bytes whatever the machine's core count.
SMALL_MODEL_PARAMS = 10_000_000


def estimated_params(config: dict) -> int | None:
    """A transformer's parameter count from its config.json: the layers' 12 * width^2 each plus
    the embedding (GPT-2, Llama, BERT field names); None when the fields are not there.

    >>> estimated_params({"n_embd": 128, "n_layer": 2, "vocab_size": 6000})
    1161216
    >>> estimated_params({"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000}) > 6e9
    True
    >>> estimated_params({"architectures": ["Mystery"]}) is None
    True
    """
    def first(*keys):
        return next((config[k] for k in keys if isinstance(config.get(k), int)), None)
    width = first("hidden_size", "n_embd", "d_model", "dim")
    layers = first("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    vocab = first("vocab_size") or 0
    if not width or not layers:
        return None
    return 12 * layers * width * width + vocab * width


def model_work_cap(model: str | None) -> int | None:
    """1 for a small local model (under SMALL_MODEL_PARAMS), else None (no cap): a Hub name is
    not read here (the count would cost a download before the run starts)."""
    import json
    from pathlib import Path
    if not model:
        return None
    path = Path(model) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None                      # the backend's own load says what is wrong with it
    n = estimated_params(config) if isinstance(config, dict) else None
    return 1 if n is not None and n < SMALL_MODEL_PARAMS else None


def apply_threads(requested: int | str | None, work_cap: int | None = None) -> dict:
    """Choose the count, set it in torch, and return what to record."""
    from factprobe.core.cpus import choose_threads
    choice = choose_threads(requested, work_cap)
    import torch
    torch.set_num_threads(choice.threads)
    return choice.as_dict()
