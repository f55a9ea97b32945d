"""``--threads`` of ``plant`` and ``eval``: torch's intra-op thread count, chosen from the work
and the machine (:mod:`builders.core.cpus`) unless given, applied before any model exists."""
from __future__ import annotations

import argparse

from builders.core.argtypes import positive

HELP = ("torch threads (default: the cores this process may use that no other process is "
        "keeping busy, measured at start; on a busy machine one thread per free core avoids "
        "waiting for a thread that is not running); recorded in {where}")


def add_threads_flag(p: argparse.ArgumentParser, where: str) -> None:
    p.add_argument("--threads", type=positive, default=None, help=HELP.format(where=where))


def apply_threads(requested: int | None, work_cap: int | None = None) -> dict:
    """Choose the count, set it in torch, and return what to record."""
    from builders.core.cpus import choose_threads
    choice = choose_threads(requested, work_cap)
    import torch
    torch.set_num_threads(choice.threads)
    return choice.as_dict()
