"""ZP-LKE on a dataset without a train/test split (Nobel): one fixed test set for every seed and
example count, the examples drawn per seed from the rest, so the paper's Fig. 3 (accuracy
against n over 5 seeds) runs (issue #28: it failed with "missing rows; rerun")."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from factprobe.core.tables import base_manifest, write_dataset
from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
from tests.evaluators.cli.test_eval_cli import run

YEARS = [1879, 1955, 1921, 1901, 1938, 1947, 1912, 1930, 1966, 1899, 1944, 1903, 1951, 1927,
         1918, 1960, 1934, 1908, 1972, 1893]


def nobel_facts() -> pd.DataFrame:
    """20 laureates' birth years, no split column values (as 'factprobe build nobel')."""
    return pd.DataFrame({
        "fact_id": [f"n{i:02d}" for i in range(20)], "relation_id": "birth_year",
        "subject_id": [f"Q{i}" for i in range(20)], "object_id": [str(y) for y in YEARS],
        "subject": [f"Laureate {chr(65 + i)}" for i in range(20)],
        "object": [str(y) for y in YEARS], "subject_aliases": [[] for _ in range(20)],
        "object_aliases": [[] for _ in range(20)], "answers": [[str(y)] for y in YEARS],
        "split": "", "source": "test"})


def test_every_seed_and_n_asks_about_the_same_test_facts():
    cfg = ZPLKEConfig(n_examples=(1, 3), seeds=(0, 1, 2), response_tokens=0)
    mc = plan(nobel_facts(), cfg).stages[0].requests
    asked = {}
    for r in mc:
        asked.setdefault((r.meta["seed"], r.meta["n_examples"]), set()).add(r.meta["fact_id"])
    # pool = 2 x 3 = 6 facts set apart, 14 test facts, the same 14 for all 6 (seed, n)
    assert len(asked) == 6 and all(v == asked[(0, 1)] for v in asked.values())
    assert len(asked[(0, 1)]) == 14
    # the examples come from the pool, never from the test facts, and differ between seeds
    tests = {f"Laureate {chr(65 + int(f[1:]))}" for f in asked[(0, 1)]}
    shots = {}
    for r in mc:
        if r.meta["n_examples"] == 3:
            pairs = r.context.split(", ")[:-1]
            assert not {p.rsplit(" ", 1)[0] for p in pairs} & tests
            shots.setdefault(r.meta["seed"], set()).add(tuple(pairs))
    assert all(len(v) == 1 for v in shots.values())            # one draw per seed
    assert len({next(iter(v)) for v in shots.values()}) > 1     # seeds draw differently


def test_a_pool_that_leaves_no_test_fact_is_one_line(tmp_path):
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="--example-pool"):
        plan(nobel_facts(), ZPLKEConfig(n_examples=(10,), response_tokens=0))


def test_several_seeds_and_counts_run_on_nobel(tmp_path, tiny_causal_dir):
    write_dataset(tmp_path / "nobel",
                  {"facts": pa.Table.from_pandas(nobel_facts(), preserve_index=False)},
                  base_manifest("nobel", "nobel", {}, {}, {}))
    proc = run("eval", "zp-lke", "--dataset", str(tmp_path / "nobel"), "--model",
               str(tiny_causal_dir), "--examples", "1,3", "--seeds", "0,1,2",
               "--response-tokens", "0", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["facts"] == 14 and m["questions"] == 14 * 6
    assert sorted(m["mc_accuracy_by_n"]) == ["1", "3"]
    # a fixed pool size keeps the test set when the example counts change
    proc = run("eval", "zp-lke", "--dataset", str(tmp_path / "nobel"), "--model",
               str(tiny_causal_dir), "--examples", "2", "--example-pool", "6",
               "--response-tokens", "0", "--out", str(tmp_path / "out2"))
    assert proc.returncode == 0, proc.stderr
    a = pd.read_parquet(tmp_path / "out" / "outputs.parquet")
    b = pd.read_parquet(tmp_path / "out2" / "outputs.parquet")
    assert set(a["fact_id"]) == set(b["fact_id"])


def test_a_pool_on_a_dataset_with_a_split_is_refused():
    from factprobe.core.errors import UserError
    from tests.probes.engine.test_runner import facts_many
    with pytest.raises(UserError, match="without a train/test split"):
        plan(facts_many(), ZPLKEConfig(n_examples=(3,), example_pool=6, response_tokens=0))


def _halves(facts: pd.DataFrame) -> dict:
    ids = sorted(facts["fact_id"])
    return {"planted": ids[::2], "held_out": ids[1::2]}


def test_the_subject_blind_null_keeps_the_example_pool_s_names():
    """The null asks the same many-shot question with only the test subject made up: before,
    every pool fact was planted or held out and so renamed too, every example then had the
    test fact's (made-up) subject, and the never-its-own-example rule dropped them all: the
    null of a 3-shot probe was zero-shot ('Quorvath Zindelmare')."""
    from factprobe.probes.subject_blind import NULL_SUBJECT, with_null_pass
    from factprobe.probes.subject_only import with_subject_only
    facts, cfg = nobel_facts(), ZPLKEConfig(n_examples=(3,), seeds=(0, 1), response_tokens=0)
    halves = _halves(facts)
    own = plan(facts, cfg)
    full = with_null_pass(own, {"facts": facts}, halves, lambda t: plan(t["facts"], cfg))
    assert full.info["subject_blind"]["facts"] == 14         # the test facts, not the pool
    mc = {s.label or s.name: s.requests for s in full.stages}
    pairs = {(r.meta["seed"], r.meta["fact_id"]): r.context for r in mc["mc"]}
    blind = {(r.meta["seed"], r.meta["fact_id"]): r.context for r in mc["blind_mc"]}
    assert blind.keys() == pairs.keys()
    for key, context in pairs.items():
        head, _, subject = context.rpartition(", ")
        assert blind[key] == f"{head}, {NULL_SUBJECT}", (context, blind[key])
        assert len(head.split(", ")) == 3
    # the subject-only check reads the facts the probe asks about, not the pool's
    checked = with_subject_only(own, facts, halves).stages[-1].requests
    assert {r.meta["fact_id"] for r in checked} == {r.meta["fact_id"] for r in mc["mc"]}
    assert len(own.examples_only) == 6                       # the pool: 2 x 3


def test_the_prompt_baseline_s_null_keeps_its_examples_on_nobel():
    """FS-LKE on a dataset without a split draws its examples from the facts and asks about
    the rest; its null renamed the examples too and then, leaving out every fact whose
    subject is an example's, had no question left."""
    from factprobe.builders.templates.files import Template
    from factprobe.probes.methods import prompt as P
    from factprobe.probes.subject_blind import NULL_SUBJECT, with_null_pass
    facts = nobel_facts()
    tpl = [Template("birth_year/m1", "birth_year", "[X] was born in [Y].", "statement")]
    cfg = P.PromptConfig(fs_examples=2, response_tokens=0)
    own = P.plan(facts, tpl, cfg)
    assert len(own.stages[0].requests) == 18
    full = with_null_pass(own, {"facts": facts}, _halves(facts),
                          lambda t: P.plan(t["facts"], tpl, cfg))
    blind = [s for s in full.stages if s.label == "blind_mc"][0].requests
    assert len(blind) == 18
    assert all(r.context.endswith(f"{NULL_SUBJECT} was born in") for r in blind)
    assert all(r.context.count("Laureate") == 2 for r in blind)
    assert len(own.examples_only) == 2
