"""BELIEF-ICL generation and MONITOR's teacher-forced anchors: factprobe against peers.

    python benchmarks/bench_generate.py --threads 1           # CPU: GPT-2 4 layers x 256, fp32
    python benchmarks/bench_generate.py --model llama-1b --device cuda --dtype bfloat16

Synthetic prompts in the methods' shapes, one random-weight model, one process:

  belief-icl greedy   4-shot "Q: The capital of X is [MASK].\\nA: Y." prompts, 10 new tokens,
                      stop at a newline. factprobe ``generate`` vs lm-eval ``generate_until``
                      (same prompts, ``until=["\\n"]``, ``max_gen_toks=10``, greedy) vs a plain
                      ``model.generate`` per prompt; texts compared.
  belief-icl samples  100 samples per prompt (multinomial, temperature 1, no top-k). factprobe
                      (one shared prefill, seeded per sample) vs ``model.generate(
                      num_return_sequences=100, do_sample=True, top_k=0)`` per prompt vs lm-eval
                      ``generate_until`` on 100 repeats of each prompt (what a task with
                      ``repeats: 100`` runs). Samples differ by design: speed only.
  monitor             13 prompts per fact (7 paraphrases, 1 positive, 5 negative interference
                      prompts), teacher-forced log-probs of the anchor answer's tokens:
                      factprobe ``score`` with ``continuation_ids`` (what ``token_probs`` and
                      the MONITOR probe use) vs lm-eval ``loglikelihood`` on the same
                      (prompt, answer) pairs vs a plain full-sequence loop; largest difference.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import Timer  # noqa: E402

RELATIONS = [("The capital of [X] is [MASK].", "What is the capital of [X]?"),
             ("[X] was born in [MASK].", "Where was [X] born?"),
             ("[X] speaks [MASK].", "Which language does [X] speak?"),
             ("[X] works for [MASK].", "Who does [X] work for?")]
PARAPHRASES = ["What is the [R] of [X]?", "Which [R] does [X] have?", "Name the [R] of [X].",
               "[X] has which [R]?", "Tell me the [R] of [X].", "What [R] belongs to [X]?",
               "The [R] of [X] is what?"]


def belief_prompts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    subjects = common.unique_names(rng, n + 40, words=2)
    objects = common.unique_names(rng, 60, words=1)
    out = []
    for i in range(n):
        tpl = RELATIONS[i % len(RELATIONS)][0]
        shots = [(subjects[n + int(k)], objects[int(rng.integers(len(objects)))])
                 for k in rng.choice(40, size=4, replace=False)]
        lines = ["Predict the [MASK] in each sentence in one word."]
        lines += [f"Q: {tpl.replace('[X]', x)}\nA: {y}." for x, y in shots]
        lines.append(f"Q: {tpl.replace('[X]', subjects[i])}\nA:")
        out.append("\n".join(lines))
    return out


def monitor_pairs(facts: int, seed: int = 0) -> list[tuple[str, str]]:
    """(prompt, answer) pairs: per fact 7 paraphrases, 1 positive, 5 negative prompts."""
    rng = np.random.default_rng(seed + 1)
    subjects = common.unique_names(rng, facts, words=2)
    objects = common.unique_names(rng, 40, words=1)
    rels = ["capital", "currency", "language", "founder"]
    pairs = []
    for i, x in enumerate(subjects):
        rel = rels[i % len(rels)]
        gold = objects[int(rng.integers(len(objects)))]
        qs = [p.replace("[R]", rel).replace("[X]", x) for p in PARAPHRASES]
        negs = [o for o in rng.choice(objects, size=6, replace=False) if o != gold][:5]
        prompts = [f"{q}\nAnswer:" for q in qs] + [f"{gold}. {qs[0]}\nAnswer:"]
        prompts += [f"{y}. {qs[0]}\nAnswer:" for y in negs]
        pairs += [(p, f" {gold}") for p in prompts]
    return pairs


def lm_eval_model(model, tok, batch_size: int, device: str):
    from lm_eval.models.huggingface import HFLM
    return HFLM(pretrained=model, tokenizer=tok, batch_size=batch_size, device=device,
                max_length=common.max_positions(model))


def lm_eval_generate(lm, prompts: list[str], gen_kwargs: dict) -> list[str]:
    from lm_eval.api.instance import Instance
    reqs = [Instance(request_type="generate_until", doc={}, arguments=(p, dict(gen_kwargs)),
                     idx=i) for i, p in enumerate(prompts)]
    return lm.generate_until(reqs, disable_tqdm=True)


def plain_generate(model, tok, prompt: str, device: str, samples: int = 0) -> list[list[int]]:
    import torch
    ids = torch.tensor([tok(prompt, add_special_tokens=False)["input_ids"]], device=device)
    kw = dict(do_sample=True, num_return_sequences=samples, top_k=0, top_p=1.0,
              temperature=1.0) if samples else dict(do_sample=False)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10,
                         stop_strings=["\n"], tokenizer=tok, pad_token_id=tok.pad_token_id,
                         **kw)
    return [row[ids.shape[1]:].tolist() for row in out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--greedy-prompts", type=int, default=40)
    ap.add_argument("--sample-prompts", type=int, default=4)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--monitor-facts", type=int, default=20)
    common.add_model_args(ap)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lm-eval-batch-size", type=int, default=32)
    ap.add_argument("--skip-lm-eval", action="store_true")
    ap.add_argument("--skip-plain", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="write the numbers to this file")
    args = ap.parse_args()

    import torch
    torch.set_grad_enabled(False)
    if args.threads:
        torch.set_num_threads(args.threads)
    from factprobe.probes.backends import BackendConfig
    from factprobe.probes.backends.hf_causal import HFCausal
    from factprobe.probes.requests import GenerateRequest, ScoreRequest

    tok, model = common.model_from_args(args)
    backend = HFCausal(model, tok, args.device, BackendConfig("bench", device=args.device,
                                                              batch_size=args.batch_size))
    lm = None if args.skip_lm_eval else lm_eval_model(model, tok, args.lm_eval_batch_size,
                                                       args.device)
    result: dict = {"benchmark": "generation", "model": args.model, "dtype": args.dtype,
                    "device": args.device, "threads": torch.get_num_threads(),
                    "parameters": int(sum(p.numel() for p in model.parameters())),
                    "machine": common.machine(), "versions": common.versions(),
                    "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:])}
    # Warm-up on a full batch of prompts of the timed shape, other prompts than the timed
    # ones, for each implementation: on a GPU the first calls at new shapes pay the allocator's
    # growth and the kernels' first launches, and whichever ran first paid them in its time
    # (the first H200 run timed factprobe's greedy first, after a 2-token warm-up only).
    warm = belief_prompts(min(args.batch_size, max(1, args.greedy_prompts)), seed=99)
    backend.generate([GenerateRequest(p, 10, stop=("\n",)) for p in warm])
    if lm is not None:
        lm_eval_generate(lm, warm, {"until": ["\n"], "max_gen_toks": 10, "do_sample": False})

    def section(name: str, n: int, fp_seconds: float, peers: dict, extra: dict) -> None:
        row = {"prompts": n, "factprobe_seconds": round(fp_seconds, 3),
               "factprobe_prompts_per_s": round(n / fp_seconds, 2), **extra}
        for peer, seconds in peers.items():
            row[f"{peer}_seconds"] = round(seconds, 3)
            row[f"{peer}_prompts_per_s"] = round(n / seconds, 3)
            row[f"speedup_vs_{peer}"] = round(seconds / fp_seconds, 1)
        result[name] = row
        print(json.dumps({name: row}), file=sys.stderr)

    # ---------------------------------------------------------------- BELIEF-ICL greedy
    prompts = belief_prompts(args.greedy_prompts)
    reqs = [GenerateRequest(p, 10, stop=("\n",)) for p in prompts]
    with Timer(args.device) as t:
        gens = [g[0] for g in backend.generate(reqs)]
    ours = [g.text for g in gens]
    peers, extra = {}, {}
    if lm is not None:
        with Timer(args.device) as tl:
            theirs = lm_eval_generate(lm, prompts, {"until": ["\n"], "max_gen_toks": 10,
                                                    "do_sample": False})
        peers["lm_eval"] = tl.seconds
        extra["same_text_as_lm_eval"] = round(float(np.mean([a == b for a, b in
                                                             zip(ours, theirs)])), 3)
    if not args.skip_plain:
        with Timer(args.device) as tp:
            plain = [plain_generate(model, tok, p, args.device)[0] for p in prompts]
        peers["plain"] = tp.seconds
        # same greedy tokens (transformers keeps the tokens of the stop string, factprobe cuts
        # them: compare factprobe's tokens with the start of transformers')
        extra["same_tokens_as_plain"] = round(float(np.mean(
            [g.token_ids == p[:len(g.token_ids)] for g, p in zip(gens, plain)])), 3)
    section("belief_icl_greedy", len(prompts), t.seconds, peers, extra)

    # ---------------------------------------------------------------- BELIEF-ICL samples
    prompts = belief_prompts(args.sample_prompts, seed=1)
    reqs = [GenerateRequest(p, 10, samples=args.samples, stop=("\n",)) for p in prompts]
    with Timer(args.device) as t:
        backend.generate(reqs)
    peers = {}
    if not args.skip_plain:
        with Timer(args.device) as tp:
            for p in prompts:
                plain_generate(model, tok, p, args.device, samples=args.samples)
        peers["plain"] = tp.seconds
    if lm is not None:
        with Timer(args.device) as tl:
            lm_eval_generate(lm, [p for p in prompts for _ in range(args.samples)],
                             {"until": ["\n"], "max_gen_toks": 10, "do_sample": True,
                              "temperature": 1.0, "top_k": 0})
        peers["lm_eval"] = tl.seconds
    section("belief_icl_samples", len(prompts), t.seconds, peers, {"samples": args.samples})

    # ---------------------------------------------------------------- MONITOR anchors
    pairs = monitor_pairs(args.monitor_facts)
    split = [backend.encode_pair(p, a) for p, a in pairs]
    reqs = [ScoreRequest(p, (), continuation_ids=(tuple(cont),)) for (p, _), (_, cont)
            in zip(pairs, split)]
    backend.tokens_computed = 0
    with Timer(args.device) as t:
        ours = [r[0].logprob for r in backend.score(reqs)]
    peers, extra = {}, {"tokens_computed": backend.tokens_computed,
                        "tokens_full_sequence": sum(len(c) + len(a) for c, a in split)}
    if lm is not None:
        from lm_eval.api.instance import Instance
        with Timer(args.device) as tl:
            theirs = [lp for lp, _ in lm.loglikelihood(
                [Instance(request_type="loglikelihood", doc={}, arguments=pr, idx=i)
                 for i, pr in enumerate(pairs)], disable_tqdm=True)]
        peers["lm_eval"] = tl.seconds
        extra["max_abs_diff_vs_lm_eval"] = float(np.max(np.abs(np.subtract(ours, theirs))))
    if not args.skip_plain:
        plain = []
        with Timer(args.device) as tp:
            for ctx, cont in split:
                ids = torch.tensor([ctx + cont], device=args.device)
                lp = torch.log_softmax(model(ids).logits[0, len(ctx) - 1:-1].float(), -1)
                plain.append(float(lp.gather(1, torch.tensor(cont, device=args.device)[:, None])
                                   .sum()))
        peers["plain"] = tp.seconds
        extra["max_abs_diff_vs_plain"] = float(np.max(np.abs(np.subtract(ours, plain))))
    section("monitor_teacher_forced", len(pairs), t.seconds, peers, extra)

    common.emit(result, args.json)


if __name__ == "__main__":
    main()
