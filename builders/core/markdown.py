"""Markdown every layer writes: GitHub tables and file-name slugs (one copy of each)."""
from __future__ import annotations

import math
import re


def table(frame) -> str:
    """A GitHub table of a DataFrame (no tabulate dependency); ``|`` in cells is escaped.

    >>> import pandas as pd
    >>> print(table(pd.DataFrame({"model": ["a|b"], "acc": [0.5]})), end="")
    | model | acc |
    |---|---|
    | a\\|b | 0.5 |
    >>> table(pd.DataFrame())
    '_(none)_\\n'
    """
    if frame.empty:
        return "_(none)_\n"
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in row) + " |")
    return "\n".join(lines) + "\n"


def slug(text) -> str:
    """A file-name-safe form of ``text``: runs of other characters become one ``_``.

    >>> slug("sample-mc/zp lke: v1.0"), slug("///")
    ('sample-mc_zp_lke_v1.0', 'x')
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "x"


def missing(v) -> bool:
    """None or NaN: a number a table shows as a dash."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt(v, lo=None, hi=None, digits: int = 3) -> str:
    """A number with its interval, as every table of factprobe shows it.

    >>> fmt(0.73456, 0.7, 0.76), fmt(None), fmt(0.5, float("nan"), float("nan"))
    ('0.735 [0.700, 0.760]', '–', '0.500')
    """
    if missing(v):
        return "–"
    s = f"{v:.{digits}f}"
    if not missing(lo) and not missing(hi):
        s += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return s
