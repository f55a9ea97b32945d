"""docs/pipeline.md's DVC stages that build from a Wikidata dump, run as written with `dvc repro`:
the dump is a dependency, its date goes into the dataset's provenance, and a second run does
nothing."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import wikidata_dump_fixture as fx

ROOT = Path(__file__).resolve().parents[3]


def _block(doc: str, first_line: str) -> dict:
    m = re.search(r"```yaml\n" + re.escape(first_line) + r"\n(.*?)```", doc, re.S)
    assert m, f"docs/pipeline.md has no yaml block starting with {first_line!r}"
    return yaml.safe_load(m.group(1))


@pytest.mark.slow
def test_documented_dump_stages_run_with_dvc(tmp_path):
    dvc = shutil.which("dvc") or str(Path(sys.executable).with_name("dvc"))
    if not Path(dvc).exists():
        pytest.skip("dvc is in the pipeline extra")
    doc = (ROOT / "docs" / "pipeline.md").read_text()
    stages, params = _block(doc, "# dvc.yaml"), _block(doc, "# params.yaml")
    params["nobel"] = {"max_year": 2022}            # the project's params.yaml has this section
    repo = tmp_path / "repo"
    dump = repo / params["dump"]["path"]
    dump.parent.mkdir(parents=True)
    dump.write_bytes(fx.json_dump(fx.ENTITIES))     # uncompressed: the name is what matters
    params["dump"]["relations"] = "P19,P36,P37"
    (repo / "dvc.yaml").write_text(yaml.safe_dump(stages))
    (repo / "params.yaml").write_text(yaml.safe_dump(params))
    (repo / "builders").symlink_to(ROOT / "builders")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "FACTPROBE_CACHE_DIR": str(tmp_path / "cache"), "DVC_NO_ANALYTICS": "1"}
    run = lambda *a: subprocess.run([dvc, *a], cwd=repo, env=env, capture_output=True,  # noqa
                                    text=True, timeout=600)
    assert run("init", "--no-scm").returncode == 0
    first = run("repro")
    assert first.returncode == 0, first.stdout + first.stderr
    manifest = json.loads((repo / "data/datasets/wd-facts/dataset.json").read_text())
    assert manifest["source"]["type"] == "wikidata-dump"
    assert manifest["source"]["dump_date"] == "2024-01-01"
    nobel = json.loads((repo / "data/datasets/wd-nobel/dataset.json").read_text())
    assert nobel["counts"]["laureates"] == 3
    again = run("repro")
    assert again.returncode == 0 and "didn't change" in again.stdout + again.stderr
