"""The executor ``--executor`` names (local or Ray), chosen once at the edge: the one module
that knows both, so neither imports the other."""
from __future__ import annotations

from collections.abc import Mapping

from factprobe.probes.backends.base import BackendKind
from factprobe.probes.backends.config import BackendConfig
from factprobe.probes.engine.executors import ExecutorConfig, LocalExecutor


def open_executor(cfg: ExecutorConfig, kind: BackendKind, backend_cfg: BackendConfig,
                  kinds: Mapping[str, BackendKind], progress: bool):
    """The executor ``cfg`` names, its model(s) loaded. Ray is imported only here, when asked."""
    if cfg.kind == "ray":
        from factprobe.probes.engine.ray_replicas import RayExecutor
        return RayExecutor(cfg, kind, backend_cfg, progress)
    return LocalExecutor(kind.load(backend_cfg), cfg.lanes if kind.threads else 1)
