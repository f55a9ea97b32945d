"""The eval runner: outputs, checkpoints, resuming after a kill, dry runs."""
from __future__ import annotations

import pandas as pd
import pytest

from factprobe.probes.backends import KINDS, BackendConfig, load_backend
from factprobe.probes.backends.base import BackendKind
from factprobe.probes.engine import runner
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
from tests.probes.methods.test_golden_prompts import mc_facts


def facts_many() -> pd.DataFrame:
    base = mc_facts()
    rows = [base]
    for k in range(6):  # more test facts, each with its own choices
        extra = base[base.split == "test"].copy()
        extra["fact_id"] = f"t{k}"
        extra["subject"] = f"Person {k}"
        extra["subject_id"] = f"person-{k}"     # another entity, not the base fact's
        rows.append(extra)
    return pd.concat(rows, ignore_index=True)


def _plan():
    return plan(facts_many(), ZPLKEConfig(n_examples=(3,), response_tokens=3))


def killable(calls: dict) -> dict[str, BackendKind]:
    """The kinds table with an hf-causal backend whose ``score`` counts its calls in
    ``calls["n"]`` and, while ``calls["kill"]``, is killed in its third call."""
    real = KINDS["hf-causal"]

    def load(config):
        b = real.load(config)
        real_score = b.score

        def score(reqs, progress=None):
            calls["n"] += 1
            if calls.get("kill") and calls["n"] == 3:
                raise KeyboardInterrupt  # the run is killed in its third chunk
            return real_score(reqs, progress)
        b.score = score
        return b
    return {**KINDS, "hf-causal": BackendKind(real.capabilities, load)}


def test_resume_after_a_kill_redoes_nothing(tiny_causal_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHUNK", 2)
    cfg = BackendConfig(str(tiny_causal_dir))
    calls = {"n": 0}
    kinds = killable(calls)
    out = tmp_path / "run"
    ecfg = EvalConfig("zp-lke", "d", str(out), progress=False)
    calls["kill"] = True
    with pytest.raises(KeyboardInterrupt):
        run_eval(ecfg, cfg, _plan(), ZPLKEConfig(), {}, kinds=kinds)
    assert not out.exists()                                   # nothing half-written
    partial = tmp_path / ".run.partial"
    assert len(list(partial.glob("mc-*.parquet"))) == 2       # two chunks were saved
    calls.update(n=0, kill=False)
    run_eval(ecfg, cfg, _plan(), ZPLKEConfig(), {}, kinds=kinds)
    assert calls["n"] == 2                                     # only the missing chunks ran
    resumed = pd.read_parquet(out / "outputs.parquet")
    assert not partial.exists()

    clean = tmp_path / "clean"
    run_eval(EvalConfig("zp-lke", "d", str(clean), progress=False), cfg, _plan(),
             ZPLKEConfig(), {}, kinds=KINDS)
    fresh = pd.read_parquet(clean / "outputs.parquet")
    assert len(resumed) == len(fresh)
    key = ["stage", "fact_id", "option", "sample"]
    pd.testing.assert_frame_equal(resumed.sort_values(key).reset_index(drop=True),
                                  fresh.sort_values(key).reset_index(drop=True))


def test_dry_run_loads_no_model(capsys, tmp_path):
    cfg = BackendConfig(str(tmp_path / "no-such-model"))
    assert run_eval(EvalConfig("zp-lke", "d", str(tmp_path / "r"), dry_run=True), cfg,
                    _plan(), ZPLKEConfig(), {}, kinds=KINDS) is None
    printed = capsys.readouterr().out
    assert "Person 0" in printed and "nothing was run" in printed
    assert not (tmp_path / "r").exists()


def test_select_facts_keeps_examples_and_limits_test_rows():
    facts = facts_many()
    picked = runner.select_facts(facts, ("born",), 2)
    assert (picked.split == "train").sum() == (facts.split == "train").sum()
    assert (picked.split == "test").sum() == 2
    from factprobe.core.errors import UserError
    with pytest.raises(UserError, match="nope"):
        runner.select_facts(facts, ("nope",), None)


@pytest.fixture(scope="module")
def short_context_model(tmp_path_factory):
    from factprobe.probes.planting.model_factory import causal_model, save, train_tokenizer
    from tests.conftest import TEXT
    tok = train_tokenizer(TEXT, vocab_size=300)
    return save(causal_model(tok, max_positions=40, arch="llama"), tok,
                tmp_path_factory.mktemp("short"))


@pytest.mark.parametrize("policy", ["skip", "truncate"])
def test_too_long_prompts(short_context_model, tmp_path, policy):
    import json
    p = plan(facts_many(), ZPLKEConfig(n_examples=(4,), response_tokens=0))
    out = tmp_path / policy
    run_eval(EvalConfig("zp-lke", "d", str(out), progress=False, too_long=policy),
             BackendConfig(str(short_context_model)), p, ZPLKEConfig(), {}, kinds=KINDS)
    info = json.loads((out / "run.json").read_text())["plan"]["too_long"]
    outputs = pd.read_parquet(out / "outputs.parquet")
    if policy == "skip":
        assert info["skipped_too_long"] == 7 and outputs.empty
        assert info["skipped_per_relation"] == {"born": 7}
    else:
        assert info["truncated_examples"] >= 7 and outputs["fact_id"].nunique() == 7
        prompts = pd.read_parquet(out / "prompts.parquet")
        assert prompts["text"].str.count(", ").max() < 4    # examples were dropped


def test_too_long_error_is_clear(short_context_model, tmp_path):
    from factprobe.core.errors import UserError
    p = plan(facts_many(), ZPLKEConfig(n_examples=(4,), response_tokens=0))
    with pytest.raises(UserError, match="exceeds the model's context"):
        run_eval(EvalConfig("zp-lke", "d", str(tmp_path / "e"), progress=False),
                 BackendConfig(str(short_context_model)), p, ZPLKEConfig(), {}, kinds=KINDS)


def test_out_of_memory_halves_the_batch(tiny_causal_dir):
    backend = load_backend(BackendConfig(str(tiny_causal_dir), batch_size=8))
    reqs = plan(facts_many(), ZPLKEConfig(n_examples=(3,), response_tokens=0)).stages[0].requests
    want = [[s.logprob for s in r] for r in backend.score(reqs)]
    real = backend.model.forward
    calls = {"n": 0}

    def fails_first(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] in (2, 3):  # the two batches after the shared prefix run out of memory
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, **kwargs)
    backend.model.forward = fails_first
    got = [[s.logprob for s in r] for r in backend.score(reqs)]
    assert backend.batch_size == 2                       # 8 -> 4 -> 2
    assert max(abs(a - b) for x, y in zip(want, got) for a, b in zip(x, y)) < 1e-5
