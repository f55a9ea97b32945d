"""Independent computations of every metric, written from docs/metrics/ and METHODS.md section
2 with plain Python loops over the rows of an outputs table. Nothing here imports
``evaluators``: the tests compare these numbers with ``factprobe report``'s metrics.json."""
from __future__ import annotations

import math
import string
import zlib
from collections import defaultdict

import numpy as np

PUNCT = set(string.punctuation)


def norm(text: str) -> str:
    text = "".join(" " if c in PUNCT else c for c in str(text).lower())
    return " ".join(text.split())


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def records(outputs, stage: str) -> list[dict]:
    return [r for r in outputs.to_dict("records") if r["stage"] == stage]


def summary(per_fact: dict[tuple[str, str], float]) -> dict:
    """{(relation, fact): value} -> micro, macro, per relation."""
    by_rel = defaultdict(list)
    for (rel, _), v in per_fact.items():
        by_rel[rel].append(v)
    return {"value": mean(per_fact.values()), "macro": mean(mean(v) for v in by_rel.values()),
            "n": len(per_fact), "per_relation": {r: mean(v) for r, v in by_rel.items()}}


def auroc(pos, neg) -> float:
    wins = 0.0
    for p in pos:
        for n in neg:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(pos) * len(neg))


def validity(per_fact_acc: dict, per_fact_score: dict, planted: dict) -> dict:
    pl, ho = set(planted["planted"]), set(planted["held_out"])
    acc_p = [v for (_, f), v in per_fact_acc.items() if f in pl]
    acc_h = [v for (_, f), v in per_fact_acc.items() if f in ho]
    sc_p = [v for (_, f), v in per_fact_score.items() if f in pl]
    sc_h = [v for (_, f), v in per_fact_score.items() if f in ho]
    return {"planted": mean(acc_p), "held_out": mean(acc_h), "auroc": auroc(sc_p, sc_h),
            "n_planted": len(acc_p), "n_held_out": len(acc_h)}


def bootstrap_ci(per_fact: dict, *, resamples: int = 1000, seed: int = 0) -> dict:
    """The documented recipe, one resample at a time: facts resampled within each relation
    (generator seeded with [seed, crc32(relation)], blocks of 100 resamples)."""
    by_rel = defaultdict(list)
    for (rel, fact), v in sorted(per_fact.items()):
        by_rel[rel].append(v)
    sums = {}
    for rel in sorted(by_rel):
        vals = np.array(by_rel[rel], dtype=float)
        rng = np.random.default_rng([seed, zlib.crc32(rel.encode())])
        draws = []
        left = resamples
        while left:
            block = min(100, left)
            draws.extend(rng.integers(0, len(vals), size=(block, len(vals))))
            left -= block
        sums[rel] = [float(sum(vals[i] for i in idx)) for idx in draws]
    n_total = sum(len(v) for v in by_rel.values())
    micro = [sum(sums[r][b] for r in sums) / n_total for b in range(resamples)]
    macro = [mean(sums[r][b] / len(by_rel[r]) for r in sums) for b in range(resamples)]
    per = {r: np.percentile([s / len(by_rel[r]) for s in sums[r]], [2.5, 97.5]) for r in sums}
    return {"micro": np.percentile(micro, [2.5, 97.5]), "macro": np.percentile(macro, [2.5, 97.5]),
            "per_relation": per}


# ------------------------------------------------------------------------------- ZP-LKE

def zp_lke(outputs, planted: dict | None, *, compat: bool = False, ks=(0.0, 0.5)) -> dict:
    questions = defaultdict(list)
    for r in records(outputs, "mc"):
        key = (r["relation_id"], r["fact_id"], r.get("seed"), r.get("n_examples"),
               r.get("template_id"))
        questions[key].append((r["option"], r["logprob"], bool(r["is_gold"])))
    top_n = max(k[3] for k in questions)
    q_out = {}
    for key, opts in questions.items():
        opts.sort()
        best = max(lp for _, lp, _ in opts)
        z = sum(math.exp(lp - best) for _, lp, _ in opts)
        gold = [o for o in opts if o[2]][0]
        winners = [o for o in opts if o[1] == best]
        if compat:
            correct = gold[1] == best and len(winners) == 1
        else:
            correct = winners[0][2]
        q_out[key] = {"correct": float(correct), "gold_prob": math.exp(gold[1] - best) / z,
                      "top_prob": 1 / z}
    per_fact = defaultdict(list)
    for key, q in q_out.items():
        if key[3] == top_n:
            per_fact[(key[0], key[1])].append(q)
    acc = {k: mean(q["correct"] for q in v) for k, v in per_fact.items()}
    mass = {k: mean(q["gold_prob"] for q in v) for k, v in per_fact.items()}
    at_k = {}
    main_q = [(k, q) for k, q in q_out.items() if k[3] == top_n]
    for K in ks:
        kept = defaultdict(list)
        for k, q in main_q:
            if q["top_prob"] >= K:
                kept[(k[0], k[1])].append(q["correct"])
        at_k[f"{K:.1f}"] = {"value": mean(mean(v) for v in kept.values()) if kept else None,
                            "share": sum(len(v) for v in kept.values()) / len(main_q)}
    resp = defaultdict(list)
    for r in records(outputs, "response"):
        if r.get("n_examples") == top_n:
            g, o = norm(r["gold"]), norm(r["text"])
            resp[(r["relation_id"], r["fact_id"])].append(float(bool(g) and f" {g} " in f" {o} "))
    resp = {k: mean(v) for k, v in resp.items()}
    out = {"mc_accuracy": summary(acc), "probability_mass": summary(mass),
           "response_accuracy": summary(resp), "accuracy_at_k": at_k, "per_fact": acc,
           "known": {f for (_, f), v in acc.items() if v > 0.5},
           "ci": bootstrap_ci(acc)}
    if planted:
        out["validity"] = validity(acc, mass, planted)
    return out


# ------------------------------------------------------------------------------- BELIEF

def _split(n: int, bins: int) -> list[int]:
    base, extra = divmod(n, bins)
    return [base + (1 if i < extra else 0) for i in range(bins)]


def overconf(items: list[tuple], bins: int = 10) -> tuple[float, list]:
    """items: (confidence, correct, tie-break key...)."""
    items = sorted(items, key=lambda x: (-x[0],) + tuple(x[2:]))
    out, curve, start = [], [], 0
    for size in _split(len(items), bins):
        part = items[start:start + size]
        start += size
        if not part:
            continue
        c, a = mean(x[0] for x in part), mean(x[1] for x in part)
        out.append(c - a)
        curve.append((c, a, len(part)))
    return mean(out), curve


def _bias(p) -> float:
    k = len(p)
    h = -sum(x * math.log(x) for x in p if x > 0)
    return 1 - h / math.log(k)


def bias(outputs) -> dict:
    by_rel = defaultdict(list)
    for r in records(outputs, "content_free"):
        by_rel[r["relation_id"]].append(r)
    per = {}
    for rel, rows in by_rel.items():
        width = len(rows[0]["candidate_probs"])
        valid = [i for i in range(width)
                 if all(not math.isnan(float(r["candidate_probs"][i])) for r in rows)]
        by_t = defaultdict(list)
        for r in rows:
            q = [float(r["candidate_probs"][i]) for i in valid]
            s = sum(q)
            by_t[r["template_id"]].append([x / s for x in q])
        dists = {t: [mean(col) for col in zip(*v)] for t, v in by_t.items()}
        single = mean(_bias(d) for d in dists.values())
        avg = [mean(col) for col in zip(*dists.values())]
        per[rel] = (single, _bias(avg))
    return {"single_prompt": mean(v[0] for v in per.values()),
            "multi_prompt": mean(v[1] for v in per.values()), "per_relation": per}


def _consist(preds: list, same) -> float:
    m = len(preds)
    agree = sum(1 for i in range(m) for j in range(i + 1, m) if same(preds[i], preds[j]))
    return agree / (m * (m - 1) / 2)


def _belief_family(prompts: list[dict], same, conf_items, planted, score_of=None) -> dict:
    by_pair = defaultdict(list)
    for p in prompts:
        by_pair[(p["relation_id"], p["fact_id"])].append(p)
    acc = {k: mean(p["correct"] for p in v) for k, v in by_pair.items()}
    cons = {k: _consist([p["prediction"] for p in v], same)
            for k, v in by_pair.items() if len(v) >= 2}
    # coverage
    avg, oracle = {}, {}
    template_acc = defaultdict(lambda: defaultdict(list))
    for k, v in by_pair.items():
        per_t = defaultdict(list)
        for p in v:
            per_t[p["template_id"]].append(p["correct"])
        avg[k] = mean(mean(x) for x in per_t.values())
        oracle[k] = float(any(p["correct"] for p in v))
        for t, x in per_t.items():
            # Maximum: the best subject name's prompt per fact (the paper's footnote 16)
            template_acc[k[0]][t].append(max(x))
    pairs_per_rel = defaultdict(int)
    for k in by_pair:
        pairs_per_rel[k[0]] += 1
    best = {rel: max(mean(v) for v in ts.values()) for rel, ts in template_acc.items()}
    maximum = sum(best[r] * n for r, n in pairs_per_rel.items()) / sum(pairs_per_rel.values())
    out = {"accuracy": summary(acc), "consistency": summary(cons), "average": summary(avg),
           "maximum": maximum, "maximum_per_relation": best, "oracle": summary(oracle),
           "per_pair": acc,
           "units": {(p["fact_id"], p["template_id"], p["subject_name"]) for p in prompts
                     if p["correct"]}}
    if conf_items:
        out["overconf"], out["calibration"] = overconf(conf_items)
    if planted:
        score = acc if score_of is None else {k: mean(score_of(p) for p in v)
                                               for k, v in by_pair.items()}
        out["validity"] = validity(acc, score, planted)
    # the exact Acc@1 distribution: per-pair Bernoulli(k/m)
    ps = list(acc.values())
    out["acc1_expected"] = mean(ps)
    out["acc1_std_theory"] = math.sqrt(sum(p * (1 - p) for p in ps)) / len(ps)
    return out


def belief(outputs, planted) -> dict:
    prompts = []
    for r in records(outputs, "prompts"):
        cands = [float(x) for x in r["candidate_probs"]]
        if all(math.isnan(x) for x in cands):
            continue
        top = str(r["top_tokens"][0])
        # exact on tokens (Sec. 2.1): the top-1 token is the token of a single-token gold name
        # (the backend's candidate_tokens; without them, the names themselves)
        toks = r.get("candidate_tokens")
        if toks is None or isinstance(toks, float):
            toks = list(r["gold_names"])
        golds = {str(t) for t, x in zip(toks, cands) if t is not None and not math.isnan(x)}
        prompts.append({**r, "prediction": top, "correct": float(top in golds),
                        "confidence": float(r["top_probs"][0]),
                        "gold_prob": sum(x for x in cands if not math.isnan(x))})
    items = [(p["confidence"], p["correct"], p["prompt_id"], p["fact_id"], p["template_id"],
              p["subject_name"]) for p in prompts]
    out = _belief_family(prompts, lambda a, b: a == b, items, planted,
                         score_of=lambda p: p["gold_prob"])
    out["bias"] = bias(outputs)
    out["skipped_pairs"] = len({r["fact_id"] for r in records(outputs, "prompts")}) - \
        len({p["fact_id"] for p in prompts})
    return out


_NLP = None


def lemmas(text: str) -> list[str]:
    global _NLP
    if _NLP is None:
        import spacy
        _NLP = spacy.blank("en")
        _NLP.add_pipe("lemmatizer", config={"mode": "lookup"})
        _NLP.initialize()
    return [t.lemma_ for t in _NLP(str(text).lower()) if not t.is_punct and not t.is_space]


def inside(outer: list, inner: list) -> bool:
    if not inner:
        return False
    return any(outer[i:i + len(inner)] == inner for i in range(len(outer) - len(inner) + 1))


def two_way(a: str, b: str) -> bool:
    la, lb = lemmas(a), lemmas(b)
    return inside(la, lb) or inside(lb, la)


def belief_icl(outputs, planted) -> dict:
    greedy = records(outputs, "greedy")
    samples = defaultdict(list)
    for r in records(outputs, "samples"):
        samples[(r["context"], r["prompt_id"])].append(r["text"] or "")
    out = {}
    for ctx in sorted({r["context"] for r in greedy}):
        prompts = []
        for r in greedy:
            if r["context"] != ctx:
                continue
            text = r["text"] or ""
            correct = any(inside(lemmas(text), lemmas(g)) for g in r["gold_names"])
            word = text.strip().strip(string.punctuation + " ").strip()
            prompts.append({**r, "prediction": text, "correct": float(correct),
                            "one_word": float(len(word.split()) == 1)})
        items = []
        for p in prompts:
            got = samples.get((ctx, p["prompt_id"]))
            if got:
                conf = mean(float(two_way(p["prediction"], s)) for s in got)
                items.append((conf, p["correct"], p["prompt_id"], p["fact_id"]))
        res = _belief_family(prompts, two_way, items, planted)
        res["one_word_rate"] = mean(p["one_word"] for p in prompts)
        res["sampled_prompts"] = len(items)
        out[ctx] = res
    return out


# ------------------------------------------------------------------------------ MONITOR

def monitor(outputs, planted, *, alphas=(1 / 3, 1 / 3, 1 / 3)) -> dict:
    """Wang et al., Sec. 4: the primary anchor is P(o | s, r, i+) over the object's subwords
    (the ``object`` rows), kept when the positive prompt's greedy answer is the gold (Exact
    Match after trimming punctuation); Eqs. 1-3; accuracy over each relation's frame-context
    prompts with avg / max / min per relation, then averaged over relations (Table 4)."""
    a1, a2, a3 = alphas
    facts = {}
    for r in records(outputs, "anchor"):
        trimmed = str(r["text"]).strip().strip(string.punctuation + " ").strip()
        ok = trimmed == r["gold"] and len(r["token_ids"]) > 0
        facts[r["fact_id"]] = {"rel": r["relation_id"], "matched": ok, "P": None,
                               "par": {}, "neg": {}}
    for r in records(outputs, "object"):
        facts[r["fact_id"]]["P"] = [math.exp(x) for x in r["token_logprobs"]]
    for r in records(outputs, "foreign"):
        lp = r.get("watched_logprobs")
        if lp is None or (isinstance(lp, float) and math.isnan(lp)):
            lp = r["token_logprobs"]
        side = "par" if r["frame"] == "paraphrase" else "neg"
        facts[r["fact_id"]][side][int(r["index"])] = [math.exp(x) for x in lp]

    def dist(P, others):
        vals = []
        for o in others:
            o = list(o[:len(P)]) + [0.0] * max(0, len(P) - len(o))
            vals.append(mean(abs(p - q) for p, q in zip(P, o)))
        return mean(vals)

    per = {}
    for fid, f in facts.items():
        if not f["matched"]:
            continue
        pfd = dist(f["P"], [f["par"][j] for j in sorted(f["par"])])
        ird = dist(f["P"], [f["neg"][m] for m in sorted(f["neg"])])
        per[fid] = {"rel": f["rel"], "pfd": pfd, "ird": ird, "anchor": mean(f["P"]),
                    "score": math.sqrt(a1 * pfd ** 2 + a2 * ird ** 2 + a3 * pfd * ird)}

    def mon(items):
        return sum(x["score"] for x in items) / sum(x["anchor"] for x in items) \
            if items else None

    rels = sorted({f["rel"] for f in facts.values()})
    prompts = defaultdict(lambda: defaultdict(list))      # relation -> prompt -> answers
    fact_frames = defaultdict(list)
    for r in records(outputs, "frames"):
        t, g = norm(r["text"]), norm(r["gold"])
        ok = float(t == g or t.startswith(g + " "))
        neg = r.get("negative")
        neg = None if neg is None or math.isnan(neg) else int(neg)
        prompts[r["relation_id"]][(r["frame"], int(r["index"]), neg)].append(ok)
        fact_frames[(r["relation_id"], r["fact_id"])].append(ok)
    rel_acc = {rel: [mean(v) for v in p.values()] for rel, p in prompts.items()}
    rel_avg = {rel: mean(x for v in p.values() for x in v) for rel, p in prompts.items()}
    out = {"monitor": mon(list(per.values())),
           "per_relation": {rel: mon([x for x in per.values() if x["rel"] == rel])
                            for rel in rels},
           "pfd": mean(x["pfd"] for x in per.values()) if per else None,
           "ird": mean(x["ird"] for x in per.values()) if per else None,
           "anchor_probability": mean(x["anchor"] for x in per.values()) if per else None,
           "facts_with_anchor": len(per),
           "anchor_match": mean(float(f["matched"]) for f in facts.values()),
           "frame_avg": mean(rel_avg.values()),
           "frame_max": mean(max(v) for v in rel_acc.values()),
           "frame_min": mean(min(v) for v in rel_acc.values()),
           "fact_frame_acc": {k: mean(v) for k, v in fact_frames.items()}}
    if planted:
        acc = {(f["rel"], fid): float(f["matched"]) for fid, f in facts.items()}
        score = {(f["rel"], fid): (mean(f["P"]) if f["matched"] else 0.0)
                 for fid, f in facts.items()}
        out["validity"] = validity(acc, score, planted)
    return out

