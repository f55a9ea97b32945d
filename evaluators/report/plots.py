"""Figures of ``factprobe report`` (matplotlib, Agg backend, PNG) and the CSV series behind the
ones DVC can draw (``plots/<name>.csv``, every series of a figure with its ``series`` name, and
``plots/<name>/<series>.csv``). A method's runs take part in the figures its
metrics name (``MethodMetrics.plots``); the heatmap and validity bars take every run:

- calibration curves (BELIEF, BELIEF-ICL): mean confidence against accuracy per bin;
- a model x relation heatmap of each method's main number;
- accuracy against the number of in-context examples (ZP-LKE example counts, prompt
  baselines, BELIEF-ICL contexts);
- estimator validity: accuracy on planted against held-out facts, with the AUROC;
- MONITOR against average frame accuracy, per run and per relation;
- ZP-LKE Accuracy@K.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from factprobe.core.csvsafe import safe_frame
from factprobe.core.markdown import slug
from factprobe.evaluators.methods import METHODS
from factprobe.evaluators.metrics.stats import pearson

PNG_META = {"Software": None}


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 110, "font.size": 9,
                         "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def _save(fig, out: Path, name: str, figures: list, title: str) -> None:
    path = out / "figures" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata=PNG_META, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    figures.append((title, f"figures/{name}.png"))


def _series_csv(out: Path, plot: str, series: str, frame: pd.DataFrame, label: str) -> None:
    """One series of a figure: its own file, and its rows in ``plots/<plot>.csv`` (long format,
    ``series`` first) from which `dvc plots show` draws every series of the figure in one chart
    (a template colouring by ``series``; dvc.yaml's ``plots``)."""
    path = out / "plots" / plot / f"{slug(series)}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    safe_frame(frame).to_csv(path, index=False, lineterminator="\n", float_format="%.4f")
    long = out / "plots" / f"{plot}.csv"
    rows = frame.copy()
    rows.insert(0, "series", label)      # a model's name: spreadsheet-safe like every cell
    safe_frame(rows).to_csv(long, mode="a", header=not long.exists(), index=False,
                            lineterminator="\n", float_format="%.4f")


def _name(run, setting: str) -> str:
    base = f"{run.method}: {run.label}"
    return f"{base} ({setting})" if setting else base


def calibration(runs, out: Path, figures: list) -> str | None:
    curves = []
    for r in runs:
        if "calibration" not in r.spec.plots:
            continue
        for setting, block in r.spec.setting_blocks(r.metrics).items():
            cal = (block.get("overconfidence") or {}).get("calibration") or {}
            if not cal:
                continue
            frame = pd.DataFrame([{"bin": int(k), **v} for k, v in sorted(cal.items())])
            frame = frame[["bin", "confidence", "accuracy", "n"]]
            curves.append((_name(r, setting), block["overconfidence"]["value"], frame))
            _series_csv(out, "calibration", f"{r.dataset}-{r.method}-{r.label}-{setting}",
                        frame, _name(r, setting))
    if not curves:
        return "no calibration curve: no BELIEF or BELIEF-ICL run with confidences"
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="perfect calibration")
    for name, over, frame in curves:
        ax.plot(frame["confidence"], frame["accuracy"], marker="o", markersize=3.5,
                label=f"{name}  Overconf {over:+.3f}" if over is not None else name)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("mean confidence in bin")
    ax.set_ylabel("accuracy in bin")
    ax.set_title("Calibration (equal-size bins by confidence)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    _save(fig, out, "calibration", figures, "Calibration curves")
    return None


def heatmaps(rel_table: pd.DataFrame, out: Path, figures: list) -> list[str]:
    notes = []
    if rel_table.empty:
        return ["no heatmap: no per-relation numbers"]
    plt = _plt()
    for (ds, method), g in rel_table.groupby(["dataset", "method"], sort=True):
        g = g.assign(row=[f"{m} ({s})" if s else m for m, s in zip(g["model"], g["setting"])])
        wide = g.pivot_table(index="row", columns="relation_id", values="value",
                             aggfunc="first", sort=True)
        spec = METHODS[method].metrics
        main = spec.main
        label = spec.headlines[main][1]
        lower = main in spec.lower_is_better
        data = wide.to_numpy(dtype=float)
        finite = data[~np.isnan(data)]
        if not finite.size:
            # e.g. MONITOR where no anchor matched: an empty image has no extent (matplotlib
            # warns of identical limits), and an empty figure says less than this note
            notes.append(f"no {label} heatmap for {method} on {ds}: no relation has a value")
            continue
        fig_w = max(4.5, 0.75 * wide.shape[1] + 2.8)
        fig_h = max(2.0, 0.45 * wide.shape[0] + 1.8)
        fig, ax = plt.subplots(figsize=(fig_w, fig_h))
        vmax = 1.0 if not lower else max(1.0, float(finite.max()) if finite.size else 1.0)
        im = ax.imshow(np.ma.masked_invalid(data), cmap="viridis_r" if lower else "viridis",
                       vmin=0, vmax=vmax, aspect="auto")
        ax.set_xticks(range(wide.shape[1]))
        ax.set_xticklabels([c.split(":")[-1] for c in wide.columns], rotation=35, ha="right")
        ax.set_yticks(range(wide.shape[0]))
        ax.set_yticklabels(wide.index)
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                v = data[i, j]
                if np.isnan(v):
                    continue
                dark = (v / vmax < 0.55) != lower
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
        cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
        cb.set_label(label + (" (lower is better)" if lower else ""))
        ax.set_title(f"{label} per relation: {method} on {ds}")
        _save(fig, out, f"heatmap-{slug(ds)}-{slug(method)}", figures,
              f"{label} per relation ({method}, {ds})")
    return notes


def _context_x(name: str) -> tuple[int, str]:
    if name == "zero":
        return 0, "zero"
    n, _, kind = name.partition("-")
    return (int(n), kind) if n.isdigit() else (0, name)


def accuracy_vs_examples(runs, out: Path, figures: list) -> str | None:
    series = []   # (label, frame[n_examples, accuracy, ci_low, ci_high])
    for r in runs:
        if "accuracy_vs_examples" not in r.spec.plots:
            continue
        if not r.spec.contexts:                     # multiple choice: the n_examples sweep
            by_n = r.metrics.get("mc_accuracy_by_n") or {}
            rows = [{"n_examples": int(n), "accuracy": v.get("value"), "ci_low": v.get("ci_low"),
                     "ci_high": v.get("ci_high")} for n, v in by_n.items()]
            if rows:
                series.append((f"{r.method}: {r.label} on {r.dataset} (MC accuracy)",
                               pd.DataFrame(rows).sort_values("n_examples"),
                               f"{r.dataset}-{r.method}-{r.label}"))
        else:                                       # the X of each in-context setting
            blocks = r.spec.setting_blocks(r.metrics)
            kinds: dict[str, list] = {}
            for ctx, block in blocks.items():
                x, kind = _context_x(ctx)
                acc = block.get("accuracy") or {}
                kinds.setdefault(kind, []).append({"n_examples": x, "accuracy": acc.get("value"),
                                                   "ci_low": acc.get("ci_low"),
                                                   "ci_high": acc.get("ci_high")})
            zero = kinds.pop("zero", [])
            if not kinds and zero:
                kinds["zero"] = []
            for kind, rows in kinds.items():
                rows = zero + rows
                series.append((f"{r.method}: {r.label} on {r.dataset} ({kind} examples, Acc@1)",
                               pd.DataFrame(rows).sort_values("n_examples"),
                               f"{r.dataset}-{r.method}-{r.label}-{kind}"))
    if not series:
        return "no accuracy-against-examples plot: no ZP-LKE, prompt or BELIEF-ICL run"
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    xs = set()
    for label, frame, file in series:
        frame = frame.dropna(subset=["accuracy"])
        _series_csv(out, "accuracy_vs_examples", file, frame, label)
        x = frame["n_examples"].to_numpy(dtype=float)
        y = frame["accuracy"].to_numpy(dtype=float)
        lo = y - frame["ci_low"].to_numpy(dtype=float)
        hi = frame["ci_high"].to_numpy(dtype=float) - y
        xs |= set(x.tolist())
        ax.errorbar(x, y, yerr=[np.nan_to_num(lo), np.nan_to_num(hi)], marker="o",
                    markersize=4, capsize=3, linewidth=1.3, label=label)
    positive = sorted(v for v in xs if v > 0)
    if positive and max(positive) / max(min(positive), 1) >= 20:
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks(sorted(xs))
    ax.set_xticklabels([str(int(v)) for v in sorted(xs)])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("in-context examples")
    ax.set_ylabel("accuracy (95% interval)")
    ax.set_title("Accuracy against the number of in-context examples")
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    _save(fig, out, "accuracy_vs_examples", figures, "Accuracy against in-context examples")
    return None


def validity(val_table: pd.DataFrame, out: Path, figures: list) -> str | None:
    rows = val_table[val_table["estimator"] == "validity"]
    if rows.empty:
        return "no validity plot: no run of a planted-knowledge model"
    plt = _plt()
    labels = [f"{m}\n{mo}" + (f"\n{s}" if s else "") for m, mo, s in
              zip(rows["method"], rows["model"], rows["setting"])]
    x = np.arange(len(rows))
    w = 0.38
    fig, ax = plt.subplots(figsize=(max(5.0, 1.15 * len(rows) + 1.5), 4.4))
    for off, key, color, name in ((-w / 2, "planted", "#2b7bba", "planted (taught)"),
                                  (w / 2, "held_out", "#e0812f", "held-out (never shown)")):
        v = rows[f"{key}_value"].to_numpy(dtype=float)
        lo = v - rows[f"{key}_ci_low"].to_numpy(dtype=float)
        hi = rows[f"{key}_ci_high"].to_numpy(dtype=float) - v
        ax.bar(x + off, np.nan_to_num(v), w, color=color, label=name,
               yerr=[np.nan_to_num(lo), np.nan_to_num(hi)], capsize=3, error_kw={"lw": 1})
    for i, (a, p, h) in enumerate(zip(rows["auroc_value"], rows["planted_ci_high"],
                                      rows["held_out_ci_high"])):
        top = np.nanmax([p if p is not None else np.nan, h if h is not None else np.nan, 0])
        if a is not None and not pd.isna(a):
            ax.text(i, min(top + 0.05, 1.08), f"AUROC {a:.2f}", ha="center", fontsize=7.5)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7.5)
    ax.set_ylim(0, 1.15)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("accuracy (95% interval)")
    ax.set_title("Estimator validity: planted against held-out facts")
    ax.legend(fontsize=7.5, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=2)
    _save(fig, out, "validity", figures, "Estimator validity: planted vs held-out facts")
    return None


def monitor_vs_accuracy(runs, out: Path, figures: list) -> str | None:
    points, rel_points = [], []
    for r in runs:
        if "monitor_vs_accuracy" not in r.spec.plots:
            continue
        mon = r.metrics.get("monitor") or {}
        acc = ((r.metrics.get("frame_accuracy") or {}).get("avg")) or {}
        if mon.get("value") is None or acc.get("value") is None:
            continue
        points.append((r.label, acc["value"], mon["value"]))
        accs = acc.get("per_relation") or {}
        for rel, m in (mon.get("per_relation") or {}).items():
            if rel in accs and m.get("value") is not None:
                rel_points.append((r.label, rel, accs[rel]["value"], m["value"]))
    if not points:
        return ("no MONITOR-against-accuracy plot: no MONITOR run with a matched anchor and "
                "frame accuracies")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.4, 4.2))
    if rel_points:
        ax.scatter([p[2] for p in rel_points], [p[3] for p in rel_points], s=18, alpha=0.55,
                   color="#7a9cc6", label="run x relation")
        for p in rel_points:
            ax.annotate(p[1].split(":")[-1], (p[2], p[3]), fontsize=6, alpha=0.8,
                        xytext=(3, 2), textcoords="offset points")
    ax.scatter([p[1] for p in points], [p[2] for p in points], s=55, color="#c0392b",
               marker="D", label="run (overall)", zorder=3)
    for p in points:
        ax.annotate(p[0], (p[1], p[2]), fontsize=7.5, xytext=(4, -9), textcoords="offset points")
    xs = [p[2] for p in rel_points] or [p[1] for p in points]
    ys = [p[3] for p in rel_points] or [p[2] for p in points]
    r_ = pearson(xs, ys)
    title = "MONITOR against average frame accuracy"
    if not np.isnan(r_):
        title += f"\nPearson r = {r_:.3f} over {len(xs)} run x relation points"
    ax.set_title(title)
    ax.set_xlabel("average frame accuracy")
    ax.set_ylabel("MONITOR (lower is better)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, frameon=False)
    _save(fig, out, "monitor_vs_accuracy", figures, "MONITOR against accuracy")
    return None


def accuracy_at_k(runs, out: Path, figures: list) -> str | None:
    curves = []
    for r in runs:
        if "accuracy_at_k" not in r.spec.plots:
            continue
        at = r.metrics.get("accuracy_at_k") or {}
        frame = pd.DataFrame([{"k": float(k), "accuracy": v.get("value"), "share": v.get("share"),
                               "ci_low": v.get("ci_low"), "ci_high": v.get("ci_high")}
                              for k, v in sorted(at.items(), key=lambda kv: float(kv[0]))])
        if frame.empty:
            continue
        curves.append((f"{r.method}: {r.label}", frame))
        _series_csv(out, "accuracy_at_k", f"{r.dataset}-{r.method}-{r.label}", frame,
                    f"{r.method}: {r.label}")
    if not curves:
        return "no Accuracy@K plot: no ZP-LKE or prompt run"
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    for i, (name, frame) in enumerate(curves):
        color = f"C{i}"
        ax.plot(frame["k"], frame["accuracy"], marker="o", markersize=3.5, color=color,
                label=f"{name}: accuracy")
        ax.fill_between(frame["k"], frame["ci_low"].astype(float),
                        frame["ci_high"].astype(float), color=color, alpha=0.15)
        ax.plot(frame["k"], frame["share"], linestyle=":", color=color,
                label=f"{name}: share of questions kept")
    ax.set_xlabel("K (top normalised probability at least)")
    ax.set_ylabel("accuracy / share")
    ax.set_ylim(0, 1.02)
    ax.set_title("Multiple-choice Accuracy@K (shaded: 95% interval)")
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16),
              ncol=2)
    _save(fig, out, "accuracy_at_k", figures, "Accuracy@K")
    return None


def make_all(runs, rel_table: pd.DataFrame, val_table: pd.DataFrame, out: Path
             ) -> tuple[list[tuple[str, str]], list[str]]:
    figures: list[tuple[str, str]] = []
    notes: list[str] = []
    for fn in (validity,):
        n = fn(val_table, out, figures)
        if n:
            notes.append(n)
    notes.extend(heatmaps(rel_table, out, figures))
    for fn in (calibration, accuracy_vs_examples, accuracy_at_k, monitor_vs_accuracy):
        n = fn(runs, out, figures)
        if n:
            notes.append(n)
    return figures, notes
