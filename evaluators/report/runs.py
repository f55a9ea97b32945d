"""Run folders for ``factprobe report``: finding them, reading them (with the shape checks of
:mod:`.run_checks`), the checks across runs, their labels and the headline metrics asked for."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError
from factprobe.evaluators.methods import METHODS
from factprobe.evaluators.methods import method as known_method
from factprobe.evaluators.metrics.suite import MethodMetrics
from factprobe.evaluators.report.run_checks import check_planted, check_run_json


@dataclass
class Run:
    path: Path
    method: str
    dataset: str
    facts_sha256: str
    model: str
    label: str
    config: dict
    outputs: pd.DataFrame
    planted: dict | None
    planted_path: str | None
    stored_metrics: dict | None
    metrics: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)        # run.json as 'factprobe eval' wrote it

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.method}/{self.label}"

    @property
    def spec(self) -> MethodMetrics:
        """What the report knows about this run's method (headlines, family, ...)."""
        return METHODS[self.method].metrics


# ------------------------------------------------------------------------------ loading

def find_runs(paths: list[str]) -> list[Path]:
    """Run folders (run.json + outputs.parquet) at or under each path, sorted."""
    found: list[Path] = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise UserError(f"--results {p}: no such file or folder")
        if (path / "run.json").is_file() and (path / "outputs.parquet").is_file():
            found.append(path)
            continue
        if not path.is_dir():
            raise UserError(f"--results {p}: not a run folder (it needs run.json and "
                            f"outputs.parquet, as 'factprobe eval' writes)")
        sub = [r.parent for r in sorted(path.rglob("run.json"))
               if (r.parent / "outputs.parquet").is_file()
               and not any(part.startswith(".") for part in r.parent.relative_to(path).parts)]
        if not sub:
            raise UserError(f"--results {p}: no run folder (run.json + outputs.parquet) "
                            f"under it; run 'factprobe eval' first")
        found.extend(sub)
    return [_display(p) for p in sorted({p.resolve() for p in found})]


def _display(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _read_json(path: Path, what: str) -> dict:
    try:
        return jsonsafe.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read {what} ({exc})") from None


def load_run(path: Path, planted_file: str | None = None) -> Run:
    run = check_run_json(path, _read_json(path / "run.json", "run.json"))
    method = run.get("method")
    known_method(method, f"{path}/run.json")
    ds = run.get("dataset") or {}
    try:
        outputs = pd.read_parquet(path / "outputs.parquet")
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}/outputs.parquet: cannot read it ({exc})") from None
    model = (run.get("backend") or {}).get("model") or (run.get("model") or {}).get("name", "")
    planted, planted_path = None, None
    candidates = [Path(planted_file)] if planted_file else \
        ([Path(model) / "planted.json"] if model else [])
    for c in candidates:
        if c.is_file():
            planted = check_planted(str(c), _read_json(c, "planted.json"))
            planted_path = str(c)
        elif planted_file:
            raise UserError(f"--planted {planted_file}: no such file")
    stored = path / "metrics.json"
    return Run(path=path, method=method, dataset=str(ds.get("name") or "dataset"),
               facts_sha256=str(ds.get("facts_sha256") or ""), model=str(model),
               label=path.name, config=run.get("method_config") or {}, outputs=outputs,
               planted=planted, planted_path=planted_path,
               stored_metrics=_read_json(stored, "metrics.json") if stored.is_file() else None,
               info=run)


def check_datasets(runs: list[Run]) -> None:
    """Runs of one dataset name must come from one build of it (same facts table)."""
    by_name: dict[str, dict[str, Run]] = {}
    for r in runs:
        by_name.setdefault(r.dataset, {}).setdefault(r.facts_sha256, r)
    for name, builds in by_name.items():
        if len(builds) > 1:
            a, b = list(builds.values())[:2]
            raise UserError(f"{a.path} and {b.path} were evaluated on different builds of "
                            f"dataset {name!r} (their facts tables differ): compare runs of one "
                            f"build, or rerun the older run on the current dataset")


def disambiguate(runs: list[Run]) -> None:
    """Labels unique within (dataset, method): the folder name, then more of the path."""
    groups: dict[tuple, list[Run]] = {}
    for r in runs:
        groups.setdefault((r.dataset, r.method), []).append(r)
    for members in groups.values():
        depth = 1
        while len({_tail(r.path, depth) for r in members}) < len(members) and depth < 10:
            depth += 1
        for r in members:
            r.label = _tail(r.path, depth)


def _tail(path: Path, depth: int) -> str:
    return "/".join(path.resolve().parts[-depth:])


# ---------------------------------------------------------------------------- selection

def parse_metrics(value: str | None, runs: list[Run]) -> dict[str, list[str]]:
    """Headline names per method; a name some run's method cannot give is a user error."""
    if not value:
        return {m: list(METHODS[m].metrics.headlines) for m in {r.method for r in runs}}
    names = [v.strip() for v in value.split(",") if v.strip()]
    known = sorted({n for m in METHODS.values() for n in m.metrics.headlines})
    for n in names:
        if n not in known:
            raise UserError(f"--metrics: unknown metric {n!r}; factprobe has: {', '.join(known)}")
    for r in runs:
        bad = [n for n in names if n not in r.spec.headlines]
        if bad:
            raise UserError(f"--metrics {bad[0]}: {r.method} cannot give it ({r.path}); "
                            f"{r.method} has: {', '.join(r.spec.headlines)}")
    return {m: names for m in {r.method for r in runs}}
