"""``factprobe eval``: dataset -> probe plan -> backend -> outputs.parquet, prompts.parquet,
run.json, metrics.json.

Work is cut into chunks (one group of requests sharing a prefix, at most ``CHUNK`` requests);
each finished chunk is written to a checkpoint folder beside the output (:mod:`.checkpoints`),
so a killed run resumes where it stopped without redoing or duplicating anything, and only
with the very model that computed the chunks. The final files appear only when everything is
done, in one rename.
"""
from __future__ import annotations

import copy
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder, stamp
from factprobe.core.tables import dumps_json, file_sha256, read_manifest, write_parquet
from factprobe.probes.backends import BackendConfig, backend_kind
from factprobe.probes.backends.base import BackendKind, missing
from factprobe.probes.engine.checkpoints import Checkpoints
from factprobe.probes.engine.choose import open_executor
from factprobe.probes.engine.executors import ExecutorConfig, ResumableError
from factprobe.probes.engine.outputs import outputs_table, request_text, typed_frame
from factprobe.probes.engine.partition import assign, partitions
from factprobe.probes.engine.shards import write_shard
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import prompt_id
from factprobe.probes.subject_blind import COLUMN as BLIND

CHUNK = 256


@dataclass(frozen=True)
class EvalConfig:
    method: str
    dataset: str
    out: str
    relations: tuple[str, ...] | None = None
    limit: int | None = None        # test facts per relation
    dry_run: bool = False
    progress: bool = True
    too_long: str = "error"         # error | skip | truncate: prompts longer than the model's context


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in ("factprobe", "torch", "transformers", "numpy", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _chunks(requests: list) -> list[list]:
    groups: dict[str, list] = {}
    for r in requests:
        groups.setdefault(getattr(r, "group", ""), []).append(r)
    out = []
    for members in groups.values():
        out.extend(members[i:i + CHUNK] for i in range(0, len(members), CHUNK))
    return out


def _mine(executor, chunks: list[list], shard: tuple[int, int] | None) -> list[int]:
    """The chunk indices this process computes: all, or shard I's partitions of N."""
    if shard is None:
        return list(range(len(chunks)))
    index, count = shard
    parts = partitions([getattr(c[0], "group", "") for c in chunks])
    costs = executor.costs([[r for i in part for r in chunks[i]] for part in parts])
    bins = assign(costs, count)
    return sorted(i for part, b in zip(parts, bins) if b == index for i in part)


def execute(plan: Plan, executor, checkpoints: Checkpoints, progress: bool,
            too_long: str = "error", counts: dict | None = None,
            shard: tuple[int, int] | None = None, record: dict | None = None
            ) -> tuple[pd.DataFrame, dict]:
    """Run every stage, resuming from ``checkpoints``; returns (outputs, prompts). ``shard``
    (I, N): only shard I's partitions of the stages known in advance; a stage built from
    earlier outputs (MONITOR's) is built from this shard's own rows. ``record`` receives,
    per stage, its chunk files and --too-long counts (what ``factprobe merge`` needs)."""
    counts = {} if counts is None else counts
    frames: list[pd.DataFrame] = []
    prompts: dict[str, str] = {}
    # One bar for the whole run, fed by every replica. Its total starts from the stages known
    # in advance and is corrected as each stage is fitted, sharded or built from earlier rows.
    # Bars only on a terminal: piped or logged, stderr stays the one line of an error.
    bar = tqdm(total=sum(len(s.requests) for s in plan.stages if s.build is None),
               desc=plan.method, unit="req", disable=not progress or not sys.stderr.isatty())
    try:
        _stages(plan, executor, checkpoints, too_long, counts, shard, record, frames, prompts,
                bar)
    finally:
        bar.close()
    outputs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return outputs, prompts


def _stages(plan: Plan, executor, checkpoints: Checkpoints, too_long: str, counts: dict,
            shard, record, frames: list, prompts: dict, bar) -> None:
    for stage in plan.stages:
        checkpoints.begin_stage(stage.key)
        requests = stage.requests
        if stage.build is not None:
            # no earlier rows (a shard given none of the first stage): nothing to build from
            requests = stage.build(pd.concat(frames, ignore_index=True)) if frames else []
            _check_needs(plan.method, Stage(stage.name, stage.kind, requests).capabilities(),
                         executor)
        before = copy.deepcopy(counts)
        requests = executor.fit(requests, too_long, plan.shorten, counts)
        for r in requests:
            text = request_text(r)
            prompts[prompt_id(text)] = text
        chunks = _chunks(requests)
        paths = [checkpoints.path(stage.key, i, c) for i, c in enumerate(chunks)]
        mine = _mine(executor, chunks, None if stage.build is not None else shard)
        done: dict[int, pd.DataFrame] = {}
        planned = len(stage.requests) if stage.build is None else 0
        bar.total += sum(len(chunks[i]) for i in mine) - planned
        bar.set_description(f"{plan.method} {stage.key}")
        todo = []
        for i in mine:
            frame = checkpoints.load(stage.key, paths[i])
            if frame is None:
                todo.append((i, chunks[i]))
            else:
                done[i] = frame
                bar.update(len(chunks[i]))
        for i, rows, stats in executor.run(stage.name, stage.kind, todo, bar):
            done[i] = checkpoints.save(stage.key, paths[i], rows, stats)
        frames.extend(done[i] for i in mine)
        if record is not None:
            record[stage.key] = {
                "built": stage.build is not None,
                "chunks": [paths[i].name for i in mine],
                "too_long": _grown(before, counts)}


def _grown(before: dict, after: dict) -> dict:
    """What one stage added to the --too-long counts (numbers, or numbers per relation).

    >>> _grown({"skipped_too_long": 1, "skipped_per_relation": {"P1": 1}},
    ...        {"skipped_too_long": 3, "skipped_per_relation": {"P1": 2, "P2": 1}})
    {'skipped_too_long': 2, 'skipped_per_relation': {'P1': 1, 'P2': 1}}
    """
    out: dict = {}
    for k, v in after.items():
        d = _grown(before.get(k, {}), v) if isinstance(v, dict) else v - before.get(k, 0)
        if d:
            out[k] = d
    return out


def _sorted(outputs: pd.DataFrame) -> pd.DataFrame:
    # the probe's own rows first, then the subject-blind null's (probes/subject_blind.py)
    keys = [k for k in (BLIND, "stage", "relation_id", "fact_id", "seed", "n_examples", "position",
                        "prompt_id", "option", "sample") if k in outputs.columns]
    return outputs.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def final_table(outputs: pd.DataFrame, integer_columns: tuple[str, ...] = ()) -> pa.Table:
    """outputs.parquet's table: typed (docs/schema.md; ``integer_columns``: the plan's) and
    sorted."""
    return outputs_table(_sorted(typed_frame(outputs, integer_columns)), integer_columns)


def write_run(out: Path, outputs: pd.DataFrame, prompts: dict, run: dict, metrics: dict,
              integer_columns: tuple[str, ...] = ()) -> Path:
    with atomic_folder(out, "run") as tmp:
        write_parquet(final_table(outputs, integer_columns), tmp / "outputs.parquet")
        ptable = pa.table({"prompt_id": sorted(prompts),
                           "text": [prompts[k] for k in sorted(prompts)]})
        write_parquet(ptable, tmp / "prompts.parquet")
        (tmp / "metrics.json").write_text(dumps_json(metrics), encoding="utf-8")
        (tmp / "run.json").write_text(dumps_json(stamp(run, tmp, "run")), encoding="utf-8")
    return out


def _config_dict(obj) -> dict:
    return asdict(obj) if is_dataclass(obj) else dict(obj)


def checkpoint_folder(out: Path) -> Path:
    return out.with_name(f".{out.name}.partial")


def _check_needs(method: str, needs: frozenset[str], executor) -> None:
    """A ``build`` stage's requests are known only now: the backend must still suit them."""
    why = missing(needs, executor.backend_name, executor.capabilities)
    if why:
        raise UserError(f"{method}: {why}")


def run_eval(cfg: EvalConfig, backend_cfg: BackendConfig, plan: Plan, method_cfg,
             dataset_info: dict, *, kinds: Mapping[str, BackendKind], metrics_fn=None,
             executor: ExecutorConfig | None = None, threads: dict | None = None,
             runnable: Callable[[frozenset], list[str]] | None = None) -> Path | None:
    """Execute ``plan`` with the backend of ``backend_cfg`` (loaded by its row of ``kinds``,
    here or on each replica of ``executor``) and write the run folder (with ``--shard``,
    one shard of it: :mod:`factprobe.probes.engine.shards`). ``threads``: the torch thread choice, for
    run.json. ``runnable``: the methods a backend with these capabilities can run (the caller's
    table of methods), named when a loaded backend offers less than the plan needs."""
    if plan.size() == 0:
        # Loading a model only to find there is nothing to ask it costs minutes for nothing.
        raise UserError(f"nothing to evaluate: {plan.empty_reason()}")
    kind = backend_kind(backend_cfg, kinds)
    why = missing(plan.needs(), f"kind {backend_cfg.kind!r}", kind.capabilities)
    if why:
        raise UserError(f"{plan.method}: {why}")
    if cfg.dry_run:
        for line in plan.first_prompts(3):
            print(line)
        # what the real run would leave out, in the words its results table uses
        for rel, why in sorted(plan.skipped.items()):
            print(f"skipped relation {rel}: {why}")
        print(f"{plan.size()} requests in {len(plan.stages)} stage(s); nothing was run "
              f"(--dry-run)")
        return None
    executor = executor or ExecutorConfig()
    start = time.perf_counter()
    runner = open_executor(executor, kind, backend_cfg, kinds, cfg.progress)
    try:
        # A loaded backend may offer less than its kind (a server without prompt
        # log-probabilities): refused here, before any request of the plan is sent.
        why = missing(plan.needs(), f"kind {backend_cfg.kind!r}", runner.capabilities)
        if why:
            limits = getattr(runner, "limits", "")
            can = runnable(frozenset(runner.capabilities)) if runnable else []
            if can:
                limits = (f"{limits}; " if limits else "") + f"it can run {', '.join(can)}"
            raise UserError(f"{plan.method}: {why}" + (f" ({limits})" if limits else ""))
        return _run(cfg, plan, method_cfg, dataset_info, metrics_fn, executor, runner, start,
                    threads)
    finally:
        runner.close()


def _run(cfg: EvalConfig, plan: Plan, method_cfg, dataset_info: dict, metrics_fn,
         executor: ExecutorConfig, runner, start: float, threads: dict | None = None) -> Path:
    out = Path(cfg.out)
    checkpoints = Checkpoints(checkpoint_folder(out), runner.identity(), start)
    why = checkpoints.open()
    if why:
        print(f"factprobe: {why}; starting over", file=sys.stderr)
    counts: dict = {}
    record: dict = {}
    try:
        outputs, prompts = execute(plan, runner, checkpoints, cfg.progress, cfg.too_long,
                                   counts, executor.shard, record)
        # the metrics read the rows as outputs.parquet holds them, as 'factprobe report' does
        outputs = final_table(outputs, plan.integer_columns).to_pandas()
        metrics = metrics_fn(outputs) if metrics_fn is not None and not executor.shard else {}
    except ResumableError:
        raise                      # the finished chunks stay for the next run
    except UserError:
        checkpoints.abandon()
        raise
    described = runner.describe()
    run = {
        "method": plan.method,
        "method_config": _config_dict(method_cfg),
        "eval": asdict(cfg),                 # --out as given: relative stays relative
        "backend": described["backend"],
        "model": described["model"] | {"identity": checkpoints.digest},
        "dataset": dataset_info,
        "plan": {k: v for k, v in plan.info.items() if k != "planted_model"}
        | {"too_long": counts, "skipped_relations": plan.skipped},
        "versions": _versions(),
        "timings_s": checkpoints.timings(),
        "tokens": checkpoints.tokens(),
        "sessions": checkpoints.session_info(),
        "executor": runner.info(),
        "threads": _lanes_used(threads, runner),
        # the CPU kernels the numbers came from, as the identity the checkpoints were keyed by
        # already holds them (a local backend's identity() hashes the model files again)
        "kernels": checkpoints.identity.get("kernels"),
        "rows": len(outputs),
    }
    if plan.info.get("planted_model") is not None:   # whether the planted model learned
        run["planted_model"] = plan.info["planted_model"]
    if executor.shard:
        write_shard(out, run, prompts, record, checkpoints.folder, executor.shard,
                    plan.integer_columns)
    else:
        write_run(out, outputs, prompts, run, metrics, plan.integer_columns)
    checkpoints.remove()
    return out


def _lanes_used(threads: dict | None, runner) -> dict | None:
    """The thread choice as it ran: one lane where the model computes on a GPU."""
    lanes = getattr(runner, "lanes", None)
    if threads is None or lanes is None or "per_lane" not in threads:
        return threads
    return threads | {"threads": lanes.workers}


def dataset_info(folder: Path) -> dict:
    manifest = read_manifest(folder)
    return {"path": str(folder), "name": manifest.get("name"), "kind": manifest.get("kind"),
            "facts_sha256": file_sha256(folder / "facts.parquet")}


def select_facts(facts: pd.DataFrame, relations: tuple[str, ...] | None, limit: int | None
                 ) -> pd.DataFrame:
    """Keep the asked relations and at most ``limit`` test facts per relation (train rows stay:
    they are the examples)."""
    if relations:
        present = set(facts["relation_id"])
        missing = [r for r in relations if r not in present]
        if missing:
            raise UserError(f"relation(s) {', '.join(missing)} not in the dataset; it has: "
                            f"{', '.join(sorted(present))}")
        facts = facts[facts["relation_id"].isin(relations)]
    if limit is not None:
        is_test = facts["split"] == "test" if "split" in facts.columns and \
            (facts["split"] != "").any() else pd.Series(True, index=facts.index)
        rank = facts[is_test].groupby("relation_id").cumcount()
        keep_test = rank[rank < limit].index
        facts = facts[~is_test | facts.index.isin(keep_test)]
    return facts.reset_index(drop=True)
