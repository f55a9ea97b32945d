"""Lanes: independent units of work spread over a few threads, the results in item order.

Why threads of one torch thread each, and not torch's own intra-op threads: an intra-op
parallel step waits at a barrier for all its threads, so a core held by another process
stalls every step (an eval took 1.45x as long with one core of two held), and how a reduction
is split over threads can change a result's last bits. A unit of work (a relation's packed
forward passes, a batch of prompts to generate from) computed whole on one thread has the bits
of a one-thread run whichever thread computes it and however many there are, and a held core
delays only the unit that runs there. Torch releases the GIL inside its operations, so the
threads compute side by side.

A lane is a thread that computes units. :meth:`Lanes.imap` is called from a thread that holds
one lane (the main thread, or a lane computing a unit that splits into smaller units): that
thread computes items itself and, before each item, recruits idle lanes as helpers. It never
waits for a lane, so a unit that splits while every lane is busy runs its parts in order on its
own thread, and parts are picked up by lanes as they free up. No deadlock, no more threads
computing at once than ``workers``.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_MISSING = object()


class Lanes:
    """``workers`` lanes: the caller's thread and ``workers - 1`` helper threads.
    ``on_start``: called once in each helper thread before its first unit (torch's thread
    count)."""

    def __init__(self, workers: int = 1, on_start: Callable[[], None] | None = None):
        self.workers = max(1, int(workers))
        self._spare = threading.Semaphore(self.workers - 1)
        self._pool = ThreadPoolExecutor(self.workers - 1, thread_name_prefix="lane",
                                        initializer=on_start) if self.workers > 1 else None

    def imap(self, fn: Callable[[Any], Any], items: Iterable) -> Iterator:
        """``fn`` of each item, yielded in item order as each is ready. The first exception
        raised by any item stops the handing out of items and is raised here once the
        helpers have finished the item they hold."""
        return _Run(self, fn, list(items)).results()

    def map(self, fn: Callable[[Any], Any], items: Iterable) -> list:
        return list(self.imap(fn, items))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> Lanes:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Run:
    """One ``imap`` call: its items, handed out one at a time to the caller and its helpers."""

    def __init__(self, lanes: Lanes, fn, items: list):
        self.lanes, self.fn, self.items = lanes, fn, items
        self.out = [_MISSING] * len(items)
        self.next = 0            # the next item to hand out
        self.helpers = 0         # helpers still working on this run
        self.error: BaseException | None = None
        self.cond = threading.Condition()

    def _take(self) -> int | None:
        with self.cond:
            if self.error is not None or self.next >= len(self.items):
                return None
            self.next += 1
            return self.next - 1

    def _compute(self, i: int) -> bool:
        try:
            value = self.fn(self.items[i])
        except BaseException as exc:          # noqa: BLE001 - re-raised in the caller
            with self.cond:
                self.error = self.error or exc
                self.cond.notify_all()
            return False
        with self.cond:
            self.out[i] = value
            self.cond.notify_all()
        return True

    def _help(self) -> None:
        try:
            while (i := self._take()) is not None and self._compute(i):
                pass
        finally:
            with self.cond:
                self.helpers -= 1
                self.cond.notify_all()
            self.lanes._spare.release()

    def _recruit(self) -> None:
        pool = self.lanes._pool
        if pool is None:
            return
        # one helper per item still to hand out beyond the caller's own, while lanes are idle
        while self.next < len(self.items) - self.helpers - 1 and \
                self.lanes._spare.acquire(blocking=False):
            with self.cond:
                self.helpers += 1
            pool.submit(self._help)

    def results(self) -> Iterator:
        done = 0
        try:
            while done < len(self.items):
                with self.cond:
                    ready = self.out[done] is not _MISSING
                if ready:
                    value, self.out[done] = self.out[done], None
                    done += 1
                    yield value
                    continue
                self._recruit()
                i = self._take()
                if i is not None:
                    self._compute(i)
                    continue
                with self.cond:   # everything handed out: wait for a helper's result
                    while self.error is None and self.out[done] is _MISSING:
                        self.cond.wait()
                    if self.error is not None:
                        break
            if self.error is not None:
                raise self.error
        finally:
            with self.cond:    # stop handing out; wait for the helpers' current items
                self.next = len(self.items)
                while self.helpers:
                    self.cond.wait()
