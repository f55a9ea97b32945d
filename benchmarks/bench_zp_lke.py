"""ZP-LKE multiple choice: factprobe against lm-evaluation-harness and a plain loop.

    python benchmarks/bench_zp_lke.py                       # CPU: GPT-2 4 layers x 256, fp32
    python benchmarks/bench_zp_lke.py --model pythia-1.4b --device cuda --dtype bfloat16 \\
        --facts 100 --relations 8 --skip-plain              # GPU: a real-size random model

A synthetic T-REx-MC-like dataset (per relation: 50 train facts used as the in-context
examples, ``--facts`` test facts, 100 choices drawn from 150 multi-token objects) and a
random-weight model with a locally trained tokenizer are made in memory. The ZP-LKE plan's
(context, option) pairs are then scored in one process by

  factprobe    ``factprobe.probes.backends`` ``HFCausal.score`` on the plan's requests (shared prefix per
               relation, option tries, packed rows), and the whole ``factprobe eval zp-lke``
               (CLI entry point in process: plan, scoring, outputs and metrics written);
  lm-eval      ``HFLM.loglikelihood`` on ``Instance(request_type="loglikelihood",
               arguments=(context, option))``, the same pairs, same model object;
  plain        one full-sequence forward per pair (context + option), log-softmax at the
               option's positions.

Reported: facts/s, pairs/s, tokens fed to the model, speed ratios, the largest |difference| of
the option log-probs between every two implementations, and (factprobe) tokens computed
against the bound "shared prefix once per relation + each fact's own tokens".
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import Timer  # noqa: E402


# ------------------------------------------------------------------------------------ data
def synthetic_mc(relations: int, test_facts: int, *, train: int = 50, choices: int = 100,
                 objects: int = 150, seed: int = 0) -> pd.DataFrame:
    """A facts table shaped like T-REx-MC: ``train`` + ``test_facts`` facts per relation,
    ``choices`` options per fact (the gold once), objects of several kinds (years, one-word
    places, two-word persons, three-word titles, two-word organisations)."""
    from factprobe.core.tables import fact_id
    rng = np.random.default_rng(seed)
    per_rel = train + test_facts
    subjects = common.unique_names(rng, relations * per_rel, words=2)
    rows = []
    for r in range(relations):
        rid = f"P{100 + r}"
        kind = r % 5
        if kind == 0:     # years, like date of birth
            pool = [str(y) for y in rng.choice(np.arange(1700, 2000), size=objects,
                                               replace=False)]
        else:             # one-word places, two-word persons, three-word titles, two-word orgs
            words = {1: 1, 2: 2, 3: 3, 4: 2}[kind]
            pool = common.unique_names(rng, objects, words=words, lo=2, hi=3)
        for k in range(per_rel):
            subj = subjects[r * per_rel + k]
            gold = pool[int(rng.integers(objects))]
            others = [o for o in pool if o != gold]
            opts = [others[i] for i in rng.choice(len(others), size=choices - 1, replace=False)]
            opts.insert(int(rng.integers(choices)), gold)
            sid, oid = f"S{r}_{k}", f"O{r}_{pool.index(gold)}"
            rows.append({"fact_id": fact_id(rid, sid, oid), "relation_id": rid,
                         "subject_id": sid, "object_id": oid, "subject": subj, "object": gold,
                         "subject_aliases": [], "object_aliases": [], "answers": [gold],
                         "split": "train" if k < train else "test", "source": "synthetic",
                         "choices": opts})
    return pd.DataFrame(rows)


def write_facts(facts: pd.DataFrame, folder: Path) -> Path:
    import pyarrow as pa

    from factprobe.core.tables import FACTS_SCHEMA, base_manifest, write_dataset
    schema = FACTS_SCHEMA.append(pa.field("choices", pa.list_(pa.string())))
    table = pa.Table.from_pandas(facts, schema=schema, preserve_index=False)
    return write_dataset(folder, {"facts": table}, base_manifest(
        "bench-zp-lke", "mc", {"type": "synthetic"}, {}, {"facts": len(facts)}))


# ------------------------------------------------------------------------------------ peers
def run_lm_eval(model, tok, pairs, batch_size: int, device: str) -> list[float]:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=batch_size, device=device,
              max_length=common.max_positions(model))
    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=(c, o), idx=i)
            for i, (c, o) in enumerate(pairs)]
    return [lp for lp, _ in lm.loglikelihood(reqs, disable_tqdm=True)]


def run_plain(model, backend, pairs, device: str) -> tuple[list[float], int]:
    import torch
    out, tokens = [], 0
    with torch.inference_mode():
        for context, option in pairs:
            ctx, cont = backend.encode_pair(context, option)
            ids = torch.tensor([ctx + cont], device=device)
            logits = model(ids).logits[0, len(ctx) - 1:-1].float()
            lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(cont, device=device)[:, None])
            out.append(float(lp.sum()))
            tokens += len(ctx) + len(cont)
    return out, tokens


def bound_tokens(backend, requests) -> int:
    """Shared prefix once per group + each request's own context tokens + its options'."""
    from factprobe.probes.backends.hf_causal import common_prefix_len
    groups: dict[str, list] = {}
    for r in requests:
        groups.setdefault(r.group, []).append(r)
    total = 0
    for members in groups.values():
        enc = backend._encode_requests(members)
        p = min(common_prefix_len([c for c, _ in enc]), min(len(c) for c, _ in enc) - 1)
        total += p + sum(len(c) - p + sum(len(o) for o in conts) for c, conts in enc)
    return total


def max_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) if len(a) else 0.0


# ------------------------------------------------------------------------------------ main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--facts", type=int, default=6, help="test facts per relation")
    ap.add_argument("--relations", type=int, default=5)
    ap.add_argument("--choices", type=int, default=100)
    ap.add_argument("--examples", type=int, default=50)
    common.add_model_args(ap)
    ap.add_argument("--batch-size", type=int, default=32, help="factprobe rows per forward")
    ap.add_argument("--lm-eval-batch-size", type=int, default=8)
    ap.add_argument("--skip-lm-eval", action="store_true")
    ap.add_argument("--skip-plain", action="store_true")
    ap.add_argument("--plain-facts", type=int, default=5,
                    help="run the plain loop on the first N facts only and scale its time "
                         "(0: all facts)")
    ap.add_argument("--repeat", type=int, default=1, help="time factprobe's score N times")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (0: torch's default); 1 is steadier on a busy machine")
    ap.add_argument("--json", help="write the numbers to this file")
    args = ap.parse_args()

    import torch
    torch.set_grad_enabled(False)
    if args.threads:
        torch.set_num_threads(args.threads)
    from factprobe.probes.backends import BackendConfig
    from factprobe.probes.backends.hf_causal import HFCausal
    from factprobe.probes.methods.zp_lke import ZPLKEConfig, plan
    from factprobe.probes.planting.model_factory import save

    facts = synthetic_mc(args.relations, args.facts, train=args.examples, choices=args.choices)
    tok, model = common.model_from_args(args)
    cfg = ZPLKEConfig(n_examples=(args.examples,), response_tokens=0)
    requests = plan(facts, cfg).stages[0].requests
    pairs = [(r.context, o) for r in requests for o in r.continuations]
    n_facts = len(requests)
    result: dict = {"benchmark": "zp-lke mc", "model": args.model, "dtype": args.dtype,
                    "device": args.device, "relations": args.relations, "facts": n_facts,
                    "choices": args.choices, "examples": args.examples, "pairs": len(pairs),
                    "model_vocab": model.config.vocab_size, "tokenizer_vocab": len(tok),
                    "parameters": int(sum(p.numel() for p in model.parameters())),
                    "threads": torch.get_num_threads(),
                    "machine": common.machine(), "versions": common.versions(),
                    "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:])}
    print(f"{n_facts} facts x {args.choices} choices = {len(pairs)} pairs, "
          f"{result['parameters'] / 1e6:.1f}M parameters", file=sys.stderr)

    bcfg = BackendConfig("bench", device=args.device, batch_size=args.batch_size)
    backend = HFCausal(model, tok, args.device, bcfg)
    backend.score(requests[:1])  # warm-up (allocator, kernels)
    times = []
    for _ in range(max(1, args.repeat)):
        backend.tokens_computed = backend.tokens_full = 0
        backend.attended_keys = backend.logit_rows = 0
        with Timer(args.device) as t:
            scored = backend.score(requests)
        times.append(t.seconds)
    fp_seconds = min(times)
    fp = [s.logprob for res in scored for s in res]
    fp_tokens = backend.tokens_computed
    bound = bound_tokens(backend, requests)
    result["factprobe"] = {
        "seconds": round(fp_seconds, 3), "facts_per_s": round(n_facts / fp_seconds, 2),
        "pairs_per_s": round(len(pairs) / fp_seconds, 1), "tokens_computed": fp_tokens,
        "tokens_full_sequence": backend.tokens_full, "tokens_bound": bound,
        "tokens_over_bound": round(fp_tokens / bound, 3)}
    flops = common.model_flops(model, fp_tokens, backend.logit_rows, backend.attended_keys)
    result["factprobe"]["tflops_achieved"] = round(flops / fp_seconds / 1e12, 3)
    result["factprobe"]["gflop"] = round(flops / 1e9, 1)
    gemm = common.measured_matmul_tflops(args.device, args.dtype)
    result["factprobe"]["matmul_tflops_measured"] = round(gemm, 3)
    result["factprobe"]["share_of_measured_matmul"] = round(flops / fp_seconds / 1e12 / gemm, 3)
    if args.device.startswith("cuda") and args.dtype != "float32":
        peak = common.peak_tflops(torch.cuda.get_device_name(0))
        if peak:
            result["factprobe"]["peak_tflops"] = peak
            result["factprobe"]["share_of_peak"] = round(flops / fp_seconds / 1e12 / peak, 3)
    print(json.dumps({"factprobe score": result["factprobe"]}), file=sys.stderr)

    # the whole `factprobe eval zp-lke`, in process, on the same facts and model (saved folder)
    work = Path(tempfile.mkdtemp(prefix="bench-zp-lke-"))
    try:
        data_dir = write_facts(facts, work / "data")
        model_dir = save(model, tok, work / "model")
        from factprobe.cli.app import main as cli
        argv = ["eval", "zp-lke", "--dataset", str(data_dir), "--model", str(model_dir),
                "--out", str(work / "out"), "--response-tokens", "0", "--quiet",
                "--device", args.device, "--dtype", args.dtype,
                "--batch-size", str(args.batch_size), "--examples", str(args.examples)]
        with Timer(args.device) as t:
            rc = cli(argv)
        assert rc == 0, rc
        run = json.loads((work / "out" / "run.json").read_text())
        out = pd.read_parquet(work / "out" / "outputs.parquet")
        by_key = {(f, o): lp for f, o, lp in zip(out["fact_id"], out["option_text"],
                                                   out["logprob"])}
        cli_lp = [by_key[(r.meta["fact_id"], o)] for r in requests for o in r.continuations]
        result["factprobe_eval_cli"] = {
            "command": "factprobe " + " ".join(argv[:2]) + " ... --response-tokens 0",
            "seconds": round(t.seconds, 3), "facts_per_s": round(n_facts / t.seconds, 2),
            "model_seconds": run["timings_s"]["mc"],
            "max_abs_diff_vs_score": max_diff(cli_lp, fp)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"factprobe eval": result["factprobe_eval_cli"]}), file=sys.stderr)

    if not args.skip_lm_eval:
        with Timer(args.device) as t:
            le = run_lm_eval(model, tok, pairs, args.lm_eval_batch_size, args.device)
        lens = [len(c) + len(o) - 1 for c, o in (backend.encode_pair(c, o) for c, o in pairs)]
        le_tokens = sum(lens)
        le_flops = common.model_flops(model, le_tokens, le_tokens,
                                      sum(n * (n + 1) // 2 for n in lens))
        result["lm_eval"] = {"seconds": round(t.seconds, 3),
                             "tflops_achieved": round(le_flops / t.seconds / 1e12, 3),
                             "facts_per_s": round(n_facts / t.seconds, 3),
                             "pairs_per_s": round(len(pairs) / t.seconds, 2),
                             "tokens_computed": le_tokens, "batch_size": args.lm_eval_batch_size,
                             "max_abs_diff_vs_factprobe": max_diff(le, fp)}
        result["speedup_score_vs_lm_eval"] = round(t.seconds / fp_seconds, 1)
        result["speedup_eval_cli_vs_lm_eval"] = round(
            t.seconds / result["factprobe_eval_cli"]["seconds"], 1)
        print(json.dumps({"lm_eval": result["lm_eval"]}), file=sys.stderr)

    if not args.skip_plain:
        # every k-th fact, so that all relations are represented; time scaled to all pairs
        k = max(1, len(requests) // args.plain_facts) if args.plain_facts else 1
        picked = list(range(0, len(requests), k))[:args.plain_facts or None]
        starts = np.cumsum([0] + [len(r.continuations) for r in requests])
        at = [j for i in picked for j in range(starts[i], starts[i + 1])]
        with Timer(args.device) as t:
            pl, pl_tokens = run_plain(model, backend, [pairs[j] for j in at], args.device)
        scale = len(pairs) / len(at)
        result["plain"] = {"seconds": round(t.seconds * scale, 3),
                           "measured_pairs": len(at), "scaled_to_pairs": len(pairs),
                           "facts_per_s": round(len(picked) / t.seconds, 3),
                           "tokens_computed": round(pl_tokens * scale),
                           "max_abs_diff_vs_factprobe": max_diff(pl, [fp[j] for j in at])}
        if "lm_eval" in result:
            result["plain"]["max_abs_diff_vs_lm_eval"] = max_diff(pl, [le[j] for j in at])
        result["speedup_score_vs_plain"] = round(t.seconds * scale / fp_seconds, 1)
        print(json.dumps({"plain": result["plain"]}), file=sys.stderr)

    common.emit(result, args.json)


if __name__ == "__main__":
    main()
