"""ZP-LKE option scores equal lm-evaluation-harness's loglikelihood and a plain full-sequence
computation on the same (prompts.text, option_text) pairs, within 1e-4 (float32, CPU)."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from factprobe.probes.backends import KINDS, BackendConfig
from factprobe.probes.engine.runner import EvalConfig, run_eval
from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
from tests.probes.engine.test_runner import facts_many


@pytest.mark.slow
def test_scores_equal_lm_eval_and_full_sequence(tiny_causal_dir, tmp_path):
    pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    out = tmp_path / "run"
    run_eval(EvalConfig("zp-lke", "d", str(out), progress=False),
             BackendConfig(str(tiny_causal_dir), batch_size=4),
             plan(facts_many(), ZPLKEConfig(n_examples=(4,), response_tokens=0)),
             ZPLKEConfig(), {}, kinds=KINDS)
    outputs = pd.read_parquet(out / "outputs.parquet")
    prompts = pd.read_parquet(out / "prompts.parquet").set_index("prompt_id")["text"]
    pairs = [(prompts[p], o) for p, o in zip(outputs["prompt_id"], outputs["option_text"])]

    lm = HFLM(pretrained=str(tiny_causal_dir), batch_size=8, device="cpu", dtype="float32")
    theirs = [r[0] for r in lm.loglikelihood(
        [Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i)
         for i, p in enumerate(pairs)], disable_tqdm=True)]

    model, tok = lm.model, lm.tokenizer
    plain = []
    for ctx, cont in pairs:
        c_ids = tok(ctx, add_special_tokens=False)["input_ids"]
        whole = tok(ctx + cont, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([whole])
        with torch.no_grad():
            lp = torch.log_softmax(model(ids).logits.float(), -1)[0]
        plain.append(sum(float(lp[j - 1, whole[j]]) for j in range(len(c_ids), len(whole))))

    ours = outputs["logprob"].tolist()
    assert len(ours) == 7 * 3
    assert max(abs(a - b) for a, b in zip(ours, theirs)) < 1e-4
    assert max(abs(a - b) for a, b in zip(ours, plain)) < 1e-4
