"""What a new user met on a small graph (issue 29), through the real console script: a dry run
says what the run would skip, `export lm-eval` sizes ZP-LKE's examples to a small dataset, and
`factprobe init --help` describes init's own --force."""
from __future__ import annotations

import json
import shutil

from tests.contract.conftest import TEMPLATES
from tests.contract.harness import run


def test_prompt_dry_run_names_the_relations_it_would_skip(workspace):
    only = workspace / "one-template"
    only.mkdir()
    shutil.copy(TEMPLATES / "rel_capital.yaml", only)
    proc = run(["eval", "prompt", "--dataset", "mc", "--model", "model", "--templates",
                str(only), "--out", "r", "--dry-run"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for rel in ("rel:continent", "rel:officialLanguage"):
        assert any(line.startswith(f"skipped relation {rel}: no template") for line in lines), \
            proc.stdout
    assert not any("rel:capital:" in line for line in lines if line.startswith("skipped"))
    assert not (workspace / "r").exists()


def test_export_lm_eval_default_examples_fit_a_small_dataset(workspace):
    # the workspace's MC set has 5 train facts per relation: the paper's 50 cannot be drawn
    proc = run(["export", "lm-eval", "mc", "task"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert "5 in-context examples (--examples not given" in proc.stderr
    rows = [json.loads(line) for line in next((workspace / "task").glob("*.jsonl"))
            .read_text().splitlines()]
    assert rows and {r["n_examples"] for r in rows} == {5}
    # asked for explicitly, too many is still refused, naming the largest that fits
    proc = run(["export", "lm-eval", "mc", "task2", "--examples", "50"], cwd=workspace)
    assert proc.returncode == 2 and "has 5 train facts" in proc.stderr
    assert not (workspace / "task2").exists()


def test_init_help_describes_its_own_force():
    proc = run(["init", "--help"], cwd=TEMPLATES)
    assert proc.returncode == 0
    force = proc.stdout.split("--force", 2)[2].split("\n  --", 1)[0]
    assert "--out" not in force and "init wrote" in " ".join(force.split())


def test_export_lm_eval_names_a_relation_without_train_facts(workspace):
    import pandas as pd
    path = workspace / "mc" / "facts.parquet"
    facts = pd.read_parquet(path)
    facts.loc[(facts["relation_id"] == "rel:continent") & (facts["split"] == "train"),
              "split"] = ""
    facts.to_parquet(path)
    proc = run(["export", "lm-eval", "mc", "task"], cwd=workspace)
    assert proc.returncode == 2, proc.stderr
    assert "rel:continent has no train facts" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (workspace / "task").exists()
    proc = run(["export", "lm-eval", "mc", "task", "--relations",
                "rel:capital,rel:officialLanguage"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
