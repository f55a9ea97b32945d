"""Fail if `dvc repro` rebuilt a dataset with other bytes than the committed dvc.lock records.

Datasets must be byte-identical on every machine. Model training and evaluation produce floats
whose last bits may depend on the CPU, so their outputs are not compared here.
"""
import subprocess
import sys

import yaml


def dataset_outs(lock: dict) -> dict[str, str]:
    out = {}
    for name, stage in lock.get("stages", {}).items():
        for o in stage.get("outs", []):
            if o["path"].startswith("data/datasets/"):
                out[o["path"]] = o.get("md5")
    return out


committed = yaml.safe_load(subprocess.run(["git", "show", "HEAD:dvc.lock"], check=True,
                                          capture_output=True, text=True).stdout)
with open("dvc.lock", encoding="utf-8") as fh:
    rebuilt = yaml.safe_load(fh)
want, got = dataset_outs(committed), dataset_outs(rebuilt)
bad = sorted(p for p in want if want[p] != got.get(p))
if bad:
    print("rebuilt datasets differ from dvc.lock: " + ", ".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"{len(want)} datasets rebuilt byte for byte")
