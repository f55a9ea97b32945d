"""``--threads`` of ``plant`` and ``eval``, chosen from the work and the machine
(:mod:`factprobe.core.cpus`) unless given, applied before any model exists.

``eval``: the count is of *lanes*, threads that each compute whole units of work (a relation's
forward passes, a batch of prompts) on one torch thread (:mod:`factprobe.core.lanes`). A
unit's bits are those of a one-thread run whichever lane computes it, so the outputs are the
same bytes for any count and any load, and a core held by another process delays only the
unit running there (torch's own threads wait for each other at every step). The default is
``OMP_NUM_THREADS`` or the cores this process may use; ``auto`` the cores no other process
keeps busy at start (the same bytes too).

``plant`` does the same one level down: torch trains on one thread, and each step's
micro-batches run on the free cores, one each (probes/planting/causal.Gradients); the trained
bytes depend on ``--micro-batches``, never on the thread count."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import positive

HELP = ("threads to compute on, each running whole units of work on one torch thread (the "
        "same output bytes for any count and any load): a count, or 'auto' for the cores this "
        "process may use that no other process is keeping busy, measured at start. Default: "
        "OMP_NUM_THREADS if set, else the cores this process may use; recorded in {where}")


PLANT_HELP = ("threads to run each step's micro-batches on, one each (see --micro-batches): a "
              "count, or 'auto' (default): the cores this process may use that no other "
              "process keeps busy, at most --micro-batches, chosen at start and again after "
              "every epoch. Changes no trained bit: torch itself runs on one thread, and the "
              "bytes depend on --micro-batches alone")


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


def add_kernels_flag(p: argparse.ArgumentParser, where: str) -> None:
    """``--kernels``, read by the app before the command runs: torch must not be imported yet
    when the choice is made (factprobe.core.kernels)."""
    from factprobe.core.kernels import HELP as KERNELS_HELP, MODES
    p.add_argument("--kernels", choices=MODES, default="portable",
                   help=KERNELS_HELP.format(where=where))


def apply_threads(requested: int | str | None, work_cap: int | None = None,
                  lanes: bool = False) -> dict:
    """Choose the count and return what to record. ``lanes`` (eval): the count is of lanes,
    and torch computes on one thread in each (``per_lane``; threads started later inherit
    it); else the count is torch's."""
    from factprobe.core.cpus import choose_threads
    choice = choose_threads(requested, work_cap)
    import torch
    torch.set_num_threads(1 if lanes else choice.threads)
    return choice.as_dict() | ({"per_lane": 1} if lanes else {})
