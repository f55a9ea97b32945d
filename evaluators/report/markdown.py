"""The report's Markdown: each table of :mod:`.tables` as GitHub tables, and ``report.md``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from factprobe.core.markdown import escape, fmt, table
from factprobe.core.markdown import missing as _missing
from factprobe.evaluators.methods import METHODS
from factprobe.evaluators.metrics.validity import (
    FAMILIARITY_MARGIN,
    LEANS,
    planted_model,
    planted_warning,
)
from factprobe.evaluators.report.tables import GUESSABLE_BELOW, setting_name_s


def leaderboard_markdown(board: pd.DataFrame) -> str:
    parts = []
    for (ds, method), g in board.groupby(["dataset", "method"], sort=True):
        spec = METHODS[method].metrics
        names = list(dict.fromkeys(g["metric"]))
        wide = []
        for (model, setting), s in g.groupby(["model", "setting"], sort=False):
            row = {"model": model}
            if spec.contexts:
                row["context"] = setting
            for _, x in s.iterrows():
                row[x["label"]] = fmt(x["value"], x["ci_low"], x["ci_high"])
            row["_sort"] = s.loc[s["metric"] == spec.main, "value"].squeeze() \
                if (s["metric"] == spec.main).any() else None
            wide.append(row)
        frame = pd.DataFrame(wide)
        if "_sort" in frame and frame["_sort"].notna().any():
            frame = frame.sort_values("_sort", ascending=spec.main in spec.lower_is_better,
                                      kind="stable", na_position="last")
        frame = frame.drop(columns=["_sort"], errors="ignore")
        order = ["model"] + (["context"] if spec.contexts else []) + \
            [spec.headlines[n][1] for n in names]
        parts.append(f"### {method} on {escape(ds)}\n\n" + table(frame[[c for c in order
                                                                 if c in frame]]))
    return "\n".join(parts)


def per_relation_markdown(rel_table: pd.DataFrame) -> str:
    parts = []
    for (ds, method), g in rel_table.groupby(["dataset", "method"], sort=True):
        g = g.assign(column=[f"{m} ({s})" if s else m for m, s in zip(g["model"], g["setting"])])
        wide = g.pivot_table(index="relation_id", columns="column", values="value",
                             aggfunc="first", sort=True)
        wide = wide.map(fmt)
        spec = METHODS[method].metrics
        label = spec.headlines[spec.main][1]
        parts.append(f"### {label}: {method} on {escape(ds)}\n\n" + table(wide.reset_index()))
    return "\n".join(parts)


def validity_markdown(val_table: pd.DataFrame) -> str:
    if val_table.empty:
        return "_No run has a planted-knowledge model (planted.json beside the model)._\n"
    rows = []
    for _, x in val_table.iterrows():
        rows.append({"method": x["method"], "dataset": x["dataset"],
                     "model": setting_name_s(x["model"], x["setting"]),
                     "estimator": x["estimator"],
                     "planted": fmt(x["planted_value"], x["planted_ci_low"], x["planted_ci_high"]),
                     "held-out": fmt(x["held_out_value"], x["held_out_ci_low"],
                                     x["held_out_ci_high"])
                     + (" (!)" if is_guessable(x) else ""),
                     "difference": fmt(x["difference_value"], x["difference_ci_low"],
                                       x["difference_ci_high"]),
                     "AUROC": fmt(x["auroc_value"], x["auroc_ci_low"], x["auroc_ci_high"]),
                     "subject-blind AUROC": _null_cell(x),
                     "link-shuffle AUROC": _shuffle_cell(x),
                     "subject-only AUROC ('.' / own)": _subject_cell(x),
                     "n (planted / held-out)": f"{x['n_planted']} / {x['n_held_out']}",
                     "score": x["score_means"]})
    return table(pd.DataFrame(rows)) + familiarity_flags(val_table)


def _null_cell(x) -> str:
    if _missing(x["null_auroc_value"]):
        return "no null pass" if _missing(x["null_reason"]) else "– (see notes)"
    cell = fmt(x["null_auroc_value"], x["null_auroc_ci_low"], x["null_auroc_ci_high"])
    return cell + " (!)" if _flagged(x) else cell


def _shuffle_cell(x) -> str:
    if _missing(x.get("shuffle_auroc_value")):
        return "–" if _missing(x.get("shuffle_reason")) else "– (see notes)"
    cell = fmt(x["shuffle_auroc_value"], x["shuffle_auroc_ci_low"], x["shuffle_auroc_ci_high"])
    return cell + " (!)" if _shuffle_flagged(x) else cell


def _subject_cell(x) -> str:
    cells = []
    for short in ("period", "own"):
        v = x.get(f"{short}_auroc_value")
        cells.append("–" if _missing(v) else fmt(v, x[f"{short}_auroc_ci_low"],
                                                  x[f"{short}_auroc_ci_high"]))
    if cells == ["–", "–"]:
        return "–"
    flagged = not _missing(x.get("subject_only_leans"))
    return " / ".join(cells) + (" (!)" if flagged else "")


def subject_flag(x) -> str:
    """The flag of a validity-table row whose subject-only check is off."""
    names = {"period": 'log P("." | subject)', "own": "the subject's own likelihood"}
    parts = []
    for item in str(x["subject_only_leans"]).split(","):
        short, lean = item.split(":")
        parts.append(f"{names[short]} (AUROC {fmt(x[f'{short}_auroc_value'])}) favours "
                     f"{'planted' if lean == 'planted' else 'held-out'} subjects")
    return ("subject-only check: " + "; ".join(parts) + ". The subject alone tells the "
            "halves apart: an estimator that reads the subject (confidence, entropy) can "
            "pass this validity check without measuring the link.")


def _shuffle_flagged(x) -> bool:
    return not _missing(x.get("shuffle_flag")) and bool(x["shuffle_flag"])


def shuffle_flag(x) -> str:
    """The flag of a validity-table row whose link-shuffle null favours planted facts."""
    auroc = fmt(x["shuffle_auroc_value"], x["shuffle_auroc_ci_low"],
                x["shuffle_auroc_ci_high"])
    return (f"link-shuffle null AUROC {auroc}"
            f" (validity AUROC {fmt(x['auroc_value'])}): scored against another fact's gold "
            f"of the same relation and half, the probe still favours planted facts; it reads "
            f"how familiar the answers or subjects are, not only the subject-object link.")


def _flagged(x) -> bool:
    return not _missing(x["familiarity"]) and bool(x["familiarity"])


def is_guessable(x) -> bool:
    """Whether a validity-table row carries the flag of :func:`guess_flag`."""
    return not _missing(x.get("guessable")) and bool(x["guessable"])


def guess_flag(x) -> str:
    """The flag of a validity-table row whose held-out facts are answered above chance while
    its AUROC is low (tables._guess_columns)."""
    held = fmt(x["held_out_value"], x["held_out_ci_low"], x["held_out_ci_high"])
    return (f"held-out facts answered right {held} against {fmt(x['held_out_chance'])} by "
            f"chance (validity AUROC {fmt(x['auroc_value'])}): the model answers facts it was "
            f"never taught, so the graph gives them away (names that hold the answer, "
            f"relations that are each other's inverse). That caps the AUROC whatever the "
            f"estimator does; more choices (mc.choices) weigh such facts less "
            f"(docs/metrics/validity.md).")


def familiarity_flags(val_table: pd.DataFrame) -> str:
    """One line per validity block whose subject-blind null is off (:func:`null_flag`), and
    one per block whose null could not be computed or is undefined."""
    lines = []
    for _, x in val_table.iterrows():
        where = escape(f"{x['method']} on {x['dataset']}, "
                       f"{setting_name_s(x['model'], x['setting'])}, {x['estimator']}")
        if is_guessable(x):
            lines.append(f"- **{where}**: {guess_flag(x)}")
        if _flagged(x):
            lines.append(f"- **{where}**: {null_flag(x)}")
        elif _missing(x["null_auroc_value"]) and not _missing(x["null_reason"]):
            lines.append(f"- {where}: no subject-blind null ({escape(x['null_reason'])}).")
        # each null's flag or its reason for being missing, in index.html's order
        # (overview.js): a flagged subject-only check must not hide a missing link-shuffle
        if not _missing(x.get("subject_only_leans")):
            lines.append(f"- **{where}**: {subject_flag(x)}")
        if _shuffle_flagged(x):
            lines.append(f"- **{where}**: {shuffle_flag(x)}")
        elif _missing(x.get("shuffle_auroc_value")) and not _missing(x.get("shuffle_reason")):
            lines.append(f"- {where}: no link-shuffle null ({escape(x['shuffle_reason'])}).")
    if not lines:
        return ""
    return "\n" + "\n".join(lines) + "\n"


def null_flag(x) -> str:
    """The flag of one validity-table row whose subject-blind null is off: the null with its
    interval, and which half the subject-free probe favours (report.md and index.html)."""
    lean = x.get("null_leans")
    if _missing(lean):
        lean = "planted" if float(x["null_auroc_value"]) > 0.5 else "held_out"
    return (f"subject-blind null AUROC "
            f"{fmt(x['null_auroc_value'], x['null_auroc_ci_low'], x['null_auroc_ci_high'])} "
            f"(validity AUROC {fmt(x['auroc_value'])}): outside "
            f"{0.5 - FAMILIARITY_MARGIN:g}-{0.5 + FAMILIARITY_MARGIN:g} with an interval that "
            f"excludes 0.5. The probe {LEANS[lean]}; the validity AUROC overstates what it "
            f"measures of the model's knowledge.")


def comparisons_markdown(tests: pd.DataFrame) -> str:
    if tests.empty:
        return "_No two settings of one dataset and method family to compare._\n"
    rows = [{"dataset": x["dataset"], "A": x["a"], "B": x["b"], "facts": x["n"],
             "A acc.": fmt(x["a_value"]), "B acc.": fmt(x["b_value"]),
             "A - B": fmt(x["difference"], x["ci_low"], x["ci_high"]),
             "p (paired)": fmt(x["p_value"], digits=4),
             "only A / only B": f"{x['a_only']} / {x['b_only']}"} for _, x in tests.iterrows()]
    return table(pd.DataFrame(rows))


def matrix_markdown(name: str, m: pd.DataFrame) -> str:
    return f"### {escape(name)}\n\n" + table(m.reset_index().map(
        lambda v: fmt(v) if isinstance(v, float) else v))


def planted_warnings(runs) -> list[str]:
    """One line per planted model (planted.json) of the runs that did not learn its planted
    facts, naming the runs that use it."""
    by_file: dict[str, list] = {}
    for r in runs:
        if r.planted_path and planted_warning(planted_model(r.planted), ""):
            by_file.setdefault(r.planted_path, []).append(r)
    out = []
    for path, members in sorted(by_file.items()):
        where = str(Path(path).parent)
        used = ", ".join(sorted(f"{r.method} on {r.dataset}" for r in members))
        out.append(planted_warning(planted_model(members[0].planted), where)
                   + f" Runs that use it: {used}.")
    return out


def render(runs, lb_md, rel_md, val_md, cmp_md, mat_md, figures, notes, cfg) -> str:
    o = cfg.options
    lines = ["# factprobe report", "",
             f"{len(runs)} run(s). Intervals are 95% bootstrap intervals over facts "
             f"({o.resamples} resamples, seed {o.seed}, facts resampled within relations); "
             f"p-values come from a paired sign-flip test over the facts both settings share. "
             f"See docs/metrics/ for every definition.", ""]
    warnings = planted_warnings(runs)
    # at the top: a half-taught planted model is read at a glance, before any number
    lines += [f"> **Warning.** {w}" + "\n" for w in warnings]
    lines += ["## Runs", ""]
    runs_tab = pd.DataFrame([{"dataset": r.dataset, "method": r.method, "model": r.label,
                              "run folder": str(r.path), "rows": len(r.outputs),
                              "planted.json": r.planted_path or "–"} for r in runs])
    lines += [table(runs_tab), "## Leaderboard", "", lb_md or "_(none)_\n",
              "## Estimator validity (planted-knowledge model)", "",
              "Accuracy on the facts the model was taught (planted) and on those it never saw "
              "(held-out), and the AUROC of each method's per-fact score between the two. "
              "A valid estimator scores planted facts far above held-out ones. The "
              "subject-blind AUROC is the same probe with every planted and held-out subject "
              "replaced by one made-up name: it should be 0.5, and a block whose null is farther "
              f"than {FAMILIARITY_MARGIN} from it, with an interval that excludes 0.5, is "
              "flagged (!) below the table, saying which half it favours. The link-shuffle "
              "AUROC scores each fact against the gold of another fact of its relation and "
              "half: a probe that reads the subject-object link gives 0.5 or less, and one "
              "above (interval and all) is flagged (!). The subject-only AUROCs read the "
              "subject alone (log P(\".\" | subject) and its own likelihood; on a masked "
              "model, \".\" at a mask after the subject and its pseudo-log-likelihood): 0.5, "
              "or flagged (!). A multiple-choice block whose held-out facts are answered "
              "above chance (interval and all) while its AUROC is under "
              f"{GUESSABLE_BELOW:g} is flagged (!) on its held-out cell: the graph gives "
              "those facts away "
              "(docs/metrics/validity.md).", ""]
    lines += [f"> **Warning.** {w}" + "\n" for w in warnings]
    lines += [val_md,
              "## Comparisons", "", cmp_md]
    if mat_md:
        sub = {"per-relation": "computed within each relation and averaged over the "
                               "relations where the row knows a fact (the ZP-LKE paper's "
                               "Tables 2 and 11)",
               "pooled": "pooled over all facts (--subsumption pooled)"}[cfg.subsumption]
        unit = {"fact-template": "a (fact, template) counts once, answered under any of its "
                                 "subject names (the BELIEF paper's Sec. 7)",
                "prompt": "every (fact, template, subject name) prompt counts "
                          "(--sharing-unit prompt)"}[cfg.sharing_unit]
        lines += [f"Subsumption eta(row | column) = share of the row's known facts the column "
                  f"also knows, {sub}; sharing rate = share of the row's covered facts the "
                  f"column also covers, where {unit}.", ""]
        lines += mat_md
    lines += ["## Per relation", "", rel_md or "_(none)_\n"]
    if figures:
        lines += ["## Figures", ""]
        for title, rel in figures:
            lines += [f"### {escape(title)}", "", f"![{escape(title)}]({rel})", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {escape(n)}" for n in notes] + [""]
    return "\n".join(lines).rstrip() + "\n"
