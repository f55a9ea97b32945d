"""What ``factprobe eval`` prints when a run is done: the method's headline numbers with their
intervals, the main numbers per relation (aligned Markdown tables in the manner of
lm-evaluation-harness's results table), and what the run skipped and why
(:mod:`factprobe.evaluators.metrics.skipped`).

Every method gets it from its metrics suite (``evaluators/metrics/suites/<method>.py``): the
headlines (:attr:`MethodMetrics.headlines`), the main number, and the settings (BELIEF-ICL:
one per in-context setup). Nothing here knows a method by name.
"""
from __future__ import annotations

from factprobe.core.markdown import fmt
from factprobe.evaluators.metrics.skipped import skipped_lines
from factprobe.evaluators.metrics.suite import MethodMetrics

PER_RELATION_COLUMNS = 3         # the main number and the next two with per-relation values


def aligned(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> str:
    """A Markdown table padded to line up in a terminal (columns in ``right`` right-aligned).

    >>> print(aligned(["metric", "value"], [["MC accuracy", "0.5"], ["n", "12"]], {1}), end="")
    | metric      | value |
    |:------------|------:|
    | MC accuracy |   0.5 |
    | n           |    12 |
    """
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    rule = "|" + "|".join((("-" * (w + 1)) + ":") if i in right else (":" + "-" * (w + 1))
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule] + [line(r) for r in rows]) + "\n"


def _interval(h: dict) -> str:
    return fmt(h.get("value"), h.get("ci_low"), h.get("ci_high"))


def _n(v) -> str:
    return "" if v is None else str(v)


def headline_table(spec: MethodMetrics, metrics: dict) -> str:
    """One row per headline number the run has (value [95% interval], n), per setting."""
    contexts = spec.contexts
    rows = []
    for setting, block in spec.setting_blocks(metrics).items():
        for name, (_, label, _) in spec.headlines.items():
            h = spec.headline(block, name)
            if h is None:
                continue
            rows.append(([setting] if contexts else []) + [label, _interval(h), _n(h["n"])])
    if not rows:
        return ""
    header = (["context"] if contexts else []) + ["metric", "value [95% CI]", "n"]
    return aligned(header, rows, {len(header) - 1})


def per_relation_columns(spec: MethodMetrics, blocks: dict[str, dict]) -> list[str]:
    """The main headline, then the next ones with per-relation values, at most
    :data:`PER_RELATION_COLUMNS`."""
    names = [spec.main] + [n for n in spec.headlines if n != spec.main]
    have = [n for n in names if any(spec.per_relation(b, n) for b in blocks.values())]
    return have[:PER_RELATION_COLUMNS]


def relation_table(spec: MethodMetrics, metrics: dict) -> str:
    """Per relation (and setting): the chosen headlines with intervals, and the main one's n."""
    blocks = spec.setting_blocks(metrics)
    names = per_relation_columns(spec, blocks)
    if not names:
        return ""
    contexts = spec.contexts
    rows = []
    for setting, block in blocks.items():
        per = {n: spec.per_relation(block, n) for n in names}
        for rel in sorted(set().union(*per.values())):
            cells = [_interval(per[n].get(rel) or {}) for n in names]
            main = per[names[0]].get(rel) or {}
            rows.append(([setting] if contexts else []) + [rel] + cells + [_n(main.get("n"))])
    header = (["context"] if contexts else []) + ["relation"] + \
        [spec.headlines[n][1] for n in names] + ["n"]
    return aligned(header, rows, {len(header) - 1})


def results_text(spec: MethodMetrics, metrics: dict, run: dict) -> str:
    """The whole summary ``factprobe eval`` prints on stdout."""
    ds = (run.get("dataset") or {}).get("name") or (run.get("dataset") or {}).get("path", "")
    model = (run.get("model") or {}).get("name") or (run.get("backend") or {}).get("model", "")
    parts = [f"{spec.name} on {ds}, model {model}\n"]
    for table in (headline_table(spec, metrics), relation_table(spec, metrics)):
        if table:
            parts.append(table)
    skipped = skipped_lines(metrics, run)
    if skipped:
        parts.append("".join(f"- {line}\n" for line in skipped))
    return "\n".join(parts)


def print_results(spec: MethodMetrics, run_folder) -> None:
    """Print the summary of the run folder ``factprobe eval`` just wrote."""
    import json
    from pathlib import Path
    folder = Path(run_folder)
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    print(results_text(spec, metrics, run), end="", flush=True)
