"""``--threads`` of ``plant`` and ``eval``: torch's intra-op thread count, chosen from the work
and the machine (:mod:`factprobe.core.cpus`) unless given, applied before any model exists.

A thread count can change a result's last bits: training visibly (three AdamW steps of the
planted shape on 1 and 2 threads give different weights), inference at times (a run resumed on
another count wrote other outputs.parquet bytes). So ``eval`` takes ``OMP_NUM_THREADS`` or the
cores it may use, never the load, unless ``--threads auto`` asks it to follow the load (faster
on a busy machine, same numbers to about 1e-7 but not the same bytes); ``plant`` keeps torch
on one thread and spreads its micro-batches over the free cores, which changes no bit."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import positive

HELP = ("torch threads: a count, or 'auto' for the cores this process may use that no other "
        "process is keeping busy, measured at start (faster on a busy machine; the last bits "
        "may then differ from a quiet machine's). Default: OMP_NUM_THREADS if set, else the "
        "cores this process may use (the same bytes however busy the machine is); recorded "
        "in {where}")


PLANT_HELP = ("threads to run each step's micro-batches on, one each (see --micro-batches): a "
              "count, or 'auto' (default) for the cores this process may use that no other "
              "process keeps busy, at most --micro-batches. Changes no trained bit: torch "
              "itself runs on one thread, and the bytes depend on --micro-batches alone; "
              "recorded in planted.json")


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


def apply_threads(requested: int | str | None, work_cap: int | None = None) -> dict:
    """Choose the count, set it in torch, and return what to record."""
    from factprobe.core.cpus import choose_threads
    choice = choose_threads(requested, work_cap)
    import torch
    torch.set_num_threads(choice.threads)
    return choice.as_dict()
