"""What to take from a dump: a small, picklable description every reader process gets."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

from factprobe.core.errors import UserError

_PID = re.compile(r"^P[1-9][0-9]*$")
# Bumped whenever what a shard holds changes, so that shards of an older factprobe are never
# mixed with new ones on resume.
SHARD_FORMAT = 1


@dataclass(frozen=True)
class ExtractSpec:
    """``relations``: property ids whose truthy statements are wanted (``None``: all of them).
    ``qualified``: (property, qualifier properties) pairs whose statements of every rank are
    wanted with those qualifiers' values (the Nobel build's award statements and their dates).
    """
    syntax: str                                   # "json" or "nt"
    lang: str
    relations: tuple[str, ...] | None
    qualified: tuple[tuple[str, tuple[str, ...]], ...] = ()
    skip_bad: bool = False

    def key(self) -> str:
        """Hash of everything that decides what the shards hold."""
        payload = json.dumps({"format": SHARD_FORMAT, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:20]


def property_ids(names, what: str = "--relations") -> tuple[str, ...]:
    """Wikidata property ids in order, each once; anything else is a user error.

    >>> property_ids(["P36", " P19", "P36"])
    ('P36', 'P19')
    """
    out: list[str] = []
    for name in names:
        pid = str(name).strip()
        if pid.startswith(("wdt:", "p:")) and _PID.match(pid.split(":", 1)[1]):
            pid = pid.split(":", 1)[1]
        if not _PID.match(pid):
            raise UserError(f"{what}: {pid!r} is not a Wikidata property id; the wikidata-dump "
                            f"source takes ids like P36 (or 'all')")
        if pid not in out:
            out.append(pid)
    return tuple(out)
