"""``factprobe report``: run folders -> recomputed ``metrics.json`` per run, a leaderboard,
per-relation tables, estimator validity, paired comparisons, subsumption / sharing matrices
and plots.

Layout of ``--out``::

    report.md                       everything below, readable on GitHub
    report.json                     the files of this report (what a rerun may replace)
    metrics.json                    headline numbers of every run and setting (DVC metrics)
    runs/<dataset>/<method>/<model>/metrics.json   each run's full metrics, recomputed
    tables/*.csv, tables/*.md       leaderboard, per_relation, validity, comparisons, matrices
    figures/*.png                   calibration, heatmaps, accuracy vs examples, validity,
                                    MONITOR vs accuracy, Accuracy@K
    plots/<name>/<series>.csv       data for `dvc plots show` (calibration, accuracy vs examples,
                                    Accuracy@K)

Runs are compared only inside one dataset (same name and same facts table) and one method
family: multiple choice (zp-lke, prompt), BELIEF (belief, belief-icl: every context is its own
setting) and MONITOR.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from builders.core.errors import UserError
from builders.core.outdir import atomic_folder, stamp
from builders.core.tables import dumps_json
from evaluators.metrics import suite
from evaluators.metrics.stats import paired_test, rnd
from evaluators.metrics.suite import HEADLINES, MAIN, MetricsOptions
from evaluators.report.run_checks import check_planted, check_run_json

FAMILY = {"zp-lke": "multiple choice", "prompt": "multiple choice", "belief": "BELIEF",
          "belief-icl": "BELIEF", "monitor": "MONITOR"}
PLOT_DIRS = ("figures", "plots/calibration", "plots/accuracy_vs_examples", "plots/accuracy_at_k")
LOWER_IS_BETTER = {"monitor", "pfd", "ird", "acc1_range", "acc1_std"}


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

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.method}/{self.label}"


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
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read {what} ({exc})") from None


def load_run(path: Path, planted_file: str | None = None) -> Run:
    run = check_run_json(path, _read_json(path / "run.json", "run.json"))
    method = run.get("method")
    if method not in suite.METRICS:
        raise UserError(f"{path}/run.json: method {method!r} is not one factprobe knows "
                        f"({', '.join(suite.METHOD_NAMES)})")
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
               stored_metrics=_read_json(stored, "metrics.json") if stored.is_file() else None)


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
        return {m: list(HEADLINES[m]) for m in {r.method for r in runs}}
    names = [v.strip() for v in value.split(",") if v.strip()]
    known = sorted({n for h in HEADLINES.values() for n in h})
    for n in names:
        if n not in known:
            raise UserError(f"--metrics: unknown metric {n!r}; factprobe has: {', '.join(known)}")
    for r in runs:
        bad = [n for n in names if n not in HEADLINES[r.method]]
        if bad:
            raise UserError(f"--metrics {bad[0]}: {r.method} cannot give it ({r.path}); "
                            f"{r.method} has: {', '.join(HEADLINES[r.method])}")
    return {m: names for m in {r.method for r in runs}}


# ------------------------------------------------------------------------------- tables

def fmt(v, lo=None, hi=None, digits: int = 3) -> str:
    """
    >>> fmt(0.73456, 0.7, 0.76), fmt(None), fmt(0.5, float("nan"), float("nan"))
    ('0.735 [0.700, 0.760]', '–', '0.500')
    """
    if _missing(v):
        return "–"
    s = f"{v:.{digits}f}"
    if not _missing(lo) and not _missing(hi):
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return s


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub table (no tabulate dependency)."""
    if frame.empty:
        return "_(none)_\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in row) + " |")
    return "\n".join(lines) + "\n"


def setting_name(run: Run, setting: str) -> str:
    return f"{run.label} ({setting})" if setting else run.label


def leaderboard(runs: list[Run], selected: dict[str, list[str]]) -> pd.DataFrame:
    rows = []
    for r in runs:
        for setting, block in suite.setting_blocks(r.method, r.metrics).items():
            for name in selected[r.method]:
                h = suite.headline(block, r.method, name)
                rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                             "setting": setting, "metric": name,
                             "label": HEADLINES[r.method][name][1],
                             "value": None if h is None else h["value"],
                             "ci_low": None if h is None else h["ci_low"],
                             "ci_high": None if h is None else h["ci_high"],
                             "n": None if h is None else h["n"]})
    cols = ["dataset", "method", "model", "setting", "metric", "label", "value", "ci_low",
            "ci_high", "n"]
    return pd.DataFrame(rows, columns=cols)


def leaderboard_markdown(board: pd.DataFrame) -> str:
    parts = []
    for (ds, method), g in board.groupby(["dataset", "method"], sort=True):
        names = list(dict.fromkeys(g["metric"]))
        wide = []
        for (model, setting), s in g.groupby(["model", "setting"], sort=False):
            row = {"model": model}
            if method == "belief-icl":
                row["context"] = setting
            for _, x in s.iterrows():
                row[x["label"]] = fmt(x["value"], x["ci_low"], x["ci_high"])
            row["_sort"] = s.loc[s["metric"] == MAIN[method], "value"].squeeze() \
                if (s["metric"] == MAIN[method]).any() else None
            wide.append(row)
        table = pd.DataFrame(wide)
        if "_sort" in table and table["_sort"].notna().any():
            table = table.sort_values("_sort", ascending=MAIN[method] in LOWER_IS_BETTER,
                                      kind="stable", na_position="last")
        table = table.drop(columns=["_sort"], errors="ignore")
        order = ["model"] + (["context"] if method == "belief-icl" else []) + \
            [HEADLINES[method][n][1] for n in names]
        parts.append(f"### {method} on {ds}\n\n" + markdown(table[[c for c in order
                                                                    if c in table]]))
    return "\n".join(parts)


def per_relation_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        main = MAIN[r.method]
        for setting, block in suite.setting_blocks(r.method, r.metrics).items():
            for rel, v in sorted(suite.per_relation(block, r.method, main).items()):
                rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                             "setting": setting, "metric": main, "relation_id": rel,
                             "value": v.get("value"), "ci_low": v.get("ci_low"),
                             "ci_high": v.get("ci_high"), "n": v.get("n")})
    return pd.DataFrame(rows, columns=["dataset", "method", "model", "setting", "metric",
                                       "relation_id", "value", "ci_low", "ci_high", "n"])


def per_relation_markdown(table: pd.DataFrame, runs: list[Run]) -> str:
    parts = []
    for (ds, method), g in table.groupby(["dataset", "method"], sort=True):
        g = g.assign(column=[f"{m} ({s})" if s else m for m, s in zip(g["model"], g["setting"])])
        wide = g.pivot_table(index="relation_id", columns="column", values="value",
                             aggfunc="first", sort=True)
        wide = wide.map(fmt)
        label = HEADLINES[method][MAIN[method]][1]
        parts.append(f"### {label}: {method} on {ds}\n\n" + markdown(wide.reset_index()))
    return "\n".join(parts)


VALIDITY_BLOCKS = {"zp-lke": ["validity", "validity_response"],
                   "prompt": ["validity", "validity_response"],
                   "belief": ["validity"], "belief-icl": ["validity", "validity_samples"],
                   "monitor": ["validity", "validity_frames"]}


def validity_table(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for r in runs:
        for setting, block in suite.setting_blocks(r.method, r.metrics).items():
            for name in VALIDITY_BLOCKS[r.method]:
                v = block.get(name) or {}
                if not v:
                    continue
                rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                             "setting": setting, "estimator": name,
                             "accuracy_means": v.get("accuracy_means", ""),
                             "score_means": v.get("score_means", ""),
                             **{f"{k}_{f}": (v.get(k) or {}).get(f)
                                for k in ("planted", "held_out", "difference", "auroc")
                                for f in ("value", "ci_low", "ci_high")},
                             "n_planted": (v.get("planted") or {}).get("n"),
                             "n_held_out": (v.get("held_out") or {}).get("n")})
    cols = ["dataset", "method", "model", "setting", "estimator", "accuracy_means",
            "score_means"] + [f"{k}_{f}" for k in ("planted", "held_out", "difference", "auroc")
                              for f in ("value", "ci_low", "ci_high")] + ["n_planted",
                                                                           "n_held_out"]
    return pd.DataFrame(rows, columns=cols)


def validity_markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return "_No run has a planted-knowledge model (planted.json beside the model)._\n"
    rows = []
    for _, x in table.iterrows():
        rows.append({"method": x["method"], "dataset": x["dataset"],
                     "model": setting_name_s(x["model"], x["setting"]),
                     "estimator": x["estimator"],
                     "planted": fmt(x["planted_value"], x["planted_ci_low"], x["planted_ci_high"]),
                     "held-out": fmt(x["held_out_value"], x["held_out_ci_low"],
                                     x["held_out_ci_high"]),
                     "difference": fmt(x["difference_value"], x["difference_ci_low"],
                                       x["difference_ci_high"]),
                     "AUROC": fmt(x["auroc_value"], x["auroc_ci_low"], x["auroc_ci_high"]),
                     "n (planted / held-out)": f"{x['n_planted']} / {x['n_held_out']}",
                     "score": x["score_means"]})
    return markdown(pd.DataFrame(rows))


def setting_name_s(model: str, setting: str) -> str:
    return f"{model} ({setting})" if setting else model


# -------------------------------------------------------------------------- comparisons

def comparison_groups(runs: list[Run], *, common_facts: bool) -> dict:
    """Settings to compare, per (dataset, method family), with the facts they share. Settings
    that cover different facts are a user error unless ``common_facts``."""
    groups: dict[tuple, list[tuple[str, Run, pd.DataFrame]]] = {}
    for r in runs:
        for setting, facts in suite.settings(r.method, r.outputs, r.config).items():
            name = f"{r.method}:{setting_name(r, setting)}"
            groups.setdefault((r.dataset, FAMILY[r.method]), []).append((name, r, facts))
    out = {}
    for (ds, family), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        ids = [set(f["fact_id"]) for _, _, f in members]
        common = set.intersection(*ids)
        if any(s != common for s in ids) and not common_facts:
            (_, ra, fa), (_, rb, fb) = _differing(members, ids)
            shared = len(set(fa["fact_id"]) & set(fb["fact_id"]))
            raise UserError(f"{ra.path} and {rb.path} cover different facts of {ds} "
                            f"({len(fa)} vs {len(fb)}, {shared} shared): rerun one with "
                            f"the other's --relations/--limit, or pass --common-facts to "
                            f"compare them on the facts they share")
        if common:
            out[(ds, family)] = (members, common)
        else:
            out[(ds, family)] = (members, set())
    return out


def comparisons(groups: dict, *, options: MetricsOptions
                ) -> tuple[pd.DataFrame, list[tuple[str, pd.DataFrame]], list[str]]:
    """Paired tests between every two settings of one dataset and method family, and the
    subsumption (multiple choice) or knowledge-sharing (BELIEF) matrices."""
    tests, matrices, notes = [], [], []
    for (ds, family), (members, common) in sorted(groups.items()):
        if not common:
            notes.append(f"{', '.join(n for n, _, _ in members)} on {ds} share no fact: "
                         f"not compared.")
            continue
        for (na, ra, fa), (nb, rb, fb) in combinations(members, 2):
            a = fa[fa["fact_id"].isin(common)].sort_values("fact_id")
            b = fb[fb["fact_id"].isin(common)].sort_values("fact_id")
            t = paired_test(a["correct"].to_numpy(), b["correct"].to_numpy(),
                            a["relation_id"].to_numpy(), resamples=options.resamples,
                            seed=options.seed)
            tests.append({"dataset": ds, "family": family, "a": na, "b": nb,
                          "a_value": rnd(a["correct"].mean()), "b_value": rnd(b["correct"].mean()),
                          **t})
        names = [n for n, _, _ in members]
        if family == "multiple choice":
            known = {n: set(f.loc[(f["fact_id"].isin(common)) & (f["known"] > 0),
                                  "fact_id"]) for n, _, f in members}
            from evaluators.metrics.zp_lke import subsumption_matrix
            matrices.append((f"subsumption-{_slug(ds)}", subsumption_matrix(known).round(4)))
        elif family == "BELIEF":
            from evaluators.metrics.belief import sharing_rate
            units = {n: {u for u in f.attrs.get("units", set()) if u[0] in common}
                     for n, _, f in members}
            m = pd.DataFrame([[sharing_rate(units[a], units[b]) for b in names] for a in names],
                             index=names, columns=names).round(4)
            matrices.append((f"sharing-{_slug(ds)}", m))
    cols = ["dataset", "family", "a", "b", "n", "a_value", "b_value", "difference", "ci_low",
            "ci_high", "p_value", "a_only", "b_only"]
    return pd.DataFrame(tests, columns=cols), matrices, notes


def _differing(members, ids):
    first = ids[0]
    for m, s in zip(members[1:], ids[1:]):
        if s != first:
            return members[0], m
    return members[0], members[1]


def comparisons_markdown(tests: pd.DataFrame) -> str:
    if tests.empty:
        return "_No two settings of one dataset and method family to compare._\n"
    rows = [{"dataset": x["dataset"], "A": x["a"], "B": x["b"], "facts": x["n"],
             "A acc.": fmt(x["a_value"]), "B acc.": fmt(x["b_value"]),
             "A - B": fmt(x["difference"], x["ci_low"], x["ci_high"]),
             "p (paired)": fmt(x["p_value"], digits=4),
             "only A / only B": f"{x['a_only']} / {x['b_only']}"} for _, x in tests.iterrows()]
    return markdown(pd.DataFrame(rows))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "x"


# ---------------------------------------------------------------------------- summaries

def summary_metrics(board: pd.DataFrame) -> dict:
    """{dataset: {method: {model[ (context)]: {metric: {value, ci_low, ci_high}}}}}."""
    out: dict = {}
    for _, x in board.iterrows():
        if x["value"] is None or (isinstance(x["value"], float) and np.isnan(x["value"])):
            continue
        name = setting_name_s(x["model"], x["setting"])
        entry = {"value": x["value"]}
        if x["ci_low"] is not None and not pd.isna(x["ci_low"]):
            entry.update(ci_low=x["ci_low"], ci_high=x["ci_high"])
        out.setdefault(x["dataset"], {}).setdefault(x["method"], {}).setdefault(
            name, {})[x["metric"]] = entry
    return out


def _csv(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, lineterminator="\n", float_format="%.4f")


# --------------------------------------------------------------------------------- main

@dataclass(frozen=True)
class ReportConfig:
    results: tuple[str, ...]
    out: str
    metrics: str | None = None
    options: MetricsOptions = MetricsOptions()
    common_facts: bool = False
    planted: str | None = None
    plots: bool = True
    progress: bool = True


def build_report(cfg: ReportConfig) -> Path:
    paths = find_runs(list(cfg.results))
    runs = [load_run(p, cfg.planted) for p in paths]
    check_datasets(runs)
    disambiguate(runs)
    runs.sort(key=lambda r: (r.dataset, r.method, r.label))
    selected = parse_metrics(cfg.metrics, runs)
    groups = comparison_groups(runs, common_facts=cfg.common_facts)
    notes = []
    from tqdm import tqdm
    bar = cfg.progress and sys.stderr.isatty()       # a piped stderr keeps errors one line
    for r in tqdm(runs, desc="report: metrics", unit="run", disable=not bar, leave=False):
        r.metrics = suite.compute(r.method, r.outputs, r.planted, r.config, options=cfg.options)
        if r.stored_metrics is not None and r.stored_metrics != json.loads(dumps_json(r.metrics)):
            notes.append(f"{r.path}/metrics.json differs from the recomputed metrics (made by "
                         f"an older factprobe or other options); the report uses the "
                         f"recomputed ones.")
    board = leaderboard(runs, selected)
    rel_table = per_relation_table(runs)
    val_table = validity_table(runs)
    tests, matrices, skipped = comparisons(groups, options=cfg.options)
    notes.extend(skipped)

    out = Path(cfg.out)
    with atomic_folder(out, "report") as tmp:
        for r in runs:
            target = tmp / "runs" / _slug(r.dataset) / r.method / Path(*[
                _slug(p) for p in r.label.split("/")]) / "metrics.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(dumps_json(r.metrics), encoding="utf-8")
        (tmp / "metrics.json").write_text(dumps_json(summary_metrics(board)), encoding="utf-8")
        tables = tmp / "tables"
        _csv(board, tables / "leaderboard.csv")
        _csv(rel_table, tables / "per_relation.csv")
        _csv(val_table, tables / "validity.csv")
        _csv(tests, tables / "comparisons.csv")
        for r in runs:                                 # MONITOR per fact (PFD, IRD, MONITOR)
            if r.method == "monitor":
                from evaluators.metrics.monitor import per_fact
                facts = per_fact(r.outputs, alphas=tuple(cfg.options.alphas))
                _csv(facts, tables / "monitor_per_fact" / f"{_slug(r.dataset)}-"
                     f"{_slug(r.label)}.csv")
        lb_md = leaderboard_markdown(board)
        rel_md = per_relation_markdown(rel_table, runs)
        (tables / "leaderboard.md").write_text(lb_md, encoding="utf-8")
        (tables / "per_relation.md").write_text(rel_md, encoding="utf-8")
        mat_md = []
        for name, m in matrices:
            m.index.name = "row"
            m.to_csv(tables / f"{name}.csv", lineterminator="\n", float_format="%.4f")
            mat_md.append(f"### {name}\n\n" + markdown(m.reset_index().map(
                lambda v: fmt(v) if isinstance(v, float) else v)))
        for name in PLOT_DIRS:                        # declared in dvc.yaml: always there
            (tmp / name).mkdir(parents=True, exist_ok=True)
        figures = []
        if cfg.plots:
            from evaluators.report import plots
            figures, skipped = plots.make_all(runs, rel_table, val_table, tmp)
            notes.extend(skipped)
        report = render(runs, lb_md, rel_md, validity_markdown(val_table),
                        comparisons_markdown(tests), mat_md, figures, notes, cfg)
        (tmp / "report.md").write_text(report, encoding="utf-8")
        # The report's ownership marker (builders.core.outdir): what a rerun may replace.
        (tmp / "report.json").write_text(dumps_json(stamp({}, tmp, "report")), encoding="utf-8")
    return out


def render(runs, lb_md, rel_md, val_md, cmp_md, mat_md, figures, notes, cfg) -> str:
    o = cfg.options
    lines = ["# factprobe report", "",
             f"{len(runs)} run(s). Intervals are 95% bootstrap intervals over facts "
             f"({o.resamples} resamples, seed {o.seed}, facts resampled within relations); "
             f"p-values come from a paired sign-flip test over the facts both settings share. "
             f"See docs/metrics/ for every definition.", "",
             "## Runs", ""]
    runs_tab = pd.DataFrame([{"dataset": r.dataset, "method": r.method, "model": r.label,
                              "run folder": str(r.path), "rows": len(r.outputs),
                              "planted.json": r.planted_path or "–"} for r in runs])
    lines += [markdown(runs_tab), "## Leaderboard", "", lb_md or "_(none)_\n",
              "## Estimator validity (planted-knowledge model)", "",
              "Accuracy on the facts the model was taught (planted) and on those it never saw "
              "(held-out), and the AUROC of each method's per-fact score between the two. "
              "A valid estimator scores planted facts far above held-out ones.", "", val_md,
              "## Comparisons", "", cmp_md]
    if mat_md:
        lines += ["Subsumption eta(row | column) = share of the row's known facts the column "
                  "also knows; sharing rate = the same over correctly answered prompts.", ""]
        lines += mat_md
    lines += ["## Per relation", "", rel_md or "_(none)_\n"]
    if figures:
        lines += ["## Figures", ""]
        for title, rel in figures:
            lines += [f"### {title}", "", f"![{title}]({rel})", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines).rstrip() + "\n"
