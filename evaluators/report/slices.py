"""``factprobe report --by COLUMN``: every headline metric per slice of the facts, with its
interval, e.g. accuracy by popularity (``--by s_pop``, PopQA's reading: Mallen et al., 2023),
by ``split`` or by a relation's type (``relation_type`` of a LAMA import).

A slice's numbers are the run's metrics computed on the slice's facts alone: the run's outputs
rows of those facts go through the method's own metrics (the same code, options and bootstrap
as the whole run), so a slice equals a run that had only those facts. The column is read from
the dataset each run evaluated (run.json's ``dataset.path``, checked against the facts table's
sha256 the run recorded); a numeric column is bucketed by powers of ten, the scale popularity
spreads over (``[100, 1000)``), anything else is sliced by its value.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.core.markdown import escape
from factprobe.core.tables import file_sha256, read_schema, read_table

NONE = "(none)"


def bucket(value) -> str:
    """A number's power-of-ten bucket; NaN/None is ``(none)``.

    >>> bucket(142), bucket(0), bucket(-5), bucket(1000), bucket(0.5), bucket(None)
    ('[100, 1000)', '[0, 1)', '< 0', '[1000, 10000)', '[0, 1)', '(none)')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NONE
    if value < 0:
        return "< 0"
    if value < 1:
        return "[0, 1)"
    low = 10 ** int(math.floor(math.log10(value)))
    if low * 10 <= value:       # float rounding at exact powers
        low *= 10
    elif low > value:
        low //= 10
    return f"[{low}, {low * 10})"


def _bucket_key(label: str) -> tuple:
    """Buckets in numeric order, ``(none)`` last."""
    if label == NONE:
        return (2, 0)
    if label == "< 0":
        return (0, -1)
    return (0, float(label[1:].split(",")[0])) if label.startswith("[") else (1, label)


def fact_slices(run, column: str) -> pd.Series:
    """fact_id -> the slice labels (a tuple) of the run's dataset, from its facts table's
    ``column``: one label, or for a list column (BEAR's ``domains``) each of its values, so a
    fact with two domains is in both slices."""
    ds = run.info.get("dataset") or {}
    folder = Path(str(ds.get("path") or ""))
    facts = folder / "facts.parquet"
    if not ds.get("path") or not facts.is_file():
        raise UserError(f"{run.path}: --by reads the facts of the dataset the run evaluated, "
                        f"{ds.get('path') or '(not recorded)'}, which is not there; run the "
                        f"report where the run was made, or rebuild the dataset")
    if ds.get("facts_sha256") and file_sha256(facts) != ds["facts_sha256"]:
        raise UserError(f"{facts} is not the facts table {run.path} evaluated (sha256 differs): "
                        f"it was rebuilt since; rerun the evaluation or restore the dataset")
    schema = read_schema(folder, "facts")
    if column not in schema.names:
        shown = ", ".join(n for n in schema.names if n != "fact_id")
        raise UserError(f"--by {column}: {facts} has no such column; its columns: {shown}")
    typ = schema.field(column).type
    many = pa.types.is_list(typ) or pa.types.is_large_list(typ)
    inner = typ.value_type if many else typ
    if pa.types.is_nested(inner) or not (pa.types.is_string(inner) or pa.types.is_large_string(
            inner) or pa.types.is_integer(inner) or pa.types.is_floating(inner)
            or pa.types.is_boolean(inner)):
        raise UserError(f"--by {column}: the column is {typ}; slice by a column of texts, "
                        f"numbers or truth values (or lists of them)")
    table = read_table(folder, "facts", ["fact_id", column],
                       reference=pa.schema([("fact_id", pa.string()), (column, typ)]))
    numeric = pa.types.is_integer(inner) or pa.types.is_floating(inner)

    def label(v) -> str:
        return bucket(v) if numeric else (NONE if v is None or v == "" else str(v))

    labels = [tuple(dict.fromkeys(label(x) for x in v)) or (NONE,) if many else (label(v),)
              for v in ((x or []) if many else x for x in table.column(column).to_pylist())]
    return pd.Series(labels, index=table.column("fact_id").to_pylist(), dtype=object)


def slice_table(runs, selected: dict[str, list[str]], column: str, options,
                progress: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """One row per run, setting, slice and headline metric (value, interval, n), and notes
    for slices whose metrics cannot be computed (too few facts for the method's checks)."""
    from tqdm import tqdm
    rows, notes = [], []
    for r in tqdm(runs, desc="report: slices", unit="run", disable=not progress, leave=False):
        of_fact = fact_slices(r, column)
        in_slice: dict[str, set] = {}      # label -> its facts
        for fid, labels in of_fact.items():
            for lab in labels:
                in_slice.setdefault(lab, set()).add(fid)
        unknown = set(r.outputs["fact_id"]) - set(of_fact.index)
        if unknown:                        # not in the dataset's facts: its own slice
            in_slice.setdefault(NONE, set()).update(unknown)
        present = set(r.outputs["fact_id"])
        for label in sorted((k for k, v in in_slice.items() if v & present), key=_bucket_key):
            part = r.outputs[r.outputs["fact_id"].isin(in_slice[label])].reset_index(drop=True)
            try:
                metrics = r.spec.checked_compute(part, r.planted, r.config, options=options)
            except UserError as exc:
                notes.append(f"{r.key}: slice {column} = {label}: not computed ({exc})")
                continue
            for setting, block in r.spec.setting_blocks(metrics).items():
                for name in selected[r.method]:
                    h = r.spec.headline(block, name) or {}
                    rows.append({"dataset": r.dataset, "method": r.method, "model": r.label,
                                 "setting": setting, "column": column, "slice": label,
                                 "facts": int(part["fact_id"].nunique()), "metric": name,
                                 "value": h.get("value"), "ci_low": h.get("ci_low"),
                                 "ci_high": h.get("ci_high"), "n": h.get("n")})
    cols = ["dataset", "method", "model", "setting", "column", "slice", "facts", "metric",
            "value", "ci_low", "ci_high", "n"]
    return pd.DataFrame(rows, columns=cols), notes


def slices_markdown(table: pd.DataFrame, column: str, notes: list[str]) -> str:
    """The report's section: per run (and setting) a table, one row per slice, one column per
    headline metric the slices have ("value (low-high)")."""
    out = [f"## By {escape(column)}", "",
           f"Every headline metric on the facts of each value of `{column}` alone "
           f"(numbers bucketed by powers of ten), with its 95% interval "
           f"(`tables/by_{column}.csv` has every number).", ""]

    def cell(row) -> str:
        if row.value is None or pd.isna(row.value):
            return ""
        if row.ci_low is None or pd.isna(row.ci_low):
            return f"{row.value:.3f}"
        return f"{row.value:.3f} ({row.ci_low:.3f}-{row.ci_high:.3f})"

    for (ds, method, model, setting), part in table.groupby(
            ["dataset", "method", "model", "setting"], sort=False):
        metrics = [m for m in dict.fromkeys(part["metric"])
                   if part.loc[part["metric"] == m, "value"].notna().any()]
        if not metrics:
            continue
        title = f"{ds} / {method} / {model}" + (f" / {setting}" if setting else "")
        out += [f"### {escape(title)}", "",
                "| slice | facts | " + " | ".join(escape(m) for m in metrics) + " |",
                "|---|---|" + "---|" * len(metrics)]
        for label, rows in part.groupby("slice", sort=False):
            by_metric = {r.metric: r for r in rows.itertuples()}
            out.append(f"| {escape(str(label))} | {rows['facts'].iat[0]} | "
                       + " | ".join(cell(by_metric[m]) for m in metrics) + " |")
        out.append("")
    out += [f"- {escape(n)}" for n in notes]
    return "\n".join(out).rstrip() + "\n"
