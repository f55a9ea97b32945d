"""docs/walkthrough.md, end to end: RDF file -> facts -> mc -> eval zp-lke (a small random
model with a locally trained tokenizer stands in for a Hub model)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.inprocess import factprobe_cli

ROOT = Path(__file__).resolve().parents[1]


def graph(path: Path) -> None:
    lines = ["@prefix ex: <http://example.org/> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> ."]
    for i in range(80):
        lines.append(f'ex:c{i} rdfs:label "Country {i}"@en ; ex:capital ex:t{i} ; '
                     f'ex:currency ex:m{i % 30} .')
        lines.append(f'ex:t{i} rdfs:label "Town {i}"@en .')
    for j in range(30):
        lines.append(f'ex:m{j} rdfs:label "Coin {j}"@en .')
    path.write_text("\n".join(lines) + "\n")


def cli(*args: str) -> None:
    proc = factprobe_cli([*args, "--quiet"], cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_walkthrough(tmp_path, tiny_causal_dir):  # noqa: D103
    graph(tmp_path / "g.ttl")
    cli("build", "facts", "--source", "rdf", "--path", str(tmp_path / "g.ttl"), "--relations",
        "ex:capital,ex:currency", "--out", str(tmp_path / "facts"))
    cli("build", "mc", "--facts", str(tmp_path / "facts"), "--out", str(tmp_path / "mc"),
        "--choices", "10", "--min-facts", "50", "--min-objects", "20", "--train", "20",
        "--test", "30")
    cli("eval", "zp-lke", "--dataset", str(tmp_path / "mc"), "--model", str(tiny_causal_dir),
        "--out", str(tmp_path / "run"), "--examples", "10", "--limit", "5")
    run = tmp_path / "run"
    outputs = pq.read_table(run / "outputs.parquet").to_pandas()
    mc = outputs[outputs.stage == "mc"]
    assert len(mc) == 2 * 5 * 10                  # relations x facts x choices
    assert (mc.groupby("fact_id").is_gold.sum() == 1).all()
    prompts = pq.read_table(run / "prompts.parquet").to_pandas()
    assert set(mc.prompt_id) <= set(prompts.prompt_id)
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics["mc_accuracy"]["per_relation"]) == {"ex:capital", "ex:currency"}
    info = json.loads((run / "run.json").read_text())
    assert info["tokens"]["computed"] < info["tokens"]["full_sequence"]
