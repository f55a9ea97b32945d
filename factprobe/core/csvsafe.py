"""Spreadsheet-safe CSV cells: text that came from data (a relation id, a label, an LLM's
paraphrase) and begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula
to Excel, LibreOffice and Google Sheets, which may run it or fetch a URL when the file is
opened. Such a cell is written with a leading ``'`` (OWASP's CSV-injection rule), which a
spreadsheet shows as text; factprobe strips that ``'`` when it reads its own CSVs back (the
review file). Numbers are numbers, never changed; nor is text that is a plain number (``-0.5``).
"""
from __future__ import annotations

import re

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _formula(text: str) -> bool:
    """Whether ``text`` (after any ``'`` already in front) would be read as a formula."""
    rest = text.lstrip("'")
    return rest[:1] in TRIGGERS and not _NUMBER.fullmatch(rest)


def safe_cell(value):
    """``value`` as a spreadsheet reads it as text; anything but ``str`` unchanged.

    A cell already starting with ``'`` before a trigger gets one more, so that
    :func:`read_cell` gives back exactly what was written.

    >>> [safe_cell(v) for v in ("=HYPERLINK(\\"http://x\\")", "@SUM(A1)", "-1+2", "-0.5", "ok", 3)]
    ['\\'=HYPERLINK("http://x")', "'@SUM(A1)", "'-1+2", '-0.5', 'ok', 3]
    >>> safe_cell("'=x"), read_cell(safe_cell("'=x")), read_cell(safe_cell("=x"))
    ("''=x", "'=x", '=x')
    """
    if isinstance(value, str) and _formula(value):
        return "'" + value
    return value


def read_cell(text: str) -> str:
    """A cell as factprobe wrote it before :func:`safe_cell` (the inverse)."""
    if text.startswith("'") and _formula(text):
        return text[1:]
    return text


def safe_frame(frame):
    """A copy of a pandas DataFrame with every text cell, column name and index label made
    spreadsheet-safe (the caller then writes it with ``to_csv``).

    >>> import pandas as pd
    >>> f = safe_frame(pd.DataFrame({"=rel": ["+x", "y"], "v": [-1.0, 2.0]}, index=["@i", "j"]))
    >>> list(f.columns), list(f.index), f["'=rel"].tolist(), f["v"].tolist()
    (["'=rel", 'v'], ["'@i", 'j'], ["'+x", 'y'], [-1.0, 2.0])
    """
    from pandas.api.types import is_bool_dtype, is_datetime64_any_dtype, is_numeric_dtype

    def textual(dtype) -> bool:
        return not (is_numeric_dtype(dtype) or is_bool_dtype(dtype)
                    or is_datetime64_any_dtype(dtype))

    out = frame.copy()
    for col in out.columns:
        if textual(out[col].dtype):
            out[col] = out[col].map(safe_cell)
    out.columns = [safe_cell(c) for c in out.columns]
    if out.index.nlevels == 1 and textual(out.index.dtype):
        name = out.index.name
        out.index = out.index.map(safe_cell)
        out.index.name = safe_cell(name)
    return out
