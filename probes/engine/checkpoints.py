"""The checkpoints of one eval run: the folder ``.OUT.partial`` beside its output.

- ``<stage>-<i>-<key>.parquet``: the output rows of one finished chunk of requests, written
  in one rename, with the tokens and seconds it took in the file's metadata;
- ``identity.json``: the model the chunks were computed with
  (:func:`factprobe.probes.backends.identity.model_identity`);
- ``sessions.json``: the wall time of each session of the run (a killed session counts up
  to its last checkpoint).

A resumed run is the run it claims to be: chunks are reused only when the model identity is
the stored one, so the result is exactly that of an uninterrupted run. Another model (a
re-planted or replaced folder, another dtype, device, batch size or library version)
discards the checkpoints and starts over, and :meth:`Checkpoints.open` says why. Tokens and
time in ``run.json`` are summed over every session from what each chunk recorded.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from factprobe.core import atomic
from factprobe.core import jsonsafe
from factprobe.core.tables import dumps_json
from factprobe.probes.backends.identity import describe_change, identity_digest

IDENTITY = "identity.json"
SESSIONS = "sessions.json"
META_KEY = b"factprobe.chunk"
# Everything a run ever writes in its checkpoint folder; nothing else there is touched.
OWN = re.compile(r"^([a-z_]+-\d{5}-[0-9a-f]{16}\.(parquet|tmp)|(identity|sessions)\.json"
                 r"(\.tmp)?)$")


@dataclass(frozen=True)
class ChunkStats:
    """What computing one chunk cost, in whichever session computed it."""
    tokens_computed: int = 0
    tokens_full: int = 0
    seconds: float = 0.0


def _write_json(path: Path, obj) -> None:
    atomic.write_text(path, dumps_json(obj), tmp=path.with_name(path.name + ".tmp"))


def _read_json(path: Path):
    try:
        return jsonsafe.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class Checkpoints:
    def __init__(self, folder: Path, identity: dict, started: float | None = None):
        self.folder = folder
        self.identity = identity
        self.digest = identity_digest(identity)
        self.started = time.perf_counter() if started is None else started
        self.created = False                    # by this session: removed if it fails
        self.sessions: list[float] = []
        self.used: dict[str, list[ChunkStats]] = {}   # stage -> stats of the chunks used
        self.reused = 0
        self.computed = 0
        self._logged = float("-inf")

    # ----------------------------------------------------------------------------- folder
    def _own_files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return [p for p in self.folder.iterdir() if OWN.match(p.name)]

    def open(self) -> str | None:
        """Create the folder or adopt the one a previous session left; returns why the old
        checkpoints were discarded, when they were."""
        why = None
        if self.folder.is_dir():
            old = _read_json(self.folder / IDENTITY)
            if old == self.identity:
                log = _read_json(self.folder / SESSIONS)
                if isinstance(log, dict) and isinstance(log.get("seconds"), list):
                    self.sessions = [float(s) for s in log["seconds"]]
            elif self._own_files():
                why = (f"the checkpoints in {self.folder} were made with another model or "
                       f"settings ({describe_change(old, self.identity)})"
                       if isinstance(old, dict) else
                       f"the checkpoints in {self.folder} do not say which model made them")
                self.discard()
        else:
            self.folder.mkdir(parents=True)
            self.created = True
        _write_json(self.folder / IDENTITY, self.identity)
        self.sessions.append(0.0)
        self._log_session()
        return why

    def _log_session(self, every: float = 0.0) -> None:
        """Record this session's time so far (at most once per ``every`` seconds: a killed
        session loses that much of its count, and small chunks are not slowed down)."""
        now = time.perf_counter()
        if now - self._logged < every:
            return
        self._logged = now
        self.sessions[-1] = round(now - self.started, 3)
        _write_json(self.folder / SESSIONS, {"seconds": self.sessions})

    def discard(self) -> None:
        """Delete every checkpoint file (and nothing a run did not write)."""
        for p in self._own_files():
            p.unlink(missing_ok=True)

    def remove(self) -> None:
        """The run is written: the checkpoints go, and the folder with them if it is empty."""
        self.discard()
        try:
            self.folder.rmdir()
        except OSError:
            pass

    def abandon(self) -> None:
        """A failed session leaves no folder it created (a resumed run's stays)."""
        if self.created:
            self.remove()

    # ----------------------------------------------------------------------------- chunks
    def begin_stage(self, stage: str) -> None:
        self.used.setdefault(stage, [])

    def path(self, stage: str, index: int, chunk: list) -> Path:
        h = hashlib.sha1(self.digest.encode())
        h.update(stage.encode())
        for r in chunk:
            h.update(repr(r).encode("utf-8"))
        return self.folder / f"{stage}-{index:05d}-{h.hexdigest()[:16]}.parquet"

    def _read(self, stage: str, path: Path) -> pd.DataFrame | None:
        try:
            table = pq.read_table(path)
            stats = ChunkStats(**jsonsafe.loads((table.schema.metadata or {})[META_KEY]))
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
            return None
        self.used.setdefault(stage, []).append(stats)
        return table.to_pandas()

    def load(self, stage: str, path: Path) -> pd.DataFrame | None:
        """A finished chunk's rows, or None when it is not there (or unreadable: it is then
        computed again)."""
        if not path.is_file():
            return None
        frame = self._read(stage, path)
        if frame is None:
            path.unlink(missing_ok=True)
        else:
            self.reused += 1
        return frame

    def save(self, stage: str, path: Path, rows: list[dict], stats: ChunkStats
             ) -> pd.DataFrame:
        """Write a finished chunk in one rename; returns its rows as read back, so that a
        resumed run and an uninterrupted one see the very same frames."""
        table = pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               META_KEY: json.dumps(asdict(stats))})
        # the ``.tmp`` name is one the checkpoint folder knows as an unfinished chunk
        with atomic.replacing(path, tmp=path.with_suffix(".tmp")) as tmp:
            pq.write_table(table, tmp)
        self._log_session(every=2.0)
        self.computed += 1
        frame = self._read(stage, path)
        if frame is None:
            raise OSError(f"{path}: the checkpoint just written cannot be read back")
        return frame

    # ----------------------------------------------------------------------------- totals
    def tokens(self) -> dict:
        stats = [s for ss in self.used.values() for s in ss]
        return {"computed": sum(s.tokens_computed for s in stats),
                "full_sequence": sum(s.tokens_full for s in stats)}

    def timings(self) -> dict:
        """Seconds the model worked on each stage, over every session; ``total``: the wall
        time of every session (model loading included)."""
        self._log_session()
        out = {stage: round(sum(s.seconds for s in ss), 3) for stage, ss in self.used.items()}
        return out | {"total": round(sum(self.sessions), 3)}

    def session_info(self) -> dict:
        return {"count": len(self.sessions), "chunks_computed": self.computed,
                "chunks_resumed": self.reused}
