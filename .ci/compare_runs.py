"""Compare the eval run folders of two result trees: are they the same runs?

A refactor must not change what an evaluation writes. Run the same `factprobe eval` commands
with the old code and the new (same model folders, same thread count: float sums depend on
it), then:

    python .ci/compare_runs.py OLD_RESULTS NEW_RESULTS

outputs.parquet, prompts.parquet and metrics.json must be byte-identical; run.json must be
equal apart from timings and the paths the runs were given. Exit 1 on any difference.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

BYTE_EQUAL = ("outputs.parquet", "prompts.parquet", "metrics.json")
# run.json keys that legitimately differ between two runs of the same evaluation.
VOLATILE = ("timings_s", "backend.model", "dataset.path", "eval.dataset", "eval.out",
            "model.name", "model.path", "created", "versions")


def flat(d: dict, prefix: str = ""):
    for k, v in d.items():
        key = prefix + k
        if isinstance(v, dict):
            yield from flat(v, key + ".")
        else:
            yield key, v


def volatile(key: str) -> bool:
    return any(key == v or key.startswith(v + ".") for v in VOLATILE)


def compare(old: Path, new: Path) -> list[str]:
    problems = []
    runs = sorted(p.parent.relative_to(old) for p in old.rglob("run.json"))
    if not runs:
        return [f"{old} holds no run folder (no run.json)"]
    for rel in runs:
        a, b = old / rel, new / rel
        if not (b / "run.json").is_file():
            problems.append(f"{rel}: missing in {new}")
            continue
        for name in BYTE_EQUAL:
            if (a / name).is_file() and (a / name).read_bytes() != (b / name).read_bytes():
                problems.append(f"{rel}/{name}: bytes differ")
        ra = dict(flat(json.loads((a / "run.json").read_text())))
        rb = dict(flat(json.loads((b / "run.json").read_text())))
        keys = sorted(k for k in set(ra) | set(rb) if not volatile(k) and ra.get(k) != rb.get(k))
        if keys:
            problems.append(f"{rel}/run.json: {', '.join(keys)} differ")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python .ci/compare_runs.py OLD_RESULTS NEW_RESULTS", file=sys.stderr)
        return 2
    old, new = map(Path, argv)
    problems = compare(old, new)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"{sum(1 for _ in old.rglob('run.json'))} runs equal")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
