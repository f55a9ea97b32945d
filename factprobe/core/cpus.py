"""How many threads a command should run on: from the work it has and the cores it can get.

Torch (and a parallel decompressor) start one thread per core by default. When another process
holds one of those cores, every parallel step waits at its barrier for the thread that is not
running, and a job that took 15 s alone takes 140 s. So the count is the cores that are both
ours (``os.sched_getaffinity``: a ``taskset`` or a batch scheduler's slot) and idle (measured
over a short window, the other processes' share only), capped by what the work can use (a small
model gains nothing from a second thread). ``--threads`` overrides the choice; either way it is
recorded where the command records its run.

No torch here: builders import it, and the choice is a number that the caller applies.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

SAMPLE_S = 0.2
# A core counts as free when less than a quarter of it is used by others: a thread on a core
# that another process keeps half busy is the straggler the others wait for.
_SPARE = 0.25


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    chosen_by: str          # "--threads" | "auto"
    cores: int              # the cores this process may run on
    busy_cores: float | None  # their use by other processes when the choice was made
    work_cap: int | None    # the most threads the work can use (None: no cap)

    def as_dict(self) -> dict:
        return asdict(self)


def available_cores() -> int:
    """The cores this process may run on: its affinity, and no more than a container's CPU
    quota (``docker --cpus 2`` on a 64-core host leaves all 64 in the affinity)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    quota = _cgroup_quota()
    return max(1, min(n, quota) if quota else n)


def quota_cores(text: str) -> int | None:
    """Whole cores of a cgroup v2 ``cpu.max`` line (``max`` or ``QUOTA PERIOD``), rounded up.

    >>> quota_cores("max 100000"), quota_cores("150000 100000"), quota_cores("junk")
    (None, 2, None)
    """
    parts = text.split()
    try:
        if len(parts) == 2 and parts[0] != "max" and int(parts[1]) > 0:
            return max(1, -(-int(parts[0]) // int(parts[1])))
    except ValueError:
        pass
    return None


def _cgroup_quota() -> int | None:
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as fh:
            return quota_cores(fh.read())
    except OSError:
        pass
    try:  # cgroup v1
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", encoding="ascii") as q, \
                open("/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding="ascii") as p:
            quota = q.read().strip()
            return None if quota.startswith("-") else quota_cores(f"{quota} {p.read()}")
    except OSError:
        return None


def _cpu_times(cpus: set[int] | None) -> tuple[float, float] | None:
    """(busy, total) jiffies summed over ``cpus`` (every CPU if None), from /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            text = fh.read()
    except OSError:
        return None
    busy = total = 0
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        try:
            if cpus is not None and int(name[3:]) not in cpus:
                continue
            values = [int(v) for v in fields[:8]]
        except ValueError:
            continue
        # user nice system idle iowait irq softirq steal: idle and iowait are not busy.
        total += sum(values)
        busy += sum(values) - values[3] - values[4]
    return (busy, total) if total else None


class LoadMeter:
    """How many of our cores other processes kept busy since the last reading (this
    process's own use subtracted): over a short sleep at start, or over a stretch of work
    (an epoch) without sleeping at all."""

    def __init__(self):
        self.cpus = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        self.n = len(self.cpus) if self.cpus else (os.cpu_count() or 1)
        self._mark()

    def _mark(self) -> None:
        self.times = _cpu_times(self.cpus)
        self.own, self.wall = time.process_time(), time.monotonic()

    def busy(self) -> float | None:
        """Other processes' busy cores since the last call (or since made); None where
        /proc/stat cannot be read."""
        before, own0, wall0 = self.times, self.own, self.wall
        self._mark()
        after, own, wall = self.times, self.own - own0, self.wall - wall0
        if before is None or after is None or after[1] <= before[1] or wall <= 0:
            return None
        share = (after[0] - before[0]) / (after[1] - before[1])     # of all our cores
        return round(max(0.0, share * self.n - own / wall), 2)


def busy_cores(sample_s: float = SAMPLE_S) -> float | None:
    """How many of our cores other processes kept busy over ``sample_s`` seconds (this
    process's own use subtracted); None where /proc/stat cannot be read."""
    meter = LoadMeter()
    time.sleep(sample_s)
    return meter.busy()


def free_cores(cores: int, busy: float | None) -> int:
    """Cores left to us when others keep ``busy`` of our ``cores`` busy (at least one).

    >>> free_cores(2, 0.05), free_cores(2, 1.0), free_cores(2, 0.6), free_cores(8, 2.1)
    (2, 1, 1, 6)
    """
    if busy is None:
        return cores
    return max(1, min(cores, int(cores - busy + _SPARE)))


def choose_threads(requested: int | str | None, work_cap: int | None = None,
                   sample_s: float = SAMPLE_S) -> ThreadChoice:
    """``requested`` (the ``--threads`` flag) if a count; ``"auto"``: the free cores, measured
    now; by default ``OMP_NUM_THREADS`` when set, else the cores this process may use. Each
    capped by the work's own limit.

    The default does not follow the load: a thread count can change a result's last bits
    (a resumed run computed partly on 1 and partly on 2 threads differed), and the same
    inputs must give the same bytes on a busy and a quiet machine. ``auto`` trades that for
    speed on a busy machine."""
    cores = available_cores()
    cap = (lambda n: max(1, min(n, work_cap))) if work_cap is not None else (lambda n: n)
    if isinstance(requested, int):
        return ThreadChoice(int(requested), "--threads", cores, None, work_cap)
    if requested == "auto":
        # Nothing to measure when the answer is one thread whatever the load.
        busy = busy_cores(sample_s) if cores > 1 and work_cap != 1 else None
        return ThreadChoice(cap(free_cores(cores, busy)), "auto", cores, busy, work_cap)
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return ThreadChoice(cap(int(env)), "OMP_NUM_THREADS", cores, None, work_cap)
    return ThreadChoice(cap(cores), "cores", cores, None, work_cap)


# Ray starts its worker processes 15 nicer than its node's raylet (RayConfig worker_niceness,
# an increment: they yield to its own daemons), so a worker beside any ordinary process gets
# ~1/30 of a core: on a 2-core machine with three other busy processes, a ZP-LKE run on 2 Ray
# replicas did not finish in 5 minutes that took 13 s quiet (28.7 s at the raylet's niceness).
# factprobe's Ray work is the command's own compute, so it runs at its node's niceness (the
# niceness `ray start`, or the driver's own `ray.init`, ran at) unless the user's environment
# sets RAY_worker_niceness itself.
RAY_NICENESS_ENV = "RAY_worker_niceness"


def ray_worker_env() -> dict[str, str]:
    """The environment of factprobe's Ray workers (a Ray ``runtime_env``'s ``env_vars``): no
    niceness added to their node's, or the user's ``RAY_worker_niceness`` (also an increment).

    >>> ray_worker_env() == {"RAY_worker_niceness": os.environ.get("RAY_worker_niceness") or "0"}
    True
    """
    return {RAY_NICENESS_ENV: os.environ.get(RAY_NICENESS_ENV) or "0"}


def import_ray():
    """Ray, for ``--executor ray``, or one line on what to install. An exported
    ``RAY_worker_niceness`` that is not a whole number is refused first: Ray reads it as it is
    imported and dies of a segmentation fault (measured: ``import ray`` with ``abc``)."""
    from factprobe.core.errors import UserError
    value = os.environ.get(RAY_NICENESS_ENV)
    if value is not None and not value.strip().removeprefix("-").isdigit():
        raise UserError(f"{RAY_NICENESS_ENV}={value!r} is not a whole number (Ray's worker "
                        f"niceness increment, e.g. 0); unset it or export a number")
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'factprobe[ray]'") from None
    return ray
