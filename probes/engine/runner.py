"""``factprobe eval``: dataset -> probe plan -> backend -> outputs.parquet, prompts.parquet,
run.json, metrics.json.

Work is cut into chunks (one group of requests sharing a prefix, at most ``CHUNK`` requests);
each finished chunk is written to a checkpoint folder beside the output (:mod:`.checkpoints`),
so a killed run resumes where it stopped without redoing or duplicating anything, and only
with the very model that computed the chunks. The final files appear only when everything is
done, in one rename.
"""
from __future__ import annotations

import platform
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, is_dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from builders.core.errors import UserError
from builders.core.outdir import atomic_folder, stamp
from builders.core.tables import dumps_json, file_sha256, read_manifest, write_parquet
from probes.backends import BackendConfig, backend_kind
from probes.backends.base import Backend, BackendKind, missing
from probes.engine.checkpoints import Checkpoints, ChunkStats
from probes.engine.outputs import (
    generate_rows,
    mask_rows,
    outputs_table,
    request_text,
    score_rows,
    typed_frame,
)
from probes.plan import Plan, Stage
from probes.requests import prompt_id
from probes.subject_blind import COLUMN as BLIND

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


def fit_to_context(requests: list, backend: Backend, policy: str, shorten, counts: dict) -> list:
    """Apply the --too-long policy to requests longer than the model's context."""
    limit = backend.max_length
    if limit is None or policy == "error":
        return requests  # the backend raises a clear error on the first one
    out = []
    for asked in requests:
        r = asked
        while r is not None and backend.request_tokens(r) > limit:
            r = shorten(r) if policy == "truncate" and shorten else None
            if r is not None:
                counts["truncated_examples"] = counts.get("truncated_examples", 0) + 1
        if r is None:
            counts["skipped_too_long"] = counts.get("skipped_too_long", 0) + 1
            rel = str((getattr(asked, "meta", None) or {}).get("relation_id", ""))
            per = counts.setdefault("skipped_per_relation", {})
            per[rel] = per.get(rel, 0) + 1
        else:
            out.append(r)
    return out


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


def _once(call, chunk: list, bar) -> list:
    """``call`` on the distinct requests of ``chunk`` (equal in all the model sees; sampled
    generations stay apart), one result per request of ``chunk``. A batch's numbers depend
    on its make-up in the last float bits: a question asked twice in a chunk (the
    subject-blind null asks one per fact) must get one answer, or that noise decides its
    ties."""
    keys = [i if getattr(r, "samples", 0) else r for i, r in enumerate(chunk)]
    first: dict = {}
    for k, r in zip(keys, chunk):
        first.setdefault(k, r)
    if len(first) == len(chunk):
        return call(chunk, progress=bar)
    got = dict(zip(first, call(list(first.values()), progress=bar)))
    if bar is not None:
        bar.update(len(chunk) - len(first))
    return [got[k] for k in keys]


def _run_chunk(backend, stage: Stage, chunk: list, bar) -> list[dict]:
    if stage.kind == "score":
        return score_rows(stage.name, chunk, _once(backend.score, chunk, bar))
    if stage.kind == "generate":
        return generate_rows(stage.name, chunk, _once(backend.generate, chunk, bar))
    if stage.kind == "fill_mask":
        return mask_rows(stage.name, chunk, _once(backend.fill_mask, chunk, bar))
    raise ValueError(stage.kind)


def execute(plan: Plan, backend: Backend, checkpoints: Checkpoints, progress: bool,
            too_long: str = "error", counts: dict | None = None
            ) -> tuple[pd.DataFrame, dict]:
    """Run every stage, resuming from ``checkpoints``; returns (outputs, prompts)."""
    counts = {} if counts is None else counts
    frames: list[pd.DataFrame] = []
    prompts: dict[str, str] = {}
    for stage in plan.stages:
        checkpoints.begin_stage(stage.key)
        requests = stage.requests
        if stage.build is not None:
            requests = stage.build(pd.concat(frames, ignore_index=True) if frames
                                   else pd.DataFrame())
            _check_needs(plan.method, Stage(stage.name, stage.kind, requests).capabilities(),
                         backend)
        requests = fit_to_context(requests, backend, too_long, plan.shorten, counts)
        for r in requests:
            text = request_text(r)
            prompts[prompt_id(text)] = text
        # Bars only on a terminal: piped or logged, stderr stays the one line of an error.
        with tqdm(total=len(requests), desc=f"{plan.method} {stage.key}", unit="req",
                  disable=not progress or not sys.stderr.isatty()) as bar:
            for i, chunk in enumerate(_chunks(requests)):
                path = checkpoints.path(stage.key, i, chunk)
                frame = checkpoints.load(stage.key, path)
                if frame is None:
                    before = backend.usage()
                    start = time.perf_counter()
                    rows = _run_chunk(backend, stage, chunk, bar)
                    after = backend.usage()
                    stats = ChunkStats(after.computed - before.computed,
                                       after.full_sequence - before.full_sequence,
                                       round(time.perf_counter() - start, 3))
                    frame = checkpoints.save(stage.key, path, rows, stats)
                else:
                    bar.update(len(chunk))
                frames.append(frame)
    outputs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return outputs, prompts


def _sorted(outputs: pd.DataFrame) -> pd.DataFrame:
    # the probe's own rows first, then the subject-blind null's (probes/subject_blind.py)
    keys = [k for k in (BLIND, "stage", "relation_id", "fact_id", "seed", "n_examples", "position",
                        "prompt_id", "option", "sample") if k in outputs.columns]
    return outputs.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def final_table(outputs: pd.DataFrame) -> pa.Table:
    """outputs.parquet's table: typed (docs/schema.md) and sorted."""
    return outputs_table(_sorted(typed_frame(outputs)))


def write_run(out: Path, outputs: pd.DataFrame, prompts: dict, run: dict, metrics: dict) -> Path:
    with atomic_folder(out, "run") as tmp:
        write_parquet(final_table(outputs), tmp / "outputs.parquet")
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


def _check_needs(method: str, needs: frozenset[str], backend: Backend) -> None:
    """A ``build`` stage's requests are known only now: the backend must still suit them."""
    why = missing(needs, type(backend).__name__, backend.capabilities)
    if why:
        raise UserError(f"{method}: {why}")


def run_eval(cfg: EvalConfig, backend_cfg: BackendConfig, plan: Plan, method_cfg,
             dataset_info: dict, *, kinds: Mapping[str, BackendKind], metrics_fn=None
             ) -> Path | None:
    """Execute ``plan`` with the backend of ``backend_cfg`` (loaded by its row of ``kinds``)
    and write the run folder."""
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
        print(f"{plan.size()} requests in {len(plan.stages)} stage(s); nothing was run "
              f"(--dry-run)")
        return None
    start = time.perf_counter()
    backend = kind.load(backend_cfg)
    out = Path(cfg.out)
    checkpoints = Checkpoints(checkpoint_folder(out), backend.identity(), start)
    why = checkpoints.open()
    if why:
        print(f"factprobe: {why}; starting over", file=sys.stderr)
    counts: dict = {}
    try:
        outputs, prompts = execute(plan, backend, checkpoints, cfg.progress, cfg.too_long,
                                   counts)
        # the metrics read the rows as outputs.parquet holds them, as 'factprobe report' does
        outputs = final_table(outputs).to_pandas()
        metrics = metrics_fn(outputs) if metrics_fn is not None else {}
    except UserError:
        checkpoints.abandon()
        raise
    described = backend.describe()
    run = {
        "method": plan.method,
        "method_config": _config_dict(method_cfg),
        "eval": asdict(cfg),                 # --out as given: relative stays relative
        "backend": described["backend"],
        "model": described["model"] | {"identity": checkpoints.digest},
        "dataset": dataset_info,
        "plan": plan.info | {"too_long": counts, "skipped_relations": plan.skipped},
        "versions": _versions(),
        "timings_s": checkpoints.timings(),
        "tokens": checkpoints.tokens(),
        "sessions": checkpoints.session_info(),
        "rows": len(outputs),
    }
    write_run(out, outputs, prompts, run, metrics)
    checkpoints.remove()
    return out


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
