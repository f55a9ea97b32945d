"""MONITOR against values worked out by hand from the paper's equations (Wang et al., Sec. 4:
Eq. 1 PFD, Eq. 2 IRD, Eq. 3 MONITOR; Table 4's avg / max / min accuracy).

The example: relation r has three facts whose primary anchor matched (A, B, C), relation s two
facts whose anchor did not (D, E). R = 2 paraphrases, M = 2 negatives in r.

    fact  P+ (object's tokens)  paraphrases j=0, j=1   negatives m=0, m=1
    A     (0.8)                 (0.6), (0.4)           (0.2), (0.8)
    B     (0.9, 0.5)            (0.9, 0.5), (0.5, 0.1) (0.3, 0.5), (0.9, 0.1)
    C     (0.5)                 (0.5), (0.5)           (0.5), (0.1)

B's anchor was generated as " New York." with p = (0.9, 0.5, 0.99): the "." is no subword of
the object, so L_B = 2 (Eq. 1: "L_c is the length of the anchor in terms of the number of
subwords in the c-th object").

    PFD_A = (|0.8-0.6| + |0.8-0.4|) / 2                     = 0.3
    IRD_A = (|0.8-0.2| + |0.8-0.8|) / 2                     = 0.3
    PFD_B = ((0 + 0)/2 + (0.4 + 0.4)/2) / 2                 = 0.2
    IRD_B = ((0.6 + 0)/2 + (0 + 0.4)/2) / 2                 = 0.25
    PFD_C = 0,  IRD_C = (0 + 0.4) / 2                       = 0.2
    mean_l P+: A 0.8, B 0.7, C 0.5; sum = 2.0

    alphas 1/3 each: sqrt((0.09+0.09+0.09)/3) = 0.3; sqrt((0.04+0.0625+0.05)/3) = 0.225462;
                     sqrt((0+0.04+0)/3) = 0.115470; MONITOR = 0.640932 / 2 = 0.3205
    alphas (1,0,0):  (0.3 + 0.2 + 0) / 2                    = 0.25
    alphas (0,1,0):  (0.3 + 0.25 + 0.2) / 2                 = 0.375
    alphas (0,0,1):  (sqrt(0.09) + sqrt(0.05) + 0) / 2 = (0.3 + 0.223607) / 2 = 0.2618
    PFD = mean(0.3, 0.2, 0) = 0.1667, IRD = mean(0.3, 0.25, 0.2) = 0.25, probs = 2/3

Had the "." counted, B's anchor probability would be (0.9 + 0.5 + 0.99) / 3 = 0.7967 and
its foreign anchors would be compared on three tokens: MONITOR would not be 0.3205.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from factprobe.core.errors import UserError
from factprobe.evaluators.metrics import monitor as MO
from factprobe.evaluators.metrics.suite import MetricsOptions
from factprobe.evaluators.metrics.suites.monitor import monitor_metrics
from tests.inprocess import factprobe_cli

LN = math.log
ROOT = Path(__file__).resolve().parents[3]

FACTS = {  # fact: (relation, gold, anchor text, P+, paraphrases, negatives)
    "A": ("r", "Oslo", " Oslo.", (0.8,), [(0.6,), (0.4,)], [(0.2,), (0.8,)]),
    "B": ("r", "New York", " New York.", (0.9, 0.5), [(0.9, 0.5), (0.5, 0.1)],
          [(0.3, 0.5), (0.9, 0.1)]),
    "C": ("r", "Lima", " Lima", (0.5,), [(0.5,), (0.5,)], [(0.5,), (0.1,)]),
    "D": ("s", "Bern", " Rome", None, [], []),
    "E": ("s", "Kyiv", "", None, [], []),
}

# greedy answers over each relation's R x M frame-context combinations "{y-_m}. Q_j(x)":
#   r (3 facts, R = M = 2):  q0-neg0 A B C right -> 1;  q0-neg1 A only -> 1/3;
#                            q1-neg0 A B -> 2/3;        q1-neg1 none -> 0
#       r: max 1, min 0, avg (3 + 1 + 2 + 0) / 12 = 0.5
#   s (2 facts, R = 2, M = 1): q0-neg0 D E -> 1;  q1-neg0 D only -> 0.5
#       s: max 1, min 0.5, avg 3 / 4 = 0.75
#   Table 4: avg = (0.5 + 0.75) / 2 = 0.625, max = (1 + 1) / 2 = 1, min = (0 + 0.5) / 2 = 0.25;
#   micro (all answers pooled) = 9 / 16 = 0.5625. Pooling prompt indices across relations
#   would give min 0 (q1-neg1 exists only in r), not 0.25.
RIGHT = {("r", 0, 0): "ABC", ("r", 0, 1): "A", ("r", 1, 0): "AB", ("r", 1, 1): "",
         ("s", 0, 0): "DE", ("s", 1, 0): "D"}


def table() -> pd.DataFrame:
    rows = []
    for fid, (rel, gold, text, plus, par, neg) in FACTS.items():
        meta = {"relation_id": rel, "fact_id": fid, "gold": gold}
        gen = [LN(p) for p in plus] + ([LN(0.99)] if text.endswith(".") else []) \
            if plus else [LN(0.3)]
        rows.append({**meta, "stage": "anchor", "frame": "positive", "index": 0, "text": text,
                     "token_ids": list(range(len(gen))) if text else [],
                     "token_logprobs": gen})
        if plus:
            rows.append({**meta, "stage": "object", "frame": "positive", "index": 0,
                         "token_logprobs": [LN(p) for p in plus],
                         "n_paraphrases": len(par), "n_negatives": len(neg)})
        for frame, probs in (("paraphrase", par), ("negative", neg)):
            for i, p in enumerate(probs):
                rows.append({**meta, "stage": "foreign", "frame": frame, "index": i,
                             "token_logprobs": [LN(x) for x in p]})
    for (rel, j, m), right in RIGHT.items():
        for fid in [f for f, v in FACTS.items() if v[0] == rel]:
            gold = FACTS[fid][1]
            rows.append({"relation_id": rel, "fact_id": fid, "gold": gold, "stage": "frames",
                         "frame": "combination", "index": j, "negative": m,
                         "text": f" {gold}" if fid in right else " Quito"})
    return pd.DataFrame(rows)


def metrics(alphas=(1 / 3, 1 / 3, 1 / 3)) -> dict:
    return monitor_metrics(table(), None, {}, options=MetricsOptions(alphas=alphas,
                                                                     resamples=0))


def test_pfd_ird_and_anchor_probability_by_hand():
    per = MO.per_fact(table()).set_index("fact_id")
    assert per["pfd"].round(6).to_dict() == {"A": 0.3, "B": 0.2, "C": 0.0}
    assert per["ird"].round(6).to_dict() == {"A": 0.3, "B": 0.25, "C": 0.2}
    assert per["anchor_tokens"].to_dict() == {"A": 1, "B": 2, "C": 1}   # no "."
    m = metrics()
    assert (m["facts"], m["facts_with_anchor"]) == (5, 3)
    assert (m["pfd"]["value"], m["ird"]["value"]) == (0.1667, 0.25)
    assert m["anchor_probability"]["value"] == 0.6667


@pytest.mark.parametrize("alphas,want", [
    ((1 / 3, 1 / 3, 1 / 3), 0.3205),
    ((1.0, 0.0, 0.0), 0.25),
    ((0.0, 1.0, 0.0), 0.375),
    ((0.0, 0.0, 1.0), 0.2618),
])
def test_monitor_score_with_alphas_by_hand(alphas, want):
    m = metrics(alphas)
    assert m["monitor"]["value"] == want
    assert m["monitor"]["per_relation"]["r"]["value"] == want


def test_frame_accuracy_per_relation_then_averaged():
    fa = metrics()["frame_accuracy"]
    assert (fa["avg"]["value"], fa["max"], fa["min"]) == (0.625, 1.0, 0.25)
    assert fa["avg"]["micro"] == 0.5625
    assert fa["per_relation"] == {"r": {"max": 1.0, "min": 0.0, "prompts": 4},
                                  "s": {"max": 1.0, "min": 0.5, "prompts": 2}}
    assert fa["per_frame"]["r"] == {"q0-neg0": 1.0, "q0-neg1": 0.3333, "q1-neg0": 0.6667,
                                    "q1-neg1": 0.0}
    assert fa["avg"]["per_relation"]["s"]["value"] == 0.75


def test_relation_without_anchor_is_null_with_the_reason():
    m = metrics()
    for name in ("monitor", "pfd", "ird", "anchor_probability"):
        s = m[name]["per_relation"]["s"]
        assert s["value"] is None and s["n"] == 0
        assert s["reason"] == "no primary anchor equals its gold (0 of 2 facts)"
    assert m["notes"] == ["no anchor matched in relation s (2 facts): MONITOR/PFD/IRD are null"]


def test_run_without_any_anchor_is_null_not_missing():
    t = table()
    t = t[t["relation_id"] == "s"]
    m = monitor_metrics(t, None, {}, options=MetricsOptions(resamples=0))
    assert m["facts_with_anchor"] == 0
    for name in ("monitor", "pfd", "ird", "anchor_probability"):
        assert m[name]["value"] is None and "0 of 2 facts" in m[name]["reason"]
    assert m["notes"] == ["no anchor matched in relation s (2 facts): MONITOR/PFD/IRD are null"]


def test_outputs_from_before_the_object_stage_are_refused():
    t = table()
    with pytest.raises(UserError, match="older factprobe"):
        monitor_metrics(t[t["stage"] != "object"], None, {},
                        options=MetricsOptions(resamples=0))


def test_incomplete_foreign_stage_is_refused():
    t = table()
    drop = (t["stage"] == "foreign") & (t["fact_id"] == "B") & (t["frame"] == "negative") & \
        (t["index"] == 1)
    with pytest.raises(UserError, match="incomplete"):
        MO.per_fact(t[~drop])


# ------------------------------------------------------------------ through the command line

def fktc_dataset(folder: Path) -> Path:
    import pyarrow as pa

    from factprobe.core.tables import base_manifest, write_dataset
    facts = pd.DataFrame([
        {"fact_id": f"f{i}", "relation_id": "cap", "subject_id": f"s{i}", "object_id": o,
         "subject": s, "object": o, "subject_aliases": [], "object_aliases": [],
         "answers": [o], "split": "", "source": "", "negatives": ["Rome", "Lima"]}
        for i, (s, o) in enumerate([("France", "Paris"), ("Norway", "Oslo")])])
    templates = pd.DataFrame([
        {"template_id": "cap/m1", "relation_id": "cap",
         "template": "What is the capital of [X]? [Y].", "style": "question",
         "origin": "manual", "parent_id": "", "is_base": True},
        {"template_id": "cap/m2", "relation_id": "cap",
         "template": "Which city is the seat of [X]? [Y].", "style": "question",
         "origin": "manual", "parent_id": "", "is_base": False}])
    write_dataset(folder, {"facts": pa.Table.from_pandas(facts, preserve_index=False),
                           "templates": pa.Table.from_pandas(templates, preserve_index=False)},
                  base_manifest("tiny-fktc", "fktc", {}, {}, {}))
    return folder


def test_eval_says_when_no_anchor_matched(tiny_causal_dir, tmp_path):
    # an untrained model never answers "Paris" or "Oslo": the run succeeds, the metrics are
    # null with the reason, and the run's summary (stdout) ends with one line saying so
    data = fktc_dataset(tmp_path / "fktc")
    proc = factprobe_cli(["eval", "monitor", "--dataset", str(data), "--model",
                          str(tiny_causal_dir), "--out", str(tmp_path / "r"),
                          "--max-new-tokens", "2"], cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == \
        "- no anchor matched in relation cap (2 facts): MONITOR/PFD/IRD are null"
    m = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert m["monitor"]["value"] is None and "0 of 2 facts" in m["monitor"]["reason"]
    # 2 facts x R = 2 paraphrases x M = 2 negatives
    out = pd.read_parquet(tmp_path / "r" / "outputs.parquet")
    assert (out["stage"] == "frames").sum() == 8
