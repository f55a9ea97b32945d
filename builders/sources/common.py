"""Helpers every file-reading source shares: relation selection, errors, text frames."""
from __future__ import annotations

import re
from typing import Iterable

import pandas as pd
import pyarrow as pa

from factprobe.core.errors import UserError

SKIP_BAD_HINT = "fix the line or pass --skip-bad to skip and count bad lines"
MAX_LISTED_RELATIONS = 30


def natural_key(text: str) -> list:
    """Sort key that puts P17 before P101.

    >>> sorted(["P101", "P17", "P2"], key=natural_key)
    ['P2', 'P17', 'P101']
    """
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", text)]


def wanted_relations(relations: Iterable[str] | None) -> list[str] | None:
    """Requested relations, stripped and de-duplicated in order; ``None`` (or empty) means all."""
    if not relations:
        return None
    out: list[str] = []
    for rel in relations:
        rel = str(rel).strip()
        if rel and rel not in out:
            out.append(rel)
    return out or None


def check_relations(wanted: list[str] | None, present: Iterable[str], where: str) -> None:
    """Raise :class:`UserError` when a requested relation is not in the source."""
    if wanted is None:
        return
    present = set(present)
    missing = [r for r in wanted if r not in present]
    if not missing:
        return
    listed = sorted(present, key=natural_key)
    shown = ", ".join(listed[:MAX_LISTED_RELATIONS]) or "none"
    if len(listed) > MAX_LISTED_RELATIONS:
        shown += f", ... ({len(listed) - MAX_LISTED_RELATIONS} more)"
    what = "relation" if len(missing) == 1 else "relations"
    raise UserError(f"{what} {', '.join(missing)} not found in {where}; relations present: {shown}")


def text_frame(columns: dict[str, list]) -> pd.DataFrame:
    """A DataFrame of string columns from lists; an empty list stays a text column.

    (``pd.DataFrame({"a": []})`` would make it float64, which the ``.str`` accessors used in
    assembly reject.)
    """
    return pd.DataFrame({name: pd.Series(values, dtype=None if values else object)
                         for name, values in columns.items()})


class TextColumns(dict):
    """Named string columns filled row by row (``cols[name].append(value)``, then
    :meth:`row_done`), moved into Arrow every ``chunk`` rows.

    Why not plain lists: a Python ``str`` costs about 50 bytes beside its text, and a source of
    10 million rows held every one at once next to the frame built from them, which made
    reading the peak of ``build facts`` (8.6 GB for 10 million T-REx rows with evidence). Arrow
    keeps each chunk's text in one buffer, and the frame is built from those buffers.

    >>> cols = TextColumns(["a", "b"], chunk=2)
    >>> for a, b in [("x", None), ("y", "1"), ("z", "2")]:
    ...     cols["a"].append(a); cols["b"].append(b); cols.row_done()
    >>> frame = cols.frame()
    >>> frame["a"].tolist(), frame["b"].isna().tolist(), str(frame["a"].dtype)
    (['x', 'y', 'z'], [True, False, False], 'str')
    """

    def __init__(self, names: list[str], chunk: int = 1 << 16):
        super().__init__((name, []) for name in names)
        self._chunks: dict[str, list[pa.Array]] = {name: [] for name in names}
        self._chunk = chunk
        self._first = self[names[0]]

    def row_done(self) -> None:
        if len(self._first) >= self._chunk:
            self._spill()

    def _spill(self) -> None:
        lengths = {len(values) for values in self.values()}
        if len(lengths) != 1:
            raise ValueError(f"columns of unequal length: {sorted(lengths)}")
        for name, values in self.items():
            if values:
                self._chunks[name].append(pa.array(values, type=pa.large_string()))
                values.clear()   # the same list object: callers may hold it

    def frame(self, names: list[str] | None = None) -> pd.DataFrame:
        """The columns (all, or ``names``) as a frame of pandas' default string dtype."""
        self._spill()
        names = list(self) if names is None else names
        if not any(self._chunks[name] for name in names):
            return text_frame({name: [] for name in names})
        dtype = pd.Series([""]).dtype   # what pandas makes of a list of str: same frames as before
        return pd.DataFrame({name: pd.Series(pa.chunked_array(self._chunks[name],
                                                              type=pa.large_string()),
                                             dtype=dtype)
                             for name in names})


def bad_line(where: str, reason: str) -> UserError:
    return UserError(f"{where}: {reason}; {SKIP_BAD_HINT}")
