"""Helpers every file-reading source shares: relation selection, errors, text frames."""
from __future__ import annotations

import re
from typing import Iterable

import pandas as pd

from ..errors import UserError

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


def bad_line(where: str, reason: str) -> UserError:
    return UserError(f"{where}: {reason}; {SKIP_BAD_HINT}")
