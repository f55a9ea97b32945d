"""``factprobe eval zp-lke``: one process (1 thread) against ``--executor ray --replicas 2``
(1 thread each) on a local Ray cluster.

    python benchmarks/bench_scale.py --json scale.json          # GPT-2 size, 10 x 40 x 20
    python benchmarks/bench_scale.py --layers 2 --width 64 --relations 3 --facts 5   # smoke

A T-REx-MC-shaped dataset (``--relations`` relations x ``--facts`` test facts, 50 in-context
examples, ``--choices`` choices; ``bench_zp_lke.synthetic_mc``) and a random-weight GPT-2-size
model (12 layers x 768, GPT-2's 50,257-token vocabulary, float32; random weights time the same
as trained ones) with a locally trained tokenizer are written to a temporary folder. The same
``factprobe eval`` command then runs twice as a user runs it, each in a fresh process with
OMP_NUM_THREADS=1: locally, and on a Ray cluster started beforehand by this script
(``ray.init(num_cpus=2)``; the cluster's start is not timed, as a user's cluster is already
up). Reported: wall time of each command, the model time (run.json), the speed-up, the
per-replica tokens and seconds, and the largest log-prob difference between the two runs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
from bench_zp_lke import synthetic_mc, write_facts


def eval_command(work: Path, out: str, args, extra: list[str]) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": str(common.ROOT)}
    argv = [sys.executable, "-m", "factprobe.cli", "eval", "zp-lke", "--dataset",
            str(work / "mc"), "--model", str(work / "model"), "--out", str(work / out),
            "--examples", str(args.examples), "--response-tokens", "0", "--device", args.device,
            "--dtype", args.dtype, "--quiet", *extra]
    start = time.perf_counter()
    proc = subprocess.run(argv, check=False, cwd=common.ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relations", type=int, default=10)
    ap.add_argument("--facts", type=int, default=40, help="test facts per relation")
    ap.add_argument("--choices", type=int, default=20)
    ap.add_argument("--examples", type=int, default=50)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--gpus-per-replica", type=float, default=0.0)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per replica)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--tokenizer-vocab", type=int, default=4000)
    ap.add_argument("--json", help="write the numbers to this file")
    args = ap.parse_args()
    import ray
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        facts = synthetic_mc(args.relations, args.facts, train=args.examples,
                             choices=args.choices)
        write_facts(facts, work / "mc")
        tok = common.tokenizer(args.tokenizer_vocab)
        model = common.build_model("gpt2-small-random", tok, n_layer=args.layers,
                                   n_embd=args.width, n_head=max(1, args.width // 64))
        model.save_pretrained(work / "model")
        tok.save_pretrained(work / "model")
        params = sum(p.numel() for p in model.parameters())
        del model
        gpus = round(args.gpus_per_replica * args.replicas) or None
        ray.init(num_cpus=args.replicas, num_gpus=gpus, include_dashboard=False,
                 log_to_driver=False, logging_level="ERROR")
        try:
            address = ray.get_runtime_context().gcs_address
            local = eval_command(work, "local", args, [])
            distributed = eval_command(work, "ray", args, [
                "--executor", "ray", "--ray-address", address, "--replicas", str(args.replicas),
                "--cpus-per-replica", "1", "--gpus-per-replica", str(args.gpus_per_replica)])
        finally:
            ray.shutdown()
        a = pd.read_parquet(work / "local" / "outputs.parquet")
        b = pd.read_parquet(work / "ray" / "outputs.parquet")
        same_rows = a[["fact_id", "option", "prompt_id"]].equals(b[["fact_id", "option",
                                                                      "prompt_id"]])
        runs = {k: json.loads((work / k / "run.json").read_text()) for k in ("local", "ray")}
    per = runs["ray"]["executor"]["per_replica"]
    result = {
        "benchmark": "scale",
        "machine": common.machine(), "versions": common.versions(),
        "command": " ".join(sys.argv),
        "dataset": {"relations": args.relations, "test_facts": args.facts,
                    "choices": args.choices, "examples": args.examples},
        "model": {"shape": f"gpt2 {args.layers} layers x {args.width}", "parameters": params,
                  "weights": "random (timing only)"},
        "local": {"wall_s": round(local, 2), "model_s": runs["local"]["timings_s"]["mc"]},
        "ray": {"replicas": args.replicas, "wall_s": round(distributed, 2),
                "per_replica": per},
        "speedup_wall": round(local / distributed, 2),
        "same_rows": bool(same_rows),
        "max_abs_logprob_diff": float((a["logprob"] - b["logprob"]).abs().max()),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
