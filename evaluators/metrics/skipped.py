"""What a run left out, and why, one line each: what ``factprobe eval`` prints below its
results table (:mod:`factprobe.cli.results_table`) and ``factprobe report`` lists under
Notes. Read from ``metrics.json``'s ``notes`` (BELIEF's multi-token pairs, MONITOR's unmatched
anchors) and ``run.json``'s ``plan`` (relations with nothing to ask, ``--too-long``)."""
from __future__ import annotations


def _dict(v) -> dict:
    """run.json is read as written; a field edited into something else counts as empty."""
    return v if isinstance(v, dict) else {}


def too_long_lines(plan: dict, policy: str) -> list[str]:
    """What ``--too-long`` did, from run.json's ``plan.too_long`` counts.

    >>> too_long_lines({"too_long": {"skipped_too_long": 3, "skipped_per_relation":
    ...     {"P36": 2, "P37": 1}}}, "skip")
    ["skipped 3 prompts longer than the model's context (--too-long skip): P36 2, P37 1"]
    >>> too_long_lines({"too_long": {"truncated_examples": 4}}, "truncate")
    ["dropped 4 in-context examples to fit prompts into the model's context (--too-long truncate)"]
    """
    counts = _dict(plan.get("too_long"))
    out = []
    if counts.get("skipped_too_long"):
        per = _dict(counts.get("skipped_per_relation"))
        where = (": " + ", ".join(f"{r} {n}" for r, n in sorted(per.items()))) if per else ""
        out.append(f"skipped {counts['skipped_too_long']} prompts longer than the model's "
                   f"context (--too-long {policy}){where}")
    if counts.get("truncated_examples"):
        out.append(f"dropped {counts['truncated_examples']} in-context examples to fit prompts "
                   f"into the model's context (--too-long {policy})")
    return out


def skipped_lines(metrics: dict, run: dict) -> list[str]:
    """What the run left out and why, one line each: relations the probe had nothing to ask
    about, prompts dropped by ``--too-long``, and the metrics' notes (BELIEF's multi-token
    pairs, MONITOR's unmatched anchors).

    >>> skipped_lines({"notes": ["skipped 1 of 3 pairs (multi-token objects): P36 1 of 3"]},
    ...               {"plan": {"skipped_relations": {"P99": "no test facts"}}})
    ['skipped relation P99: no test facts', 'skipped 1 of 3 pairs (multi-token objects): P36 1 of 3']
    """
    plan = _dict(run.get("plan"))
    out = [f"skipped relation {rel}: {why}"
           for rel, why in sorted(_dict(plan.get("skipped_relations")).items())]
    out += too_long_lines(plan, _dict(run.get("eval")).get("too_long", "skip"))
    out += list(metrics.get("notes") or [])
    return out
