"""The repository's sample datasets, built for a test session from the repository's own inputs
(data/kg, data/templates, params.yaml) by the very commands of dvc.yaml: tests that read
``data/datasets/sample-*`` work on a fresh checkout, without ``dvc repro`` having run.

The copy is a small repository of its own (dvc.yaml, dvc.lock, params.yaml and the inputs, the
datasets under data/datasets/), so that what looks for the nearest dvc.lock (dataset cards)
finds the lock's entry for the folder as it would in the checkout.
"""
from __future__ import annotations

import contextlib
import re
import shlex
import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _param(params: dict, dotted: str):
    value = params
    for key in dotted.split("."):
        value = value[key]
    return value


def stage_argv(stage: str) -> list[str]:
    """The command line dvc.yaml's ``stage`` runs, with params.yaml's values put in."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    cmd = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"][stage]["cmd"]
    argv = shlex.split(re.sub(r"\$\{([\w.-]+)\}", lambda m: str(_param(params, m.group(1))), cmd))
    assert argv[0] == "factprobe", cmd
    return argv[1:]


def build_sample_repo(root: Path, stages: tuple[str, ...]) -> Path:
    """``root`` holding the repository's pipeline files and inputs, and the outputs of
    ``stages`` (in the order given: each one's inputs first) built in-process."""
    from factprobe.cli.app import main
    for name in ("dvc.yaml", "dvc.lock", "params.yaml"):
        shutil.copy2(ROOT / name, root / name)
    (root / "data").mkdir(exist_ok=True)
    for inputs in ("kg", "templates"):
        shutil.copytree(ROOT / "data" / inputs, root / "data" / inputs, dirs_exist_ok=True)
    for stage in stages:
        argv = stage_argv(stage)
        with contextlib.chdir(root):
            assert main(argv) == 0, f"dvc.yaml's stage {stage}: factprobe {' '.join(argv)}"
    return root
