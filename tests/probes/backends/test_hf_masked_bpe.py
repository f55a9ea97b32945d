"""BELIEF on a RoBERTa-style masked LM (byte-level BPE, where the word at a mask after a space
is "ĠParis", not "Paris"): the gold is found, matched and counted, and the pairs whose gold is
several tokens are skipped with a line in the run's summary and a ``skipped`` record."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from factprobe.probes.backends import BackendConfig, load_backend
from factprobe.probes.requests import MASK, MaskRequest
from tests.inprocess import factprobe_cli

ROOT = Path(__file__).resolve().parents[3]
TEXT = ["The capital of France is Paris.", "The capital of Peru is Lima.",
        "Paris is in France.", "Lima is in Peru.", "Saint Denis is on Reunion."] * 8


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    """A one-layer RobertaForMaskedLM with a byte-level BPE tokenizer trained on TEXT, its
    output bias rigged so that the top-1 token at any mask is "ĠParis" (p ~ 1)."""
    import torch
    from tokenizers import AddedToken, processors
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    from tests.tiny_tokenizers import byte_level_bpe
    tok = byte_level_bpe(TEXT, 400, ["<s>", "<pad>", "</s>", "<unk>"])
    mask = AddedToken("<mask>", lstrip=True, special=True)   # RoBERTa's: takes the space
    tok.add_special_tokens([mask])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", unk_token="<unk>",
                                   pad_token="<pad>", mask_token=mask)
    torch.manual_seed(0)
    model = RobertaForMaskedLM(RobertaConfig(
        vocab_size=len(fast), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, pad_token_id=fast.pad_token_id,
        bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id))
    paris = fast.convert_tokens_to_ids("ĠParis")
    assert paris != fast.unk_token_id and fast.convert_tokens_to_ids("ĠLima") != paris
    with torch.no_grad():
        model.lm_head.bias[paris] = 40.0
    folder = tmp_path_factory.mktemp("roberta")
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def test_the_gold_is_the_spaced_token(roberta_dir):
    backend = load_backend(BackendConfig(str(roberta_dir), kind="hf-masked"))
    spaced, first = backend.fill_mask([
        MaskRequest(f"The capital of France is {MASK}.", 3, ("Paris", "Lima", "Saint Denis")),
        MaskRequest(f"{MASK} is the capital of France.", 3, ("Paris",))])
    assert spaced.top_tokens[0] == "ĠParis" and spaced.top_probs[0] > 0.99
    assert spaced.candidate_tokens == ["ĠParis", "ĠLima", None]
    assert spaced.candidate_probs[0] == spaced.top_probs[0] and spaced.candidate_probs[1] < 1e-6
    assert math.isnan(spaced.candidate_probs[2])                   # two tokens: no probability
    # at the start of the text no space precedes: the bare word, a different token
    assert first.candidate_tokens == ["Paris"] and first.candidate_probs[0] < 1e-6


def test_belief_end_to_end_counts_and_reports_skips(roberta_dir, tmp_path):
    import pandas as pd
    import pyarrow as pa

    from factprobe.core.tables import base_manifest, write_dataset
    from factprobe.builders.templates.files import TEMPLATES_SCHEMA
    from tests.probes.methods.test_golden_prompts import mp_facts
    facts = pd.concat([mp_facts(), pd.DataFrame([
        {"fact_id": "c", "relation_id": "cap", "subject_id": "re", "object_id": "sd",
         "subject": "Reunion", "object": "Saint Denis", "subject_aliases": [],
         "object_aliases": [], "answers": ["Saint Denis"], "split": "", "source": ""}])])
    templates = pa.table({"template_id": ["cap/m1"], "relation_id": ["cap"],
                          "template": ["The capital of [X] is [Y]."], "style": ["statement"],
                          "origin": ["manual"], "parent_id": [""]}, schema=TEMPLATES_SCHEMA)
    folder = tmp_path / "mp"
    write_dataset(folder, {"facts": pa.Table.from_pandas(facts, preserve_index=False),
                           "templates": templates}, base_manifest("mp", "multiprompt", {}, {}, {}))
    out = tmp_path / "out"
    proc = factprobe_cli(["eval", "belief",
                          "--dataset", str(folder), "--model", str(roberta_dir), "--out",
                          str(out), "--top-k", "3"], cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "- skipped 1 of 3 pairs (multi-token objects): cap 1 of 3" \
        in proc.stdout.splitlines()
    m = json.loads((out / "metrics.json").read_text())
    # France (2 names, both answered "ĠParis": right) and Peru ("ĠParis": wrong) are kept;
    # Reunion's "Saint Denis" is two tokens: Acc@1 = (1 + 0) / 2
    assert (m["pairs"], m["prompts"], m["accuracy"]["value"]) == (2, 3, 0.5)
    assert m["skipped"] == {"pairs": 1, "of": 3, "prompts": 1,
                            "reasons": {"multi-token objects": {"cap": 1}},
                            "relations": []}
    assert m["match"] == "exact"
    rows = pd.read_parquet(out / "outputs.parquet")
    france = rows[(rows["stage"] == "prompts") & (rows["fact_id"] == "a")]
    assert [list(t) for t in france["candidate_tokens"]] == [["ĠParis", None]] * 2


def test_a_pseudo_log_likelihood_reads_the_spaced_tokens(roberta_dir):
    """The subject-only check's mask-filling reading on byte-level BPE: the tokens from a
    character on, a spaced token ("ĠLima") counted from its word, each masked in turn."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    backend = load_backend(BackendConfig(str(roberta_dir), kind="hf-masked"))
    tok = AutoTokenizer.from_pretrained(roberta_dir)
    model = AutoModelForMaskedLM.from_pretrained(roberta_dir).eval()
    lima, period, whole = backend.fill_mask([MaskRequest("Peru Lima", mask_each_from=5),
                                             MaskRequest("Peru.", mask_each_from=4),
                                             MaskRequest("Peru Lima", mask_each_from=0)])
    assert tok.convert_ids_to_tokens(lima.token_ids) == ["ĠLima"]
    assert tok.convert_ids_to_tokens(period.token_ids) == ["."]
    ids = tok("Peru Lima")["input_ids"]             # <s> P er u ĠLima </s>: no "Peru" alone
    assert whole.token_ids == ids[1:-1] and tok.convert_ids_to_tokens(ids[-2]) == "ĠLima"
    for pos, got in zip(range(1, len(ids) - 1), whole.token_logprobs):
        masked = list(ids)
        masked[pos] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([masked])).logits[0, pos]
        assert got == pytest.approx(float(torch.log_softmax(logits, -1)[ids[pos]]), abs=1e-5)
    assert lima.token_logprobs[0] == pytest.approx(whole.token_logprobs[-1], abs=1e-5)
