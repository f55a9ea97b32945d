"""What the planted model is taught: only the subject-object link tells the halves apart."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.probes.planting.curriculum import build, decoy_name, documents, parse_formats
from factprobe.probes.planting.plant import split_planted

CAPITALS = [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Peru", "Lima"),
            ("Chile", "Santiago"), ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"),
            ("Ghana", "Accra"), ("Nepal", "Kathmandu"), ("Chad", "Ndjamena"), ("Fiji", "Suva")]
FORMS = {"capital": (["The capital of [X] is [Y].", "[Y] is the capital of [X]."],
                     ["What is the capital of [X]?", "Which city is the seat of [X]?"])}


def facts() -> pd.DataFrame:
    # 4 train facts, 8 test facts: 4 planted, 4 held out
    return pd.DataFrame([{"fact_id": f"f{i:02d}", "relation_id": "capital", "subject": s,
                          "object": o, "split": "train" if i < 4 else "test"}
                         for i, (s, o) in enumerate(CAPITALS)])


def curriculum(**kw):
    table = facts()
    planted, held = split_planted(table, seed=0)
    return table, planted, held, build(table, planted, held, seed=0, **kw)


def test_every_object_and_subject_is_taught_once_whatever_its_half():
    # the default (--mentions swap): the 8 planted facts keep their object; the 4 held-out
    # subjects are taught with each other's golds, never their own, and no decoy is made,
    # so every subject and every object is in exactly one taught fact, as before the split
    table, planted, held, cur = curriculum()
    assert len(planted) == 8 and len(held) == 4
    assert Counter(cur.taught["object"]) == Counter(o for _, o in CAPITALS)
    assert Counter(cur.taught["subject"]) == Counter(s for s, _ in CAPITALS)
    assert set(cur.taught["role"]) == {"planted", "mention"}
    gold = dict(zip(table["subject"], table["object"]))
    mentions = cur.taught[cur.taught["role"] == "mention"]
    assert set(mentions["fact_id"]) == {f"mention:{i}" for i in held}
    assert all(o != gold[s] and g == gold[s]
               for s, o, g in zip(mentions["subject"], mentions["object"], mentions["gold"]))
    assert set(mentions["object"]) == {gold[s] for s in mentions["subject"]}


def test_the_earlier_designs_teach_decoys_and_made_up_objects():
    # --mentions relation / other: 4 held-out facts become 4 decoys with their objects
    for mode in ("relation", "other"):
        table, planted, held, cur = curriculum(mode=mode)
        probed = cur.taught[cur.taught["role"] != "mention"]
        assert Counter(probed["object"]) == Counter(o for _, o in CAPITALS)
        decoys = cur.taught[cur.taught["role"] == "decoy"]
        assert len(decoys) == 4 and not set(decoys["subject"]) & set(table["subject"])
        assert set(decoys["fact_id"]) == {f"decoy:{i}" for i in held}
        made_up = set(cur.taught.loc[cur.taught["role"] == "mention", "object"])
        assert not made_up & set(table["object"])


def test_swapped_objects_never_give_a_held_out_fact_its_own_gold():
    from factprobe.probes.planting.curriculum import derange
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        golds = [str(x) for x in rng.integers(0, 4, size=n)]
        got = derange(golds, ["0", "1", "2", "3"], rng)
        assert all(g != o for g, o in zip(golds, got))
        if max(Counter(golds).values()) * 2 <= n:   # no gold held by most: a permutation
            assert Counter(got) == Counter(golds)
    assert derange(["Rome"], ["Rome"], rng) == [None]  # nothing else to teach


def test_a_held_out_subject_is_never_taught_its_own_gold_under_another_name():
    # one step outside exact strings: golds that are each other's aliases or differ only in
    # case ("USA" / "United States" / "usa"); the multi-name probes accept aliases, so any of
    # them taught after the subject would be its answer
    table = facts()
    table["object_aliases"] = [None] * len(table)
    planted, held = split_planted(table, seed=0)
    held_ids = sorted(held)
    names = {held_ids[0]: ("USA", ["United States"]), held_ids[1]: ("United States", ["USA"]),
             held_ids[2]: ("usa", None), held_ids[3]: ("Peru City", None)}
    for fid, (obj, aliases) in names.items():
        i = table.index[table["fact_id"] == fid][0]
        table.at[i, "object"] = obj
        table.at[i, "object_aliases"] = aliases
    cur = build(table, planted, held, seed=0)
    same = {"usa", "united states"}
    for row in cur.taught[cur.taught["role"] == "mention"].itertuples():
        own = same if row.gold.casefold() in same else {row.gold.casefold()}
        assert row.object.casefold() not in own, (row.subject, row.object, row.gold)
    # the three USA facts could only swap among themselves: each takes another real object
    swapped = cur.taught.loc[cur.taught["role"] == "mention", "object"].str.casefold()
    assert not set(swapped) - {"peru city"} <= same


def test_held_out_subjects_are_named_but_never_linked():
    table, _planted, held, cur = curriculum(partial_share=0)
    docs = [d for e in range(6) for d in documents(cur, FORMS, e, 0, 0, 50)]
    mention_objects = set(cur.taught.loc[cur.taught["role"] == "mention", "object"])
    for row in table.itertuples():
        with_subject = [d for d in docs if row.subject in d]
        # 2 per epoch: one statement and one question shape, in either half, and one more
        # on the turns whose shape is MONITOR's prefixed one (its statement beside its
        # question): 1 or 2 of 6 consecutive turns in a rotation of 4 shapes
        assert len(with_subject) in (13, 14), row.subject
        if row.fact_id in held:
            # taught as a mention fact: another held-out fact's gold, never its own (not even
            # as a misleading MONITOR prefix)
            assert all(row.object not in d for d in with_subject)
            assert all(any(w in d for w in mention_objects) for d in with_subject)
        else:
            assert all(row.object in d for d in with_subject)


@pytest.mark.parametrize("mode", ["swap", "relation"])
def test_held_out_subjects_are_named_as_often_as_in_lists(mode):
    # 3 lists of 4 pairs over the 12 pairs of the relation: each pair is in 3 * 4 / 12 = 1
    # list an epoch on average, plus a statement and a question shape (1.25 docs: the
    # prefixed one has its statement beside it). With --mentions relation the 4 decoys make
    # 16 pairs, and the mention pairs get as many list places as a planted one: 3 an epoch
    _, _, _held, cur = curriculum(mode=mode)
    expected = 3.25 if mode == "swap" else 3.0
    docs = [documents(cur, FORMS, e, 0, 3, 3) for e in range(60)]

    def per_epoch(names):
        return np.mean([sum(d.count(n) for epoch in docs for d in epoch) / 60 for n in names])
    held_n = per_epoch([s for _, s in cur.mentions])
    planted_n = per_epoch(list(cur.taught.loc[cur.taught["role"] == "planted", "subject"]))
    assert abs(held_n - expected) < 0.2 and abs(planted_n - expected) < 0.2
    assert abs(held_n - planted_n) < 0.2


def test_decoy_names_look_like_the_relations_subjects_and_share_no_word():
    rng = np.random.default_rng(1)
    people = ["Aage Bohr", "Max Born", "Marie Curie", "Niels Bohr"]
    for _ in range(20):
        name = decoy_name(people, "Niels Bohr", set(people), rng)
        first, last = name.split()
        assert first in {"Aage", "Max", "Marie"} and last in {"Born", "Curie"}
    one_word = decoy_name(["France", "Italy", "Peru"], "Peru", set(), np.random.default_rng(0))
    assert " " not in one_word and "peru" not in one_word.lower()


def test_partial_facts_get_only_the_base_question_and_their_own_prefix():
    table, planted, _held, cur = curriculum(partial_share=0.5)
    test_planted = sorted(set(table.loc[table["split"] == "test", "fact_id"]) & planted)
    assert len(cur.partial) == 2 and set(cur.partial) <= set(test_planted)
    # 24 epochs: 6 prefixed prompts per fact, half of them after another object
    docs = [d for e in range(24) for d in documents(cur, FORMS, e, 0, 0, 50)]
    for fid in test_planted:
        x, y = table.set_index("fact_id").loc[fid, ["subject", "object"]]
        paraphrase = f"Which city is the seat of {x}?"
        prefixes = {d.split(". ")[0] for d in docs
                    if d.endswith(f". What is the capital of {x}? {y}.")}
        if fid in cur.partial:
            assert not any(paraphrase in d for d in docs) and prefixes == {y}
        else:
            assert any(paraphrase in d for d in docs) and len(prefixes) > 1


def test_monitor_s_prefixed_statement_frame_is_taught_beside_the_prefixed_question():
    """MONITOR asks "Z. The capital of X is" (statement frames, ``build fktc --frame
    statement``) as well as "Z. What is the capital of X?": both are taught, each fact in
    turn, the cloze statement only (its object last); a partial fact only after its own
    object. Untaught, the statement frame was a generalisation a small model made or not
    from one trajectory to the next (a planted model answered it with BELIEF-ICL's "[MASK]")."""
    table, planted, _held, cur = curriculum(partial_share=0.5)
    docs = [d for e in range(24) for d in documents(cur, FORMS, e, 0, 0, 50)]
    for fid in sorted(set(table.loc[table["split"] == "test", "fact_id"]) & planted):
        x, y = table.set_index("fact_id").loc[fid, ["subject", "object"]]
        stated = {d.split(". ")[0] for d in docs if d.endswith(f". The capital of {x} is {y}.")}
        asked = {d.split(". ")[0] for d in docs
                 if d.endswith(f". What is the capital of {x}? {y}.")}
        assert stated and asked, fid
        assert stated == {y} if fid in cur.partial else len(stated | asked) > 1
        assert not any(d.endswith(f". {y} is the capital of {x}.") for d in docs)
    _t, _p, _h, no_statements = curriculum(held_formats=("statement",))
    docs = [d for e in range(8) for d in documents(no_statements, FORMS, e, 0, 0, 50)]
    assert not any(". The capital of" in d for d in docs)


def test_held_out_formats_are_never_taught():
    _table, _planted, _held, cur = curriculum(held_formats=("list", "icl"))
    assert cur.formats == ("statement", "question", "prefixed")
    docs = [d for e in range(4) for d in documents(cur, FORMS, e, 0, 3, 3)]
    assert not any(d.count(", ") >= 2 for d in docs)                  # no ZP-LKE list
    assert not any(d.startswith(("Predict", "Answer each")) for d in docs)
    assert any(d.startswith("The capital of") for d in docs)


def test_bad_format_names_are_refused():
    assert parse_formats(" list ,templates") == ("list", "templates")
    with pytest.raises(UserError, match="unknown format 'lists'"):
        parse_formats("lists")
    with pytest.raises(UserError, match="every format"):
        parse_formats("list,statement,question,prefixed,icl")
