"""The planted model's training text: every probe's frame, and never a held-out fact."""
from __future__ import annotations

import pandas as pd

from factprobe.probes.methods.belief_icl import INSTRUCTION
from factprobe.probes.planting.plant import PlantConfig, split_planted, training_documents

CAPITALS = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Peru", "Lima"),
            ("Chile", "Santiago"), ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Kenya", "Nairobi")]


def facts() -> pd.DataFrame:
    return pd.DataFrame([{"fact_id": f"f{i}", "relation_id": "capital", "subject": s,
                          "object": o, "split": "train" if i < 4 else "test"}
                         for i, (s, o) in enumerate(CAPITALS)])


FORMS = {"capital": (["The capital of [X] is [Y].", "[Y] is the capital of [X]."],
                     ["What is the capital of [X]?"])}


def test_every_probe_frame_is_taught():
    cfg = PlantConfig(dataset="", out="", lists_per_relation=1, list_size=3)
    known = facts().iloc[:4]
    docs = [d for epoch in range(4) for d in training_documents(known, FORMS, cfg, epoch)]
    x, y = "France", "Paris"
    q = "What is the capital of France?"
    assert f"The capital of {x} is {y}." in docs and f"{y} is the capital of {x}." in docs
    assert f"{q} {y}." in docs                                             # MONITOR paraphrase
    prefixed = [d for d in docs if d.endswith(f". {q} {y}.")]
    assert len(prefixed) == 1                                              # MONITOR +/- prefix
    assert f"{INSTRUCTION['qa']}\nQ: {q}\nA: {y}." in docs                 # BELIEF-ICL qa
    assert any(d.startswith(INSTRUCTION["mask"]) and d.endswith(f"\nA: {y}.") and "[MASK]" in d
               and x in d for d in docs)                                   # BELIEF-ICL mask
    lists = [d for d in docs if d.count(",") >= 2 and "?" not in d]
    assert lists and all(len(d.split(", ")) == 4 for d in lists)          # ZP-LKE lists


def test_held_out_facts_are_never_shown():
    table = facts()
    planted, held = split_planted(table, seed=0)
    assert len(held) == 2 and not planted & held
    known = table[table["fact_id"].isin(planted)]
    cfg = PlantConfig(dataset="", out="", lists_per_relation=3, list_size=50)
    text = "\n".join(d for epoch in range(8) for d in training_documents(known, FORMS, cfg, epoch))
    for row in table.itertuples():
        assert (row.subject in text) == (row.fact_id in planted), row.subject
