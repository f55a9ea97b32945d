"""Held-back outputs tables: random but well-formed ``outputs.parquet`` of every method, drawn
from a seed the test picks, written as run folders ``factprobe report`` reads. Nothing here
imports the metric code."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

WORDS = ["Paris", "Rome", "Oslo", "Lima", "guitar", "guitars", "a guitar", "the mice", "mouse",
         "Nobel Prize", "prize", "Berlin", "Tokyo", "children", "child", "New York", "York"]


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(n)]


def planted_for(fact_ids: list[str], rng) -> dict:
    ids = sorted(fact_ids)
    rng.shuffle(ids)
    third = len(ids) // 3
    return {"planted": sorted(ids[:third + 2]), "held_out": sorted(ids[third + 2:2 * third + 3])}


# ------------------------------------------------------------------------------ ZP-LKE, prompt

def mc_outputs(rng, *, method: str = "zp-lke", relations: int = 3, seeds=(0, 1),
               ns=(2, 5), ties: bool = True) -> pd.DataFrame:
    rows = []
    for r in range(relations):
        rel = f"rel:r{r}"
        n_facts = int(rng.integers(6, 12))
        n_opt = int(rng.integers(3, 6))
        tid = f"{rel}/m1"
        for f in range(n_facts):
            fid = f"f{r}{f:02d}"
            gold_pos = int(rng.integers(n_opt))
            gold = f"obj{gold_pos}-{fid}"
            settings = [(s, n) for s in seeds for n in ns] if method == "zp-lke" else [(None, 0)]
            for s, n in settings:
                strength = rng.normal(0.5 + (0.8 if f % 2 else 0.0), 1.0)
                lps = rng.normal(-4, 1.2, size=n_opt)
                lps[gold_pos] += strength
                if ties and rng.random() < 0.15:          # a tie with the gold
                    other = (gold_pos + 1) % n_opt
                    lps[other] = lps[gold_pos]
                lps = np.round(lps, 6)
                meta = {"fact_id": fid, "relation_id": rel, "gold": gold, "n_examples": n}
                if method == "zp-lke":
                    meta.update(seed=s, corrupted=0)
                else:
                    meta.update(template_id=tid)
                pid = f"p-{fid}-{s}-{n}"
                for k in range(n_opt):
                    text = gold if k == gold_pos else f"obj{k}-{fid}"
                    rows.append({**meta, "prompt_id": pid, "stage": "mc", "kind": "score",
                                 "option": float(k), "option_text": " " + text,
                                 "is_gold": k == gold_pos, "token_logprobs": [float(lps[k])],
                                 "logprob": float(lps[k]), "n_tokens": 1})
                say = rng.random()
                text = (f" {gold}, next" if say < 0.35 else f" {gold}0 more" if say < 0.5
                        else f" {gold.upper()}." if say < 0.6 else " something else")
                rows.append({**meta, "prompt_id": pid, "stage": "response", "kind": "generate",
                             "sample": -1.0, "text": text, "token_ids": [1, 2, 3],
                             "token_logprobs": [-1.0, -1.0, -1.0], "logprob": -3.0,
                             "n_tokens": 3})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- BELIEF

def belief_outputs(rng, *, relations: int = 3) -> pd.DataFrame:
    rows = []
    vocab = ["Paris", "Rome", "Oslo", "Lima", "Bern", "the", "."]
    for r in range(relations):
        rel = f"rel:b{r}"
        templates = [f"{rel}/t{t}" for t in range(int(rng.integers(2, 5)))]
        n_pairs = int(rng.integers(8, 14))
        candidates = ["Paris", "Rome", "Oslo", "Lima", "Saint Denis"]
        for p in range(n_pairs):
            fid = f"b{r}{p:02d}"
            gold = candidates[int(rng.integers(4))]
            names = [gold] if p % 5 else [gold, "Saint Denis"]
            single = p % 7 != 3                          # some pairs: no single-token name
            cand = [round(float(rng.random() * 0.3), 6) if single and n != "Saint Denis"
                    else float("nan") for n in names]
            skill = rng.random()
            subjects = ["S", "S2"] if p % 3 == 0 else ["S"]
            for t in templates:
                for sn in subjects:
                    if rng.random() < skill:
                        top = gold if rng.random() < 0.8 else gold.lower()
                    else:
                        top = vocab[int(rng.integers(len(vocab)))]
                    probs = np.sort(rng.dirichlet(np.ones(4)))[::-1]
                    if rng.random() < 0.1:
                        probs[0] = 0.5                    # ties in confidence
                    rows.append({"fact_id": fid, "relation_id": rel, "subject_id": f"s-{fid}",
                                 "template_id": t, "subject_name": f"{sn}-{fid}", "gold": gold,
                                 "gold_names": names, "prompt_id": f"p-{fid}-{t}-{sn}",
                                 "stage": "prompts", "kind": "fill_mask",
                                 "top_tokens": [top, "x", "y", "z"],
                                 "top_probs": [round(float(x), 6) for x in probs],
                                 "candidate_probs": cand})
        for t in templates:
            for cf in ("N/A", "", "?"):
                probs = rng.dirichlet(np.ones(len(candidates)) * 0.7)
                probs = [round(float(x) * 0.6, 6) for x in probs]
                probs[-1] = float("nan")                  # "Saint Denis": two tokens
                rows.append({"relation_id": rel, "template_id": t, "prompt_id": f"cf-{t}-{cf}",
                             "stage": "content_free", "kind": "fill_mask",
                             "top_tokens": ["x"], "top_probs": [0.5], "candidate_probs": probs,
                             "content_free": cf, "candidates": candidates})
    return pd.DataFrame(rows)


def icl_outputs(rng, *, relations: int = 2, contexts=("zero", "4-template"),
                samples: int = 6) -> pd.DataFrame:
    rows = []
    answers = {"guitar": ["guitars", " a guitar.", "Guitar", "the guitar player"],
               "mouse": [" the mice", "mouse.", "Mouse and cat"],
               "New York": [" New York City", "York", "new york."],
               "child": ["children", " a child", "Child."]}
    wrong = ["Paris", " Rome.", "the city of Oslo is big", "", "Lima, Peru"]
    golds = list(answers)
    for r in range(relations):
        rel = f"rel:i{r}"
        templates = [f"{rel}/t{t}" for t in range(int(rng.integers(2, 4)))]
        for p in range(int(rng.integers(6, 10))):
            fid = f"i{r}{p:02d}"
            gold = golds[int(rng.integers(len(golds)))]
            names = [gold] + (["kid"] if gold == "child" else [])
            for ctx in contexts:
                skill = rng.random() * (1.0 if ctx == "zero" else 1.3)
                for t in templates:
                    pid = f"p-{ctx}-{fid}-{t}"
                    good = rng.random() < skill
                    options = answers[gold] if good else wrong
                    text = options[int(rng.integers(len(options)))]
                    meta = {"fact_id": fid, "relation_id": rel, "subject_id": f"s-{fid}",
                            "template_id": t, "subject_name": f"S-{fid}", "context": ctx,
                            "gold": gold, "gold_names": names, "prompt_id": pid}
                    rows.append({**meta, "stage": "greedy", "kind": "generate", "sample": -1,
                                 "text": text, "token_ids": [1], "token_logprobs": [-0.5],
                                 "logprob": -0.5, "n_tokens": 1})
                    if rng.random() < 0.5:
                        for s in range(samples):
                            pool = answers[gold] + wrong
                            st = text if rng.random() < 0.5 else pool[int(rng.integers(len(pool)))]
                            rows.append({**meta, "stage": "samples", "kind": "generate",
                                         "sample": s, "text": st, "token_ids": [1],
                                         "token_logprobs": [-0.5], "logprob": -0.5,
                                         "n_tokens": 1})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------- MONITOR

def monitor_outputs(rng, *, relations: int = 3, R: int = 3, M: int = 2,
                    compat: bool = False, unmatched: int = 1) -> pd.DataFrame:
    """A MONITOR run: anchors that are the gold's words and a "." (the object stage scores
    the words only), greedy answers over the R x M frame-context combinations, foreign
    anchors over the object's tokens; the last ``unmatched`` relations match no anchor."""
    rows = []
    for r in range(relations + unmatched):
        rel = f"rel:m{r}"
        for f in range(int(rng.integers(6, 11))):
            fid = f"m{r}{f:02d}"
            gold = ["Paris", "New York", "Oslo"][f % 3]
            L = len(gold.split())                         # the object's tokens
            match = r < relations and rng.random() < 0.65
            anchor_text = f" {gold}." if match else " Rome"
            a_lp = np.round(np.log(rng.uniform(0.05, 0.95, size=L + 1)), 6).tolist()
            meta = {"fact_id": fid, "relation_id": rel, "gold": gold}
            rows.append({**meta, "frame": "positive", "index": 0, "prompt_id": f"a-{fid}",
                         "stage": "anchor", "kind": "generate", "sample": -1,
                         "text": anchor_text, "token_ids": list(range(L + 1)),
                         "token_logprobs": a_lp, "logprob": float(sum(a_lp)),
                         "n_tokens": L + 1})
            if match:
                rows.append({**meta, "frame": "positive", "index": 0, "prompt_id": f"a-{fid}",
                             "stage": "object", "kind": "score", "option": 0.0,
                             "is_gold": True, "token_logprobs": a_lp[:L],
                             "logprob": float(sum(a_lp[:L])), "n_tokens": L,
                             "n_paraphrases": R, "n_negatives": M})
            for j in range(R):
                for m in range(M):
                    say = rng.random()
                    text = (f" {gold}" if say < 0.4 else f" {gold}, of course" if say < 0.55
                            else f" {gold}ian" if say < 0.65 else " Lima")
                    rows.append({**meta, "frame": "combination", "index": j, "negative": m,
                                 "prompt_id": f"fr-{fid}-{j}-{m}", "template_id": f"{rel}/q{j}",
                                 "stage": "frames", "kind": "generate", "sample": -1,
                                 "text": text, "token_ids": [1], "token_logprobs": [-1.0],
                                 "logprob": -1.0, "n_tokens": 1})
            if not match:
                continue
            for frame, idx in [("paraphrase", j) for j in range(R)] + \
                    [("negative", m) for m in range(M)]:
                n = L if not compat else int(rng.integers(1, L + 1))
                lp = np.round(np.log(rng.uniform(0.01, 0.99, size=n)), 6).tolist()
                row = {**meta, "frame": frame, "index": idx,
                       "prompt_id": f"fo-{fid}-{frame}-{idx}", "stage": "foreign"}
                if compat:
                    row.update(kind="generate", sample=-1, text="x", token_ids=[1] * n,
                               token_logprobs=[-1.0] * n, logprob=-1.0 * n, n_tokens=n,
                               watched_logprobs=lp)
                else:
                    row.update(kind="score", option=0.0, is_gold=True, token_logprobs=lp,
                               logprob=float(sum(lp)), n_tokens=n)
                rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------- run folders

def write_run(folder: Path, method: str, outputs: pd.DataFrame, *, dataset: str = "synth",
              sha: str = "sha-1", model_dir: Path | None = None, config: dict | None = None
              ) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    outputs.to_parquet(folder / "outputs.parquet", index=False)
    run = {"method": method, "method_config": config or {},
           "dataset": {"name": dataset, "facts_sha256": sha, "kind": "test",
                       "path": f"data/datasets/{dataset}"},
           "backend": {"model": str(model_dir) if model_dir else "no-such-model"},
           "model": {"name": str(model_dir) if model_dir else "no-such-model"}}
    (folder / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    return folder


def model_dir(root: Path, planted: dict, name: str = "planted") -> Path:
    d = root / "models" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "planted.json").write_text(json.dumps(planted), encoding="utf-8")
    return d


def zp_lke_report(root: Path, outputs: pd.DataFrame, planted: dict) -> tuple[dict, str, Path]:
    """One ZP-LKE run on a planted model of ``planted``, through ``factprobe report --html``:
    its validity block (the report's metrics.json), report.md's text and the report folder."""
    from tests.evaluators.report.test_report_cli import cli
    model = model_dir(root, planted)
    write_run(root / "runs" / "z", "zp-lke", outputs, dataset="mc", model_dir=model)
    out = root / "rep"
    proc = cli("report", "--results", str(root / "runs"), "--out", str(out), "--no-plots",
               "--html", "--bootstrap", "200")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads(next((out / "runs").rglob("metrics.json")).read_text())
    return metrics["validity"], (out / "report.md").read_text(), out
