"""``--executor ray``: the run's chunks computed by long-lived replicas on a Ray cluster.

Each replica is a Ray actor that loads the model once (factprobe's own backend, so the
shared-prefix cache of ZP-LKE's examples is kept: no ready-made serving engine returns prompt
log-probabilities with its prefix cache on) and then computes chunk after chunk. The driver
keeps the plan, the checkpoints and the progress bar; it gives each replica whole prefix
groups, balanced by tokens (:mod:`factprobe.probes.engine.partition`). A chunk is the very backend call
the local runner makes, so its numbers are those of a local run, and sampled generations are
seeded per request (``hf_causal._row_generator``), whichever replica draws them.

A replica that dies (a node lost, out of memory) is restarted by Ray up to ``MAX_RESTARTS``
times and its queued chunks are run again; chunks already finished are checkpointed by the
driver, so a rerun of the same command after anything worse redoes only what was missing.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from factprobe.core.cpus import import_ray, ray_worker_env
from factprobe.core.errors import UserError
from factprobe.probes.backends.base import BackendKind
from factprobe.probes.backends.config import BackendConfig
from factprobe.probes.backends.identity import describe_change
from factprobe.probes.backends.placement import replica_config
from factprobe.probes.engine.checkpoints import ChunkStats
from factprobe.probes.engine.executors import (
    ExecutorConfig,
    ResumableError,
    fit_to_context,
    timed_chunk,
)
from factprobe.probes.engine.partition import assign, chunk_tokens, partitions, token_counter

MAX_RESTARTS = 3
# Test hook: a marker file's path. The first replica to reach its second chunk creates it and
# exits at once (os._exit, as a crash does), so the tests see a replica die mid-run.
EXIT_HOOK = "FACTPROBE_TEST_REPLICA_EXIT"


class Replica:
    """One model on one Ray worker. A model that fails to load is reported by ``info`` in one
    line (not by dying: Ray would restart it and load it again, for nothing)."""

    def __init__(self, load, backend_cfg: BackendConfig, threads: float, exit_hook: str | None):
        try:
            import torch
            torch.set_num_threads(max(1, int(threads)))
        except ImportError:
            pass
        self.error = None
        try:
            self.backend = load(backend_cfg)
        except Exception as exc:   # noqa: BLE001 - said in one line by info()
            self.error = str(exc) if isinstance(exc, UserError) else \
                f"the model did not load on a replica: {type(exc).__name__}: {exc}"
        self.exit_hook = exit_hook
        self.calls = 0
        self._count = None

    def info(self) -> dict:
        if self.error:
            return {"error": self.error}
        b = self.backend
        return {"identity": b.identity(), "describe": b.describe(), "class": type(b).__name__,
                "capabilities": sorted(b.capabilities), "max_length": b.max_length,
                "niceness": os.nice(0)}

    def fit(self, requests: list, policy: str, shorten) -> tuple[list, dict]:
        counts: dict = {}
        return fit_to_context(requests, self.backend, policy, shorten, counts), counts

    def costs(self, chunks: list[list]) -> list[int]:
        self._count = self._count or token_counter(self.backend)
        return [chunk_tokens(c, self._count) for c in chunks]

    def release(self) -> None:
        """Before the driver kills this replica: remove the offload folder its model made
        (a killed process runs no exit handlers)."""
        from factprobe.probes.backends.placement import remove_offload_dirs
        remove_offload_dirs()

    def run(self, stage_name: str, kind: str, chunk: list) -> tuple[list[dict], ChunkStats]:
        self.calls += 1
        if self.exit_hook and self.calls == 2:
            try:
                os.close(os.open(self.exit_hook, os.O_CREAT | os.O_EXCL))
                os._exit(1)
            except FileExistsError:
                pass
        return timed_chunk(self.backend, stage_name, kind, chunk, None)


class RayExecutor:
    """``cfg.replicas`` replicas of the backend on the cluster at ``cfg.address`` (or the Ray
    already initialised in this process)."""

    def __init__(self, cfg: ExecutorConfig, kind: BackendKind, backend_cfg: BackendConfig,
                 progress: bool):
        ray = self.ray = import_ray()
        self.started_here = not ray.is_initialized()
        if self.started_here:
            try:
                ray.init(address=cfg.address, include_dashboard=False, log_to_driver=False,
                         logging_level="ERROR")
            except (ConnectionError, ValueError, RuntimeError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise UserError(f"--ray-address {cfg.address}: no Ray cluster there ({first}); "
                                f"start one with 'ray start --head' or give its address"
                                ) from None
        self.cfg = cfg
        self.replicas: list = []
        try:
            self._start(kind, backend_cfg, progress)
        except BaseException:
            self.close()
            raise

    def _start(self, kind: BackendKind, backend_cfg: BackendConfig, progress: bool) -> None:
        ray, cfg = self.ray, self.cfg
        self._warn_resources(progress)
        actor = ray.remote(Replica).options(
            num_cpus=cfg.cpus_per_replica, num_gpus=cfg.gpus_per_replica,
            max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS,
            # at its node's niceness, not 15 nicer (core.cpus.ray_worker_env says why)
            runtime_env={"env_vars": ray_worker_env()})
        backend_cfg = replica_config(backend_cfg, cfg.gpus_per_replica)
        self.offloads = bool(getattr(backend_cfg, "offload_folder", None))
        self.replicas = [actor.remote(kind.load, backend_cfg, cfg.cpus_per_replica,
                                      os.environ.get(EXIT_HOOK))
                         for _ in range(cfg.replicas)]
        infos = ray.get([r.info.remote() for r in self.replicas])
        for info in infos:
            if "error" in info:
                raise UserError(info["error"])
        first = infos[0]
        for k, info in enumerate(infos[1:], 1):
            if info["identity"] != first["identity"]:
                raise UserError(f"replica {k} does not have replica 0's model or libraries "
                                f"({describe_change(first['identity'], info['identity'])}); "
                                f"install the same versions and files on every node")
        self._info = first
        self.capabilities = frozenset(first["capabilities"])
        self.backend_name = first["class"]
        self.max_length = first["max_length"]
        self.per_replica = [{"tokens": 0, "seconds": 0.0, "chunks": 0,
                             "niceness": info["niceness"]} for info in infos]

    def _warn_resources(self, progress: bool) -> None:
        have = self.ray.cluster_resources()
        cfg = self.cfg
        for name, each in (("CPU", cfg.cpus_per_replica), ("GPU", cfg.gpus_per_replica)):
            need = each * cfg.replicas
            if need and have.get(name, 0) < need:
                # an autoscaling cluster (KubeRay, `ray up`) may still add the nodes
                print(f"factprobe: {cfg.replicas} replicas need {need:g} {name}s; the Ray "
                      f"cluster has {have.get(name, 0):g} now, so replicas wait for more",
                      file=sys.stderr)

    def identity(self) -> dict:
        return self._info["identity"]

    def describe(self) -> dict:
        return self._info["describe"]

    def _get(self, ref, replica: int):
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, UserError):
                raise UserError(str(exc.cause)) from None
            raise
        except ray.exceptions.RayActorError:
            raise ResumableError(
                f"replica {replica} died {MAX_RESTARTS + 1} times; the finished chunks are "
                f"kept: run the same command again to resume") from None

    def fit(self, requests: list, policy: str, shorten, counts: dict) -> list:
        if policy == "error" or self.max_length is None or not requests:
            return requests
        kept, got = self._get(self.replicas[0].fit.remote(requests, policy, shorten), 0)
        for key, n in got.items():
            counts[key] = counts.get(key, 0) + n
        return kept

    def costs(self, chunks: list[list]) -> list[int]:
        """Token estimates, the tokenising spread over the replicas."""
        n = len(self.replicas)
        step = -(-len(chunks) // n) or 1
        refs = [(k, self.replicas[k].costs.remote(chunks[s:s + step]))
                for k, s in enumerate(range(0, len(chunks), step))]
        return [c for k, ref in refs for c in self._get(ref, k)]

    def run(self, stage_name: str, kind: str, jobs: list[tuple[int, list]], bar
            ) -> Iterator[tuple[int, list[dict], ChunkStats]]:
        if not jobs:
            return
        ray = self.ray
        parts = partitions([getattr(chunk[0], "group", "") for _, chunk in jobs])
        bins = assign(self.costs([[r for j in p for r in jobs[j][1]] for p in parts]),
                      len(self.replicas))
        pending = {}
        for part, b in zip(parts, bins):
            for j in part:
                i, chunk = jobs[j]
                pending[self.replicas[b].run.remote(stage_name, kind, chunk)] = (i, b, len(chunk))
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            i, b, n = pending.pop(ready[0])
            rows, stats = self._get(ready[0], b)
            mine = self.per_replica[b]
            mine["tokens"] += stats.tokens_computed
            mine["seconds"] = round(mine["seconds"] + stats.seconds, 3)
            mine["chunks"] += 1
            bar.update(n)
            yield i, rows, stats

    def info(self) -> dict:
        cfg = self.cfg
        return {"kind": "ray", "replicas": cfg.replicas, "gpus_per_replica": cfg.gpus_per_replica,
                "cpus_per_replica": cfg.cpus_per_replica, "per_replica": self.per_replica}

    def close(self) -> None:
        if getattr(self, "offloads", False):
            # bounded: a replica still computing a chunk (the driver interrupted) answers
            # only after it, and a stop must not wait for that
            with contextlib.suppress(Exception):  # a replica already gone has nothing to free
                self.ray.get([r.release.remote() for r in self.replicas], timeout=10)
        for r in self.replicas:
            with contextlib.suppress(Exception):   # a replica already gone needs no killing
                self.ray.kill(r)
        if self.started_here:
            self.ray.shutdown()
