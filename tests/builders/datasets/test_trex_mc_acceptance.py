"""T-REx-shaped LAMA files -> `build facts --source trex` -> `build mc` with the paper's settings,
through the real command line; kept relations checked against an independent pandas count."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from tests.inprocess import factprobe_cli

ROOT = Path(__file__).resolve().parents[3]


def write_lama(folder: Path, seed: int = 7) -> pd.DataFrame:
    """40 relation files of varied size and object variety, with multi-answer subjects."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    rows = []
    for k in range(40):
        rel = f"P{100 + k}"
        n_facts = int(rng.choice([300, 480, 520, 700, 900]))
        n_objects = int(rng.choice([60, 99, 100, 130, 400]))
        lines = []
        for i in range(n_facts):
            # every fourth subject shares the previous one's id: a second answer
            sid = f"Q{k}_{i - (i % 4 == 3)}"
            obj = int(rng.integers(0, n_objects))
            rec = {"sub_uri": sid, "sub_label": f"Subject {sid}", "obj_uri": f"Q{k}o{obj}",
                   "obj_label": f"Object {k}-{obj}", "predicate_id": rel,
                   "evidences": [{"masked_sentence": f"Subject {sid} is [MASK].",
                                  "obj_surface": f"Object {k}-{obj}"}]}
            lines.append(json.dumps(rec))
            rows.append((rel, sid, rec["obj_label"]))
        (folder / f"{rel}.jsonl").write_text("\n".join(lines) + "\n")
    return pd.DataFrame(rows, columns=["relation", "subject", "object"]).drop_duplicates()


def expected_relations(df: pd.DataFrame, choices=100, min_facts=500, min_objects=100,
                       need=500) -> set[str]:
    keep = set()
    for rel, g in df.groupby("relation"):
        n_obj = g["object"].nunique()
        if len(g) < min_facts or n_obj < max(min_objects, choices):
            continue
        answers = g.groupby("subject")["object"].nunique()
        if ((n_obj - answers) >= choices - 1).sum() >= need:
            keep.add(rel)
    return keep


def cli(*args):
    proc = factprobe_cli([*args, "--quiet"], cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_trex_to_mc_end_to_end(tmp_path):
    truth = write_lama(tmp_path / "TREx")
    cli("build", "facts", "--source", "trex", "--path", str(tmp_path / "TREx"), "--relations",
        "all", "--out", str(tmp_path / "facts"))
    mc_args = ["build", "mc", "--facts", str(tmp_path / "facts"), "--choices", "100",
               "--min-facts", "500", "--min-objects", "100", "--train", "100", "--test", "400"]
    cli(*mc_args, "--out", str(tmp_path / "mc"))
    cli(*mc_args, "--out", str(tmp_path / "mc2"))

    want = expected_relations(truth)
    assert 5 <= len(want) < 40                      # the generator makes both kinds
    table = pq.read_table(tmp_path / "mc" / "facts.parquet").to_pandas()
    assert set(table.relation_id) == want
    manifest = json.loads((tmp_path / "mc" / "dataset.json").read_text())
    assert set(manifest["counts"]["dropped_relations"]) == set(truth.relation) - want

    answers = truth.groupby(["relation", "subject"])["object"].apply(set).to_dict()
    sizes = table.groupby(["relation_id", "split"]).size()
    assert (sizes.xs("train", level="split") == 100).all()
    assert (sizes.xs("test", level="split") == 400).all()
    for row in table.itertuples():
        choices = list(row.choices)
        assert len(choices) == 100 == len(set(choices))
        assert choices.count(row.object) == 1
        others = answers[(row.relation_id, row.subject_id)] - {row.object}
        assert not others & set(choices)
        assert row.evidence_text == f"{row.subject} is {row.object}."  # the gold's own evidence
    for name in ("facts.parquet", "relations.parquet"):
        assert (tmp_path / "mc" / name).read_bytes() == (tmp_path / "mc2" / name).read_bytes()
