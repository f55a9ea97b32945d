"""Held-out subjects are taught in the same contexts as planted ones, as often, without their
object: nothing read from the subject alone tells the halves apart (issue #28)."""
from __future__ import annotations

import re
from statistics import mean

import pandas as pd
import pytest

from factprobe.probes.planting.curriculum import MENTION, build, documents, mention_forms
from factprobe.probes.planting.masked import _statements
from factprobe.probes.planting.plant import split_planted

PAIRS = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Peru", "Lima"),
         ("Chile", "Santiago"), ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"),
         ("Ghana", "Accra"), ("Nepal", "Kathmandu"), ("Chad", "Ndjamena"), ("Fiji", "Suva"),
         ("Mali", "Bamako"), ("Oman", "Muscat"), ("Laos", "Vientiane"), ("Cuba", "Havana")]
FORMS = {"capital": (["The capital of [X] is [Y].", "[X] has its capital at [Y]."],
                     ["What is the capital of [X]?", "Which city is the seat of [X]?",
                      "Where does [X] govern from?"])}


def world(mode: str = "relation"):
    # 4 train facts, 12 test facts: 6 planted, 6 held out
    facts = pd.DataFrame([{"fact_id": f"f{i:02d}", "relation_id": "capital", "subject": s,
                           "object": o, "split": "train" if i < 4 else "test"}
                          for i, (s, o) in enumerate(PAIRS)])
    planted, held = split_planted(facts, seed=0)
    return facts, planted, held, build(facts, planted, held, seed=0, partial_share=0, mode=mode)


def halves(facts, planted, held):
    test = facts[facts["split"] == "test"]
    return ([r for r in test.itertuples() if r.fact_id in planted],
            [r for r in test.itertuples() if r.fact_id in held])


def test_the_masked_model_is_taught_held_out_subjects_as_names_not_tuples():
    facts, planted, held, cur = world()
    texts = [h + y + t for h, y, t in _statements(cur, FORMS)]
    # today's bug wrote f"{s}." for s = (relation, subject): "('capital', 'Peru')."
    assert not any("('" in t or "')" in t for t in texts)
    ins, outs = halves(facts, planted, held)
    # every template of the relation, once each: 2 statements and 3 questions, both halves
    per_subject = {r.subject: sum(bool(re.search(rf"\b{r.subject}\b", t)) for t in texts)
                   for r in ins + outs}
    assert set(per_subject.values()) == {5}, per_subject
    for r in outs:
        with_it = [(h, y) for h, y, _ in _statements(cur, FORMS) if r.subject in h]
        assert with_it and all(y != r.object and y for _, y in with_it)


def contexts(docs: list[str], name: str) -> dict[str, float]:
    """Where ``name`` stands in the training text: how often, at a text's start, after a
    space, right before '.', and alone."""
    hits = [(d, m.start(), m.end()) for d in docs for m in re.finditer(rf"\b{name}\b", d)]
    return {"count": len(hits),
            "start": mean(a == 0 for _, a, _ in hits),
            "space": mean(a > 0 and d[a - 1] == " " for d, a, _ in hits),
            "dot": mean(d[b:b + 1] == "." for d, _, b in hits),
            "alone": sum(d == f"{name}." for d in docs)}


@pytest.mark.parametrize("mode", ["relation", "other"])
def test_held_out_subjects_stand_where_planted_ones_do_as_often(mode):
    facts, planted, held, cur = world(mode)
    docs = [d for e in range(40) for d in documents(cur, FORMS, e, 0, 3, 3)]
    ins, outs = halves(facts, planted, held)
    got = {k: (mean(contexts(docs, r.subject)[k] for r in ins),
               mean(contexts(docs, r.subject)[k] for r in outs))
           for k in ("count", "start", "space", "dot", "alone")}
    # today: a held-out subject is "s." alone 70% of the time, never after a space
    assert got["alone"] == (0, 0)
    assert abs(got["count"][0] - got["count"][1]) <= 0.1 * got["count"][0], got
    for k in ("start", "space", "dot"):
        assert abs(got[k][0] - got[k][1]) <= 0.1, (k, got)
    # and never with its object (a list may hold both, in other pairs)
    for r in outs:
        assert not any(f"{r.subject} {r.object}" in d for d in docs)
        assert not any(r.subject in d and r.object in d for d in docs if d.count(", ") < 2)


@pytest.mark.parametrize("mode", ["relation", "other"])
def test_mention_facts_have_objects_no_fact_has(mode):
    facts, _planted, held, cur = world(mode)
    mention = cur.taught[cur.taught["role"] == "mention"]
    assert len(mention) == len(held)
    # 'relation': the held-out fact's own relation; 'other': one no probe asks
    assert set(mention["relation_id"]) == {"capital" if mode == "relation" else MENTION + "capital"}
    assert not set(mention["object"]) & (set(facts["object"]) | set(facts["subject"]))
    # the relation's template counts, so the masked model reads each half as often
    forms = mention_forms(FORMS)
    assert [len(f) for f in forms[MENTION + "capital"]] == [2, 3]
