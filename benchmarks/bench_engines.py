"""One ZP-LKE plan through three engines: the local backend, the local backend with its model
split over CPU memory and disk (a device map), and llama.cpp's OpenAI-compatible server.

    python benchmarks/bench_engines.py                       # the planted model, sample-mc
    python benchmarks/bench_engines.py --model DIR --dataset DIR --limit 5 --examples 50

Each engine runs the whole ``factprobe eval zp-lke`` (in this process, one thread) on the
same dataset, model and flags:

  local       ``--backend hf-causal`` (shared prefix once per relation, option tries);
  device-map  the same with ``--device-map FILE.json --offload-folder``: the embeddings and
              the first half of the layers in CPU memory, the rest on disk (accelerate's
              big-model inference loads them at every forward; a Llama-architecture model);
  llama.cpp   ``--backend openai --tokenizer MODEL`` against ``llama_cpp.server`` (float32
              GGUF from llama.cpp's own converter, float32 KV cache, one thread) on
              127.0.0.1: its echoed prompt log-probabilities are refused by the start-up
              check, so every option token is one completion forced to it (logit_bias).

Reported: wall seconds of each run (model load included for the local ones, as a CLI user
pays it; the server's start-up and the GGUF conversion not; a first local run, untimed,
warms the process up), the tokens each reports computed (``run.json``: for the server, the
prompt and completion tokens it was sent and answered; llama-cpp-python reuses the prefix it
has just computed, so it computes fewer), the requests the server answered, the load
average at the start, and against the local run: the share of questions with the same argmax
the largest |difference| of an option's log-probability, and the share of greedy answers
(the response tests) with the same text. Needs ``make llama-server`` for
the third engine (skipped, and said so, without it).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

ROOT = common.ROOT


def _eval(args, model: str, out: Path, *extra: str) -> dict:
    from factprobe.cli.app import main
    argv = ["eval", "zp-lke", "--dataset", str(args.dataset), "--model", model,
            "--examples", str(args.examples), "--seeds", "0", "--limit", str(args.limit),
            "--out", str(out), "--quiet", *extra]
    start = time.perf_counter()
    if main(argv) != 0:
        raise SystemExit(f"factprobe {' '.join(argv)} failed")
    seconds = time.perf_counter() - start
    run = json.loads((out / "run.json").read_text())
    return {"seconds": round(seconds, 2), "tokens_computed": run["tokens"]["computed"]}


def _agreement(local: Path, other: Path) -> dict:
    a, b = (pd.read_parquet(p / "outputs.parquet") for p in (local, other))
    def argmax(rows):
        # subject_blind: the subject-only check's rows (a planted model's runs have them)
        keys = [k for k in ("prompt_id", "stage", "subject_blind") if k in rows]
        rows = rows[(rows["kind"] == "score") & rows["option"].notna()]
        return rows.loc[rows.groupby(keys)["logprob"].idxmax()].set_index(keys)["option"]

    x, y = argmax(a).sort_index(), argmax(b).sort_index()
    scored = a["kind"] == "score"
    texts = a.loc[~scored, "text"].fillna("") == b.loc[~scored, "text"].fillna("")
    return {"questions": int(len(x)), "argmax_agreement": round(float((x == y).mean()), 4),
            "max_abs_diff": float((a.loc[scored, "logprob"] - b.loc[scored, "logprob"])
                                  .abs().max()),
            "same_greedy_text": round(float(texts.mean()), 4) if len(texts) else None}


def _split_map(model: Path, work: Path) -> str:
    """A device map file for a Llama-architecture model: the embeddings and the first half of
    the layers in CPU memory, the rest on disk (accelerate's auto map under a memory budget
    sends a model this small to disk whole: it keeps the largest layer's room free)."""
    config = json.loads((model / "config.json").read_text())
    if config.get("model_type") != "llama":
        raise SystemExit(f"{model}: the device-map engine splits Llama-architecture models "
                         f"only (this one is {config.get('model_type')!r})")
    n = config["num_hidden_layers"]
    split = {"model.embed_tokens": "cpu", "model.rotary_emb": "cpu",
             **{f"model.layers.{i}": "cpu" if i < max(1, n // 2) else "disk"
                for i in range(n)},
             "model.norm": "disk", "lm_head": "disk"}
    path = work / "device-map.json"
    path.write_text(json.dumps(split))
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=ROOT / "data" / "models" / "planted")
    ap.add_argument("--dataset", type=Path, default=ROOT / "data" / "datasets" / "sample-mc")
    ap.add_argument("--limit", type=int, default=5, help="test facts per relation")
    ap.add_argument("--examples", type=int, default=50)
    ap.add_argument("--no-server", action="store_true", help="skip llama.cpp's server")
    ap.add_argument("--json")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    work = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    result = {"machine": common.machine(), "versions": common.versions(),
              "load_average_at_start": round(os.getloadavg()[0], 2),
              "plan": {"model": args.model.name, "dataset": args.dataset.name,
                       "limit": args.limit, "examples": args.examples}}
    try:
        # untimed: the first run in a process pays torch's and the CLI's first-use costs
        _eval(args, str(args.model), work / "warm-up", "--threads", "1")
        result["local"] = _eval(args, str(args.model), work / "local", "--threads", "1")
        result["device_map"] = _eval(args, str(args.model), work / "split", "--threads", "1",
                                     "--device-map", _split_map(args.model, work),
                                     "--offload-folder", str(work / "offload"))
        placed = json.loads((work / "split" / "run.json").read_text())["model"]
        result["device_map"]["placement"] = sorted(set(placed.get("device_map", {}).values()))
        result["device_map"].update(_agreement(work / "local", work / "split"))
        result["llama_cpp"] = _served(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    common.emit(result, args.json)


def _served(args, work: Path) -> dict:
    from tests import llama_server
    why = "--no-server" if args.no_server else llama_server.missing()
    if why:
        print(f"llama.cpp's server skipped: {why}", file=sys.stderr)
        return {"skipped": why}
    gguf = llama_server.to_gguf(args.model, work / "model-f32.gguf")
    srv = llama_server.LlamaServer(gguf, "bench", work / "server.log")
    try:
        out = _eval(args, "bench", work / "served", "--backend", "openai", "--base-url",
                    srv.url, "--tokenizer", str(args.model), "--concurrency", "1")
    finally:
        srv.close()
    run = json.loads((work / "served" / "run.json").read_text())
    out["scoring"] = run["backend"].get("scoring")
    out["requests"] = (work / "server.log").read_text(errors="replace").count(
        "POST /v1/completions")
    out.update(_agreement(work / "local", work / "served"))
    return out


if __name__ == "__main__":
    main()
