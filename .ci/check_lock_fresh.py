"""Fail, before `dvc repro`, if the committed dvc.lock is stale: a stage's code, input file,
params or command differs from what the lock recorded (a fresh clone's `dvc repro` would then
rewrite the lock, and the committed numbers were not made by the committed code).

Outputs are missing on a fresh clone and the dependencies that are other stages' outputs with
them: those are expected and not counted. Run from the repository root:

    python .ci/check_lock_fresh.py        # exit 1 and one line per stale entry
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml


def pipeline_outputs(lock: dict) -> set[str]:
    return {o["path"].rstrip("/") for stage in (lock.get("stages") or {}).values()
            for o in stage.get("outs", [])}


def produced(path: str, outs: set[str]) -> bool:
    """An output, inside one, or a folder of outputs (the report reads data/results)."""
    path = path.rstrip("/")
    return any(path == o or path.startswith(o + "/") or o.startswith(path + "/") for o in outs)


def stale_entries(status: dict, lock: dict) -> list[str]:
    """What in ``dvc status --json`` says the lock is stale, one line each.

    >>> lock = {"stages": {"a": {"outs": [{"path": "data/a"}]}}}
    >>> stale_entries({"a": [{"changed outs": {"data/a": "not in cache"}}],
    ...                "b": [{"changed deps": {"data/a": "deleted", "code.py": "modified",
    ...                                        "params.yaml": {"b.n": "modified"}}},
    ...                      "changed command"]}, lock)
    ['b: code.py modified', 'b: params.yaml b.n modified', 'b: changed command']
    """
    outs = pipeline_outputs(lock)
    found = []
    for stage, changes in sorted(status.items()):
        for change in changes:
            if isinstance(change, str):
                if change != "always changed":
                    found.append(f"{stage}: {change}")
                continue
            for path, what in (change.get("changed deps") or {}).items():
                if isinstance(what, dict):      # params: key -> modified / new / deleted
                    found += [f"{stage}: {path} {k} {v}" for k, v in sorted(what.items())]
                elif not produced(path, outs):
                    found.append(f"{stage}: {path} {what}")
    return found


def main() -> int:
    dvc = shutil.which("dvc") or str(Path(sys.executable).with_name("dvc"))
    proc = subprocess.run([dvc, "status", "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"dvc status failed: {proc.stderr.strip()}", file=sys.stderr)
        return 1
    status = json.loads(proc.stdout or "{}")
    with open("dvc.lock", encoding="utf-8") as fh:
        lock = yaml.safe_load(fh) or {}
    stale = stale_entries(status, lock)
    if stale:
        print("dvc.lock is stale (run `dvc repro` and commit dvc.lock):\n  "
              + "\n  ".join(stale), file=sys.stderr)
        return 1
    print("dvc.lock matches the code, inputs and params")
    return 0


if __name__ == "__main__":
    sys.exit(main())
