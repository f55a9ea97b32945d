"""``factprobe report``: run folders -> recomputed ``metrics.json`` per run, a leaderboard,
per-relation tables, estimator validity, paired comparisons, subsumption / sharing matrices
and plots.

Layout of ``--out``::

    report.md                       everything below, readable on GitHub
    report.json                     the files of this report (what a rerun may replace)
    metrics.json                    headline numbers of every run and setting, with intervals
    headline.json                   a handful of flat scalars for DVC (:mod:`.headline`)
    runs/<dataset>/<method>/<model>/metrics.json   each run's full metrics, recomputed
    tables/*.csv, tables/*.md       leaderboard, per_relation, validity, comparisons, matrices
    figures/*.png                   calibration, heatmaps, accuracy vs examples, validity,
                                    MONITOR vs accuracy, Accuracy@K
    plots/<name>.csv                data for `dvc plots show`, every series of a figure in one
                                    file (column ``series``): calibration, accuracy vs examples,
                                    Accuracy@K
    plots/<name>/<series>.csv       the same, one file per series

Runs are compared only inside one dataset (same name and same facts table) and one method
family (each method's metrics name theirs: multiple choice, BELIEF with every BELIEF-ICL context
its own setting, MONITOR), each pair on the facts both cover; report.md says where runs cover
different facts.

The work is split by job: :mod:`.runs` finds and reads run folders, :mod:`.tables` computes the
tables and tests, :mod:`.markdown` writes them as Markdown, :mod:`.plots` draws the figures;
this module puts them together in the report folder.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from factprobe.core.csvsafe import safe_frame
from factprobe.core.markdown import escape, slug
from factprobe.core.outdir import atomic_folder, stamp
from factprobe.core.tables import dumps_json
from factprobe.evaluators.metrics.skipped import skipped_lines
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.report.headline import headline
from factprobe.evaluators.report.markdown import (
    comparisons_markdown,
    leaderboard_markdown,
    matrix_markdown,
    per_relation_markdown,
    render,
    validity_markdown,
)
from factprobe.evaluators.report.runs import (
    check_datasets,
    disambiguate,
    find_runs,
    load_run,
    parse_metrics,
)
from factprobe.evaluators.report.tables import (
    comparison_groups,
    comparisons,
    coverage_notes,
    leaderboard,
    per_relation_table,
    summary_metrics,
    validity_table,
)
from factprobe.probes.subject_blind import split_passes

PLOT_DIRS = ("figures", "plots/calibration", "plots/accuracy_vs_examples", "plots/accuracy_at_k")


@dataclass(frozen=True)
class ReportConfig:
    results: tuple[str, ...]
    out: str
    metrics: str | None = None
    options: MetricsOptions = MetricsOptions()
    common_facts: bool = False      # no longer needed: runs are always compared on shared facts
    planted: str | None = None
    plots: bool = True
    progress: bool = True
    html: bool = False                    # also index.html + explorer/ (evaluators/report/html)
    # the papers' readings of the matrices by default; the others are named options
    subsumption: str = "per-relation"     # ZP-LKE Tables 2 and 11 | pooled
    sharing_unit: str = "fact-template"   # BELIEF Sec. 7 | prompt
    by: str | None = None                 # --by COLUMN: headline metrics per slice (.slices)


def _csv(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # ids, labels and model names come from data: a cell starting with = is a formula to a
    # spreadsheet (factprobe.core.csvsafe)
    safe_frame(frame).to_csv(path, index=False, lineterminator="\n", float_format="%.4f")


def build_report(cfg: ReportConfig) -> Path:
    paths = find_runs(list(cfg.results))
    runs = [load_run(p, cfg.planted) for p in paths]
    check_datasets(runs)
    disambiguate(runs)
    runs.sort(key=lambda r: (r.dataset, r.method, r.label))
    selected = parse_metrics(cfg.metrics, runs)
    from tqdm import tqdm
    bar = cfg.progress and sys.stderr.isatty()       # a piped stderr keeps errors one line
    groups = comparison_groups(runs, progress=bar)
    notes = []
    for r in tqdm(runs, desc="report: metrics", unit="run", disable=not bar, leave=False):
        r.metrics = r.spec.checked_compute(r.outputs, r.planted, r.config, options=cfg.options)
        if r.stored_metrics is not None and r.stored_metrics != json.loads(dumps_json(r.metrics)):
            notes.append(f"{r.path}/metrics.json differs from the recomputed metrics (made by "
                         f"an older factprobe or other options); the report uses the "
                         f"recomputed ones.")
    board = leaderboard(runs, selected)
    rel_table = per_relation_table(runs)
    val_table = validity_table(runs)
    tests, matrices, skipped = comparisons(
        groups, options=cfg.options, progress=bar,
        readings={"subsumption": cfg.subsumption, "sharing_unit": cfg.sharing_unit})
    notes.extend(skipped)
    for r in runs:                  # what each run left out, and why (as 'factprobe eval' said)
        notes.extend(f"{r.key}: {line}" for line in skipped_lines(r.metrics, r.info))
    if cfg.by:
        from factprobe.evaluators.report.slices import slice_table, slices_markdown
        by_table, by_notes = slice_table(runs, selected, cfg.by, cfg.options, progress=bar)

    out = Path(cfg.out)
    with atomic_folder(out, "report") as tmp:
        for r in runs:
            target = tmp / "runs" / slug(r.dataset) / r.method / Path(*[
                slug(p) for p in r.label.split("/")]) / "metrics.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(dumps_json(r.metrics), encoding="utf-8")
        (tmp / "metrics.json").write_text(dumps_json(summary_metrics(board)), encoding="utf-8")
        mains = {r.method: r.spec.main for r in runs}
        (tmp / "headline.json").write_text(dumps_json(headline(board, mains)), encoding="utf-8")
        tables = tmp / "tables"
        _csv(board, tables / "leaderboard.csv")
        _csv(rel_table, tables / "per_relation.csv")
        _csv(val_table, tables / "validity.csv")
        _csv(tests, tables / "comparisons.csv")
        for r in runs:                    # per-fact tables of a method (MONITOR: PFD, IRD, ...)
            own = split_passes(r.outputs)[0]          # not the subject-blind null's rows
            for folder, per_fact in r.spec.fact_tables:
                _csv(per_fact(own, cfg.options),
                     tables / folder / f"{slug(r.dataset)}-{slug(r.label)}.csv")
        lb_md = leaderboard_markdown(board)
        rel_md = per_relation_markdown(rel_table)
        (tables / "leaderboard.md").write_text(lb_md, encoding="utf-8")
        (tables / "per_relation.md").write_text(rel_md, encoding="utf-8")
        mat_md = []
        for name, m in matrices:
            m.index.name = "row"
            safe_frame(m).to_csv(tables / f"{name}.csv", lineterminator="\n",
                                 float_format="%.4f")
            mat_md.append(matrix_markdown(name, m))
        for name in PLOT_DIRS:                        # declared in dvc.yaml: always there
            (tmp / name).mkdir(parents=True, exist_ok=True)
        figures = []
        if cfg.plots:
            from factprobe.evaluators.report import plots
            figures, skipped = plots.make_all(runs, rel_table, val_table, tmp)
            notes.extend(skipped)
        cmp_md = comparisons_markdown(tests) + "".join(
            f"\n{escape(line)}\n" for line in coverage_notes(groups))
        report = render(runs, lb_md, rel_md, validity_markdown(val_table), cmp_md, mat_md,
                        figures, notes, cfg)
        if cfg.by:                  # only with --by: a report without it keeps its bytes
            by_name = f"by_{slug(cfg.by)}"
            by_md = slices_markdown(by_table, cfg.by, by_notes)
            _csv(by_table, tables / f"{by_name}.csv")
            (tables / f"{by_name}.md").write_text(by_md, encoding="utf-8")
            report = report.rstrip("\n") + "\n\n" + by_md
        (tmp / "report.md").write_text(report, encoding="utf-8")
        if cfg.html:
            from factprobe.evaluators.report.html.page import write_html
            write_html(tmp, runs, board, rel_table, val_table, notes, cfg.options)
        # The report's ownership marker (factprobe.core.outdir): what a rerun may replace.
        (tmp / "report.json").write_text(dumps_json(stamp({}, tmp, "report")), encoding="utf-8")
    return out
