"""The subject-only check of a masked planted model (BELIEF, issue #28): the mask-filling
equivalents of log P("." | subject) and of the subject's own likelihood (its
pseudo-log-likelihood, Salazar et al. 2020), asked of the same masked model in the same run,
and carried into BELIEF's validity block, the report and the page as the causal methods' are."""
from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from factprobe.core.tables import base_manifest, write_dataset
from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.requests import MASK, MaskRequest
from factprobe.probes.subject_only import STAGE, subject_scores
from tests.evaluators.cli.test_eval_cli import run

# Names the tiny masked model's vocabulary (tests/conftest.py TEXT, 400 WordPiece tokens)
# holds whole ("France", "Peru") and a name it cuts into pieces ("Parisa Limet": "Paris",
# "##a", "L", "##i", ...).
PAIRS = [("France", "Paris"), ("Peru", "Lima"), ("Japan", "Tokyo"), ("Parisa Limet", "Rome"),
         ("Spain Madrid", "Berlin"), ("Germany", "Madrid")]


def _facts() -> pd.DataFrame:
    return pd.DataFrame([
        {"fact_id": f"f{i}", "relation_id": "cap", "subject_id": f"s{i}", "object_id": f"o{i}",
         "subject": s, "object": o, "subject_aliases": [], "object_aliases": [],
         "answers": [o], "split": "test", "source": ""} for i, (s, o) in enumerate(PAIRS)])


def _dataset(folder, facts: pd.DataFrame) -> None:
    from factprobe.builders.templates.files import TEMPLATES_SCHEMA
    templates = pa.table({"template_id": ["cap/m1", "cap/m2"], "relation_id": ["cap", "cap"],
                          "template": ["The capital of [X] is [Y].",
                                       "What is the capital of [X]? [Y]."],
                          "style": ["statement", "question"], "origin": ["manual"] * 2,
                          "parent_id": ["", ""]}, schema=TEMPLATES_SCHEMA)
    write_dataset(folder, {"facts": pa.Table.from_pandas(facts, preserve_index=False),
                           "templates": templates},
                  base_manifest("mp", "multiprompt", {}, {}, {}))


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_masked_dir):
    root = tmp_path_factory.mktemp("subject-only-masked")
    _dataset(root / "mp", _facts())
    planted = {"planted": ["f0", "f1", "f2"], "held_out": ["f3", "f4", "f5"]}
    shutil.copytree(tiny_masked_dir, root / "model")
    (root / "model" / "planted.json").write_text(json.dumps(planted), encoding="utf-8")
    shutil.copytree(tiny_masked_dir, root / "plain")         # the same model, not planted
    for model, out in (("model", "run"), ("plain", "plain-run")):
        proc = run("eval", "belief", "--dataset", str(root / "mp"), "--model",
                   str(root / model), "--max-names", "1", "--out", str(root / out))
        assert proc.returncode == 0, proc.stderr
    return root, planted


def _auroc(pos, neg) -> float:
    """P(pos > neg), ties one half, by counting pairs."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_the_belief_validity_block_carries_the_subject_only_check(world):
    root, planted = world
    m = json.loads((root / "run" / "metrics.json").read_text())
    check = m["validity"]["subject_only"]         # absent before the masked equivalents
    scores = subject_scores(pd.read_parquet(root / "run" / "outputs.parquet"))
    assert len(scores) == 6 and not scores.isna().any().any()
    for name in ("period_after_subject", "subject_likelihood"):
        s = scores.set_index("fact_id")[name]
        want = _auroc(s[planted["planted"]].to_numpy(), s[planted["held_out"]].to_numpy())
        assert abs(check[name]["auroc"]["value"] - round(want, 4)) < 1e-9
        assert check[name]["auroc"]["ci_low"] <= want <= check[name]["auroc"]["ci_high"]
        assert check[name]["planted"]["n"] == 3 and check[name]["held_out"]["n"] == 3


def test_the_run_asks_the_mask_filling_equivalents(world):
    root, planted = world
    out = pd.read_parquet(root / "run" / "outputs.parquet")
    prompts = pd.read_parquet(root / "run" / "prompts.parquet").set_index("prompt_id")["text"]
    rows = out[out["stage"] == STAGE]
    assert len(rows) == 12 and set(rows["kind"]) == {"fill_mask"}
    subject = dict(zip(_facts()["fact_id"], _facts()["subject"]))
    for r in rows.itertuples():
        # "." masked right after the subject; every token of the subject alone masked in turn
        want = subject[r.fact_id] + ("." if r.subject_score == "period_after_subject" else "")
        assert prompts[r.prompt_id] == want
        assert r.n_tokens == len(r.token_logprobs) >= 1
        assert all(x < 0 for x in r.token_logprobs)
        assert r.logprob == pytest.approx(sum(r.token_logprobs))
    period = rows[rows["subject_score"] == "period_after_subject"]
    assert set(period["n_tokens"]) == {1}
    # "Parisa Limet" is several pieces: its likelihood reads each of them
    own = rows[rows["subject_score"] == "subject_likelihood"].set_index("fact_id")
    assert own.loc["f3", "n_tokens"] > 2
    run_json = json.loads((root / "run" / "run.json").read_text())
    assert run_json["plan"][STAGE] == {"facts": 6, "requests": 12}


def test_belief_numbers_never_see_the_subject_only_rows(world):
    root, _ = world
    m = json.loads((root / "run" / "metrics.json").read_text())
    plain = json.loads((root / "plain-run" / "metrics.json").read_text())
    assert not (plain.get("validity") or {}).get("subject_only")   # no planted.json: no check
    for key in ("accuracy", "consistency", "overconfidence", "prompts_total", "pairs_total",
                "bias", "coverage"):
        assert m[key] == plain[key], key
    out = pd.read_parquet(root / "run" / "outputs.parquet")
    mine = out[(out["stage"] != STAGE) & ~out["subject_blind"]].dropna(axis=1, how="all")
    theirs = pd.read_parquet(root / "plain-run" / "outputs.parquet")
    pd.testing.assert_frame_equal(mine.reset_index(drop=True)[theirs.columns],
                                  theirs.reset_index(drop=True), check_dtype=False)


def test_pseudo_log_likelihood_matches_a_loop_by_hand(tiny_masked_dir):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    backend = load_backend(BackendConfig(str(tiny_masked_dir), kind="hf-masked",
                                         batch_size=3))
    texts = [("Parisa Limet", 0), ("Peru", 0), ("Saint Denis.", 11), ("Japan Tokyo", 6)]
    got = backend.fill_mask([MaskRequest(t, mask_each_from=k) for t, k in texts])
    tok = AutoTokenizer.from_pretrained(tiny_masked_dir)
    model = AutoModelForMaskedLM.from_pretrained(tiny_masked_dir).eval()
    for (text, start), m in zip(texts, got):
        ids = tok(text)["input_ids"]                        # [CLS] ... [SEP]
        # the tokens from ``start`` on: those after the tokens of the text before it
        first = 1 + len(tok(text[:start], add_special_tokens=False)["input_ids"])
        want_ids, want = [], []
        for pos in range(first, len(ids) - 1):
            masked = list(ids)
            masked[pos] = tok.mask_token_id
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([masked])).logits[0, pos]
            want_ids.append(ids[pos])
            want.append(float(torch.log_softmax(logits, -1)[ids[pos]]))
        assert m.token_ids == want_ids, text
        assert np.allclose(m.token_logprobs, want, atol=1e-5), (text, m.token_logprobs, want)
    assert len(got[0].token_ids) > 2                  # several pieces, "##" ones among them
    assert any(tok.convert_ids_to_tokens(t).startswith("##") for t in got[0].token_ids)
    assert tok.convert_ids_to_tokens(got[2].token_ids) == ["."]
    mean = sum(got[0].token_logprobs) / len(got[0].token_logprobs)
    assert math.isfinite(mean) and mean < 0


def test_the_period_reading_is_the_fill_mask_probability_of_a_period(tiny_masked_dir):
    backend = load_backend(BackendConfig(str(tiny_masked_dir), kind="hf-masked"))
    for subject in ("France", "Parisa Limet"):
        [each, filled] = backend.fill_mask([
            MaskRequest(subject + ".", mask_each_from=len(subject)),
            MaskRequest(subject + MASK, top_k=1, candidates=(".",))])
        assert math.exp(each.token_logprobs[0]) == pytest.approx(filled.candidate_probs[0],
                                                                 rel=1e-4)


def test_golden_requests():
    from factprobe.probes.subject_only import masked_requests
    facts = _facts()
    facts.loc[5, "split"] = "train"                      # in-context facts are never asked
    reqs = masked_requests(facts, {"planted": ["f0", "f5"], "held_out": ["f3"]})
    assert [(r.prompt, r.mask_each_from, r.meta) for r in reqs] == [
        ("France.", 6, {"fact_id": "f0", "relation_id": "cap",
                        "subject_score": "period_after_subject"}),
        ("France", 0, {"fact_id": "f0", "relation_id": "cap",
                       "subject_score": "subject_likelihood"}),
        ("Parisa Limet.", 12, {"fact_id": "f3", "relation_id": "cap",
                               "subject_score": "period_after_subject"}),
        ("Parisa Limet", 0, {"fact_id": "f3", "relation_id": "cap",
                             "subject_score": "subject_likelihood"})]


def test_a_pseudo_log_likelihood_text_with_a_mask_is_refused(tiny_masked_dir):
    from factprobe.core.errors import UserError
    backend = load_backend(BackendConfig(str(tiny_masked_dir), kind="hf-masked"))
    with pytest.raises(UserError, match="must hold no"):
        backend.fill_mask([MaskRequest(f"a {MASK} b", mask_each_from=0)])


def test_the_fake_backend_runs_belief_with_the_check(world, tmp_path):
    root, _ = world
    proc = run("eval", "belief", "--dataset", str(root / "mp"), "--model", str(root / "model"),
               "--backend", "fake", "--max-names", "1", "--out", str(tmp_path / "fake"))
    assert proc.returncode == 0, proc.stderr
    out = pd.read_parquet(tmp_path / "fake" / "outputs.parquet")
    rows = out[out["stage"] == STAGE]
    assert set(rows["kind"]) == {"fill_mask"} and len(rows) == 12
    # the fake's tokens are words: "Parisa Limet" is two
    assert rows.set_index(["fact_id", "subject_score"]).loc[
        ("f3", "subject_likelihood"), "n_tokens"] == 2
    m = json.loads((tmp_path / "fake" / "metrics.json").read_text())
    assert set(m["validity"]["subject_only"]) == {"period_after_subject", "subject_likelihood"}


def test_the_report_and_page_show_it(world, tmp_path):
    root, _ = world
    proc = run("report", "--results", str(root / "run"), "--out", str(tmp_path / "rep"),
               "--no-plots", "--bootstrap", "50", "--html")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "subject-only AUROC ('.' / own)" in text
    table = pd.read_csv(tmp_path / "rep" / "tables" / "validity.csv")
    belief = table[table["method"] == "belief"]
    assert len(belief) == 1 and not np.isnan(belief["period_auroc_value"].iloc[0])
    assert not np.isnan(belief["own_auroc_value"].iloc[0])
    page = (tmp_path / "rep" / "index.html").read_text()
    # the page carries BELIEF's two cells as report.md writes them
    from factprobe.evaluators.report.markdown import fmt
    for short in ("period", "own"):
        cell = fmt(*(belief[f"{short}_auroc_{f}"].iloc[0] for f in ("value", "ci_low",
                                                                   "ci_high")))
        assert f'"{short}_auroc":"{cell}"' in page and cell in text


def test_a_subject_longer_than_the_model_is_one_line_not_a_traceback(world, tmp_path):
    from tests.evaluators.cli.test_cli import assert_user_error
    root, _ = world
    facts = _facts()
    facts.loc[3, "subject"] = "ab cd " * 300          # 600 words: more than 512 positions
    _dataset(tmp_path / "mp", facts)
    proc = run("eval", "belief", "--dataset", str(tmp_path / "mp"), "--model",
               str(root / "model"), "--max-names", "1", "--out", str(tmp_path / "o"))
    assert_user_error(proc, "more than the 512 positions", "shorten the dataset's names")
    assert not (tmp_path / "o" / "metrics.json").exists()
