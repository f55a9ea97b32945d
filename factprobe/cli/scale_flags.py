"""``factprobe eval``'s flags for running past one process: ``--executor ray`` and its replicas,
``--shard I/N`` (docs/scaling.md). Read once here into an
:class:`~factprobe.probes.engine.executors.ExecutorConfig`."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import positive, positive_float
from factprobe.core.errors import UserError


def _gpus(value: str) -> float:
    return 0.0 if value.strip() in ("0", "0.0") else positive_float(value)


def _shard(value: str) -> tuple[int, int]:
    from factprobe.probes.engine.shards import parse_shard
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_scale_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scale (docs/scaling.md)")
    g.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: this process (default); ray: replicas on a Ray cluster "
                        "(pip install 'factprobe[ray]')")
    g.add_argument("--ray-address", help="the Ray cluster: auto, HOST:PORT or ray://HOST:PORT "
                   "(default: $RAY_ADDRESS, else a new local Ray)")
    g.add_argument("--replicas", type=positive, default=None,
                   help="model replicas, each a Ray actor that loads the model once (2)")
    g.add_argument("--gpus-per-replica", type=_gpus, default=None, help="GPUs per replica (0)")
    g.add_argument("--cpus-per-replica", type=positive_float, default=None,
                   help="CPUs (and torch threads) per replica (1)")
    g.add_argument("--shard", type=_shard, metavar="I/N",
                   help="compute shard I (from 0) of N and write it to --out; 'factprobe "
                        "merge' makes the run from all N (for clusters without Ray)")


def executor_config(args):
    from factprobe.probes.engine.executors import ExecutorConfig
    ray_only = [f for f, v in (("--ray-address", args.ray_address), ("--replicas", args.replicas),
                               ("--gpus-per-replica", args.gpus_per_replica),
                               ("--cpus-per-replica", args.cpus_per_replica)) if v is not None]
    if args.executor != "ray" and ray_only:
        raise UserError(f"{', '.join(ray_only)} need --executor ray")
    if args.shard and args.executor == "ray":
        raise UserError("--shard is for runs without Ray; with --executor ray, use --replicas")
    return ExecutorConfig(kind=args.executor, address=args.ray_address,
                          replicas=args.replicas or 2,
                          gpus_per_replica=args.gpus_per_replica or 0.0,
                          cpus_per_replica=args.cpus_per_replica or 1.0, shard=args.shard)
