"""What every file source does with the rows it reads, whatever their format: keep the relations
asked for (``--relations``), at most ``--limit`` rows of each in file order, fail on a malformed
line or skip and count it (``--skip-bad``), collect other names of entities, and say which asked
relation is not in the file. The readers (csv_triples, trex, trex_hf, and a new source's) parse
their format and hand each row to a :class:`Collector`.
"""
from __future__ import annotations

from typing import Iterable

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.builders.sources.common import (
    SKIP_BAD_HINT,
    TextColumns,
    check_relations,
    natural_key,
    text_frame,
    wanted_relations,
)


class Collector:
    """The rows of one file source, as they are read.

    >>> c = Collector(["P2"], ["relation_id", "subject"], limit=1)
    >>> [c.keeps(r) for r in ("P1", "P2", "P2")]
    [False, True, False]
    >>> c.read(), sorted(c.present)
    (['P2'], ['P1', 'P2'])
    >>> c.bad_line("f.csv:3", "empty object")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: f.csv:3: empty object; fix the line or pass --skip-bad to skip and count bad lines
    """

    def __init__(self, relations: Iterable[str] | None, columns: list[str], *,
                 limit: int | None = None, skip_bad: bool = False):
        if limit is not None and limit < 0:
            raise UserError(f"limit must be 0 or more, got {limit}")
        self.wanted = wanted_relations(relations)        # None: every relation present
        self._want = set(self.wanted) if self.wanted is not None else None
        self.limit, self.skip_bad = limit, skip_bad
        self.cols = TextColumns(columns)                  # the kept rows, column by column
        self.kept: dict[str, int] = {}                    # rows kept per relation
        self.present: set[str] = set()                    # every relation seen, kept or not
        self.bad = 0                                      # malformed lines skipped
        self._alias_ids: list[str] = []
        self._alias_vals: list[str] = []

    def bad_line(self, where: str, problem: str, count: int = 1, hint: str = SKIP_BAD_HINT
                 ) -> None:
        """A malformed line (or ``count`` rows): one line naming it, or, with ``--skip-bad``,
        counted and skipped (the caller goes on to the next)."""
        if not self.skip_bad:
            raise UserError(f"{where}: {problem}; {hint}")
        self.bad += count

    def keeps(self, relation: str) -> bool:
        """Whether a row of ``relation`` is kept: asked for, and under ``limit`` (counted kept
        when so). Every relation seen is ``present``, for the message naming a missing one."""
        self.present.add(relation)
        if self._want is not None and relation not in self._want:
            return False
        n = self.kept.get(relation, 0)
        if self.limit is not None and n >= self.limit:
            return False
        self.kept[relation] = n + 1
        return True

    def select(self, frame: pd.DataFrame) -> pd.DataFrame:
        """:meth:`keeps` for a whole frame (readers that load a table at once): the asked
        relations' rows, the first ``limit`` of each, in order, re-indexed."""
        if self.wanted is not None:
            frame = frame[frame["relation_id"].isin(self.wanted)]
        if self.limit is not None:
            frame = frame[frame.groupby("relation_id", sort=False).cumcount() < self.limit]
        frame = frame.reset_index(drop=True)
        self.kept = {str(r): int(n) for r, n in frame["relation_id"].value_counts().items()}
        return frame

    def alias(self, entity: str, names: Iterable[str]) -> None:
        """Other names of an entity: facts about it, kept whatever the row's relation (assembly
        attaches only those of entities that end up in the facts)."""
        for name in names:
            self._alias_ids.append(entity)
            self._alias_vals.append(name)

    def aliases(self) -> pd.DataFrame:
        return text_frame({"entity_id": self._alias_ids, "alias": self._alias_vals})

    def check(self, where: str) -> None:
        """Refuse an asked relation that is not in the source, naming those that are."""
        check_relations(self.wanted, self.present, where)

    def read(self) -> list[str]:
        """The relations kept, in natural order (P2 before P17)."""
        return sorted(self.kept, key=natural_key)
