"""What a parsed command writes and reads, for ``--out`` ownership (:mod:`factprobe.core.outdir`).

The output folder is checked once here, before any work, so a bad ``--out`` costs nothing
and no command forgets the check; the writers check it again just before their swap. The
command's inputs are recorded so that no ``--out`` (even with ``--force``) replaces one.
"""
from __future__ import annotations

import contextlib
import os
from argparse import Namespace
from pathlib import Path
from typing import Iterator

from factprobe.core.errors import UserError
from factprobe.core.outdir import no_space, out_policy, prepare

# Flags that name something a command reads.
INPUT_FLAGS = ("facts", "dataset", "path", "templates", "templates_dir", "types", "import_dir",
               "model", "results", "review_in", "planted", "cache_dir", "shards", "old", "new")
# build WHAT -> the dataset kind it writes; ``aliases`` keeps its input's kind (checked when
# it writes).
DATASET_KIND = {"facts": "facts", "mc": "mc", "nobel": "nobel", "templates": "templates",
                "misprimes": "misprimes", "multiprompt": "multiprompt", "fktc": "fktc",
                "refresh": "facts"}


def target(args: Namespace) -> tuple[str, str, str | None, str] | None:
    """(path, output kind, dataset kind, flag) of the folder the command writes; None when it
    writes none (publish without --dry-run)."""
    command = getattr(args, "command", None)
    if command == "build":
        return args.out, "dataset", DATASET_KIND.get(args.what), "--out"
    if command in ("eval", "plant", "report", "merge"):
        kind = {"eval": "run", "plant": "model", "report": "report", "merge": "run"}[command]
        return args.out, kind, None, "--out"
    if command == "diff" and args.out:
        return args.out, "dataset", "diff", "--out"
    if command == "export":
        return args.out, "export", None, "OUT"
    if command == "publish" and args.dry_run is not None:
        return args.dry_run, "publish", None, "--dry-run"
    return None


def inputs(args: Namespace) -> list[str]:
    out = []
    for flag in INPUT_FLAGS:
        value = getattr(args, flag, None)
        out.extend(value if isinstance(value, (list, tuple)) else [value] if value else [])
    return [str(v) for v in out if str(v).strip()]


def no_space_line(args: Namespace, exc: OSError) -> str | None:
    """The error line for a full disk: it names the file being written when the system says
    which, else the command's output folder (a library writing there, pyarrow for one, names
    no file), never a library's own wording."""
    if not no_space(exc):
        return None
    spec = target(args)
    where = (f"{exc.filename}" if exc.filename else
             f"{spec[3]} {spec[0]}" if spec else "the output")
    return (f"no space left on the device that holds {where}; free some space there, or write "
            f"elsewhere")


@contextlib.contextmanager
def guarded_outputs(args: Namespace) -> Iterator[None]:
    with out_policy(force=getattr(args, "force", False), inputs=inputs(args)):
        spec = target(args)
        if spec is not None:
            out, kind, subkind, flag = spec
            path = prepare(out, kind, subkind, flag=flag)
            if kind == "run":
                partial = path.with_name(f".{path.name}.partial")
                if os.path.lexists(partial) and (partial.is_symlink() or not partial.is_dir()):
                    raise UserError(f"--out {out}: {Path(partial)} (its resume checkpoint) is "
                                    f"not a folder; move it away")
        yield
