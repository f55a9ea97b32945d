"""The shape of the JSON files of a run folder that ``factprobe report`` reads.

``json.loads`` accepts any JSON; a ``run.json`` or ``planted.json`` that is valid JSON but
not what factprobe writes (a list, an edited field) must end as one line, not as an
AttributeError deep inside the report.
"""
from __future__ import annotations

from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.probes.planting.plant import check_planted  # noqa: F401 (the report reads planted.json too)


def check_run_json(path: Path, run) -> dict:
    """run.json must have the shape 'factprobe eval' writes (objects where it writes them)."""
    if not isinstance(run, dict):
        raise UserError(f"{path}/run.json holds a JSON {type(run).__name__}, not the object "
                        f"'factprobe eval' writes; rerun the evaluation")
    for key in ("method_config", "dataset", "backend", "model"):
        if run.get(key) is not None and not isinstance(run[key], dict):
            raise UserError(f"{path}/run.json: '{key}' is not an object; the file was not "
                            f"written by 'factprobe eval' (or was edited); rerun it")
    return run
