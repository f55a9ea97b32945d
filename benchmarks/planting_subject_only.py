"""Subject-only scores on a planted causal model: can a probe that reads only the subject tell
planted test facts from held-out ones? (It must not: only the subject-object link may differ.)

    python benchmarks/planting_subject_only.py --model data/models/planted \\
        --dataset data/datasets/sample-mc

Per test fact, three scores that never read the object (docs/planting.md):

  dot      log P("." | subject at a text's start), the start being the end-of-text token the
           training documents are packed with;
  own      the subject's own mean token log-probability at a text's start;
  entropy  the next-token entropy after the subject at the end of a ZP-LKE list of its
           relation's train pairs (up to 50, seeded), read as confidence (minus entropy).

Prints each score's AUROC of planted against held-out (0.5: not separable), with a 95%
bootstrap interval, overall and as JSON with --json.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def scores(model, tok, facts, examples: int = 50, seed: int = 0) -> dict[str, dict[str, float]]:
    import torch
    bos = tok.eos_token_id
    out: dict[str, dict[str, float]] = {"dot": {}, "own": {}, "entropy": {}}
    dot = tok(".")["input_ids"][0]
    train = facts[facts["split"] == "train"]
    test = facts[facts["split"] == "test"]
    with torch.no_grad():
        for rel, g in test.groupby("relation_id", sort=True):
            shots = train[train["relation_id"] == rel]
            rng = np.random.default_rng(seed)
            shots = shots.iloc[rng.permutation(len(shots))[:examples]]
            body = ", ".join(f"{x} {y}" for x, y in zip(shots["subject"], shots["object"]))
            for row in g.itertuples(index=False):
                ids = [bos] + tok(row.subject)["input_ids"]
                logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0], -1)
                out["dot"][row.fact_id] = float(logp[-1, dot])
                own = [float(logp[i - 1, ids[i]]) for i in range(1, len(ids))]
                out["own"][row.fact_id] = sum(own) / len(own)
                text = f"{body}, {row.subject}" if body else row.subject
                lp = torch.log_softmax(model(input_ids=torch.tensor(
                    [[bos] + tok(text)["input_ids"]])).logits[0, -1], -1)
                out["entropy"][row.fact_id] = float((lp.exp() * lp).sum())   # minus entropy
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from factprobe.core.tables import read_table
    from factprobe.evaluators.metrics.stats import auroc, auroc_interval
    meta = json.loads((Path(a.model) / "planted.json").read_text(encoding="utf-8"))
    planted, held = set(meta["planted"]), set(meta["held_out"])
    model = AutoModelForCausalLM.from_pretrained(a.model).eval()
    tok = AutoTokenizer.from_pretrained(a.model)
    facts = read_table(a.dataset, "facts").to_pandas()
    result = {}
    for name, by_fact in scores(model, tok, facts).items():
        pos = [v for f, v in by_fact.items() if f in planted]
        neg = [v for f, v in by_fact.items() if f in held]
        lo, hi = auroc_interval(pos, neg)
        result[name] = {"auroc": round(auroc(pos, neg), 3), "ci": [round(lo, 3), round(hi, 3)],
                        "planted": len(pos), "held_out": len(neg)}
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        for name, r in result.items():
            print(f"{name:8s} AUROC {r['auroc']:.3f} ({r['ci'][0]:.3f}-{r['ci'][1]:.3f}), "
                  f"{r['planted']} planted / {r['held_out']} held out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
