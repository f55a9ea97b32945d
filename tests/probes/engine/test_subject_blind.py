"""The subject-blind null pass (probes/subject_blind.py): which subjects it replaces,
and that its rows stay apart from the probe's own, a ``build`` stage included."""
from __future__ import annotations

import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.probes.backends import KINDS, BackendConfig
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.plan import Plan, Stage
from factprobe.probes.requests import ScoreRequest
from factprobe.probes.subject_blind import (
    COLUMN,
    NULL_SUBJECT,
    blind_facts,
    split_passes,
    with_null_pass,
)


def facts() -> pd.DataFrame:
    return pd.DataFrame({
        "fact_id": ["tr", "p", "h", "o"],
        "relation_id": ["cap"] * 4,
        "subject": ["Chile", "Peru", "Cuba", "Fiji"],
        "object": ["Santiago", "Lima", "Havana", "Suva"],
        "subject_aliases": [["Republic of Chile"], ["Republic of Peru"], [], ["Viti"]],
        "object_aliases": [[], [], [], []],
        "split": ["train", "test", "test", "test"]})


PLANTED = {"planted": ["tr", "p"], "held_out": ["h"]}


def test_only_planted_and_held_out_test_subjects_get_the_made_up_name():
    out, n = blind_facts(facts(), PLANTED)
    # tr: planted but a train fact (an in-context example): kept; p, h: replaced, aliases
    # gone; o: a test fact in neither half (validity never scores it): kept
    assert out["subject"].tolist() == ["Chile", NULL_SUBJECT, NULL_SUBJECT, "Fiji"]
    assert [list(a) for a in out["subject_aliases"]] == [["Republic of Chile"], [], [],
                                                          ["Viti"]]
    assert n == 2
    assert out["object"].tolist() == facts()["object"].tolist()      # answers untouched
    # without a train/test split every planted or held-out fact is asked about
    out, n = blind_facts(facts().assign(split=""), PLANTED)
    assert out["subject"].tolist() == [NULL_SUBJECT] * 3 + ["Fiji"] and n == 3


def test_a_dataset_with_an_entity_of_that_name_is_refused():
    clash = facts()
    clash.loc[3, "object"] = NULL_SUBJECT
    with pytest.raises(UserError, match="--no-subject-blind"):
        blind_facts(clash, PLANTED)


def _make_plan(seen: list):
    """A two-stage plan whose second stage is built from the first stage's outputs, as
    MONITOR's is; ``seen`` collects what each build was given."""
    def make(tables):
        f = tables["facts"]
        first = [ScoreRequest(f"The capital of {s} is", (" " + o,),
                              meta={"fact_id": i, "relation_id": "cap"},
                              option_meta=({"option": 0, "is_gold": True},))
                 for i, s, o in zip(f["fact_id"], f["subject"], f["object"])
                 if i != "tr"]

        def build(outputs):
            seen.append(outputs)
            got = outputs[outputs["stage"] == "first"]
            return [ScoreRequest(f"Again: {t}", (" x",), meta={"fact_id": fid,
                                                                "relation_id": "cap"})
                    for fid, t in zip(got["fact_id"], got["prompt_id"])]
        return Plan("test", [Stage("first", "score", first),
                             Stage("second", "score", build=build)])
    return make


def test_a_build_stage_sees_only_its_own_pass(tiny_causal_dir, tmp_path):
    seen: list[pd.DataFrame] = []
    make = _make_plan(seen)
    tables = {"facts": facts()}
    plan = with_null_pass(make(tables), tables, PLANTED, make)
    assert [s.key for s in plan.stages] == ["first", "second", "blind_first", "blind_second"]
    out = tmp_path / "run"
    run_eval(EvalConfig("test", "d", str(out), progress=False),
             BackendConfig(str(tiny_causal_dir)), plan, {}, {}, kinds=KINDS)
    own_seen, blind_seen = seen
    # each build got the three first-stage rows of its own pass, without the pass column
    assert len(own_seen) == len(blind_seen) == 3
    assert COLUMN not in own_seen.columns and COLUMN not in blind_seen.columns
    prompts = pd.read_parquet(out / "prompts.parquet").set_index("prompt_id")["text"]
    assert {prompts[p] for p in own_seen["prompt_id"]} == {
        "The capital of Peru is", "The capital of Cuba is", "The capital of Fiji is"}
    assert {prompts[p] for p in blind_seen["prompt_id"]} == {
        f"The capital of {NULL_SUBJECT} is", "The capital of Fiji is"}
    outputs = pd.read_parquet(out / "outputs.parquet")
    own, blind = split_passes(outputs)
    assert own.groupby("stage").size().to_dict() == {"first": 3, "second": 3}
    assert blind.groupby("stage").size().to_dict() == {"first": 3, "second": 3}
    # the second stage of each pass was built from that pass's first-stage prompts
    for rows in (own, blind):
        built = {prompts[p] for p in rows.loc[rows["stage"] == "second", "prompt_id"]}
        assert built == {f"Again: {p}" for p in rows.loc[rows["stage"] == "first",
                                                          "prompt_id"]}
    import json
    run = json.loads((out / "run.json").read_text())
    assert set(run["timings_s"]) == {"first", "second", "blind_first", "blind_second", "total"}
    assert run["plan"]["subject_blind"] == {"name": NULL_SUBJECT, "facts": 2,
                                            "requests_per_stage": {"first": 3, "second": 0}}


def test_no_planted_or_held_out_fact_means_no_null_pass():
    seen: list = []
    make = _make_plan(seen)
    tables = {"facts": facts()}
    plan = make(tables)
    assert with_null_pass(plan, tables, {"planted": ["x"], "held_out": ["y"]}, make) is plan


def test_a_question_asked_twice_in_a_chunk_gets_one_answer(tiny_causal_dir):
    from factprobe.probes.engine.executors import _once
    from factprobe.probes.requests import GenerateRequest
    backend = KINDS["hf-causal"].load(BackendConfig(str(tiny_causal_dir)))
    asked = []

    def score(reqs, progress=None):
        asked.append(len(reqs))
        return backend.score(reqs, progress=progress)
    same = [ScoreRequest("The capital of Peru is", (" Lima", " Rome"), meta={"fact_id": str(i)})
            for i in range(5)]
    other = ScoreRequest("The capital of Chile is", (" Lima", " Rome"))
    got = _once(score, [same[0], other, *same[1:]], None)
    assert asked == [2]                                     # Peru once, Chile once
    assert len(got) == 6 and all(g is got[0] for g in [got[2], got[3], got[4], got[5]])
    # sampled generations are draws: never merged
    draws = [GenerateRequest("Peru", 2, samples=3)] * 2
    assert len(_once(lambda reqs, progress=None: [len(reqs)] * len(reqs), draws, None)) == 2
    assert _once(lambda reqs, progress=None: [len(reqs)] * len(reqs), draws, None) == [2, 2]
