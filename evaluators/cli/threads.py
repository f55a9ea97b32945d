"""``--threads`` of ``plant`` and ``eval``: torch's intra-op thread count, chosen from the work
and the machine (:mod:`builders.core.cpus`) unless given, applied before any model exists.

Inference gives the same bits on any thread count (measured: log-softmax of a 2x128 Llama and a
4x256 GPT-2 equal to the bit on 1 and 2 threads), so ``eval`` follows the load; training does
not (three AdamW steps of the planted shape on 1 and 2 threads give different weights), so
``plant`` takes one thread unless told."""
from __future__ import annotations

import argparse

from builders.core.argtypes import positive

HELP = ("torch threads (default: the cores this process may use that no other process is "
        "keeping busy, measured at start; on a busy machine one thread per free core avoids "
        "waiting for a thread that is not running); recorded in {where}")


PLANT_HELP = ("torch threads (default 1: the trained bytes then depend on the inputs alone; "
              "a second thread changes them, so a count taken from the machine's load would "
              "plant different bytes on a busy and a quiet machine); recorded in planted.json")


def add_threads_flag(p: argparse.ArgumentParser, where: str, text: str | None = None) -> None:
    p.add_argument("--threads", type=positive, default=None,
                   help=text or HELP.format(where=where))


def apply_threads(requested: int | None, work_cap: int | None = None) -> dict:
    """Choose the count, set it in torch, and return what to record."""
    from builders.core.cpus import choose_threads
    choice = choose_threads(requested, work_cap)
    import torch
    torch.set_num_threads(choice.threads)
    return choice.as_dict()
