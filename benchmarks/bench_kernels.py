"""What ``--kernels portable`` (factprobe/core/kernels.py: ATen, oneDNN and MKL held to AVX2)
costs against ``native`` (torch's own pick) on this CPU: forward passes and training steps of
a random-weight GPT-2, one torch thread, each mode in a fresh process (torch reads the choice
once, when it loads). Also whether the two modes give the same bits here (they do not on a CPU
wider than AVX2: that is why portable exists).

    python benchmarks/bench_kernels.py --layers 4 --width 256 --json .bench/kernels.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, machine, versions  # noqa: E402

CHILD = r"""
import hashlib, json, os, sys, time
from factprobe.core.kernels import pin, in_effect
mode, layers, width, batch, seq, reps = sys.argv[1], *map(int, sys.argv[2:7])
if mode == "native":
    for name in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR"):
        os.environ.pop(name, None)
pin(mode)
import torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.set_num_threads(1)
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=layers, n_embd=width, n_head=max(1, width // 64),
                                   vocab_size=8000, n_positions=seq))
ids = torch.randint(0, 8000, (batch, seq), generator=torch.Generator().manual_seed(1))
model.eval()
with torch.no_grad():
    model(ids)                                    # warm-up
    start = time.perf_counter()
    for _ in range(reps):
        logits = model(ids).logits
    forward = (time.perf_counter() - start) / reps
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
start = time.perf_counter()
for _ in range(reps):
    loss = model(ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
step = (time.perf_counter() - start) / reps
weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                  for p in model.parameters())).hexdigest()[:12]
print(json.dumps({"mode": mode, "kernels": in_effect(), "forward_s": forward,
                  "train_step_s": step, "logits": hashlib.sha256(
                      logits.numpy().tobytes()).hexdigest()[:12], "weights": weights}))
"""


def run(mode: str, args) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.layers), str(args.width),
                          str(args.batch), str(args.seq), str(args.reps)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2, help="alternating rounds of both modes")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = [run(mode, args) for _ in range(args.repeat) for mode in ("portable", "native")]
    best = {m: {k: min(r[k] for r in rows if r["mode"] == m) for k in ("forward_s",
                                                                       "train_step_s")}
            for m in ("portable", "native")}
    by_mode = {r["mode"]: r for r in rows}
    result = {
        "shape": {k: getattr(args, k) for k in ("layers", "width", "batch", "seq", "reps")},
        "portable": best["portable"] | {"kernels": by_mode["portable"]["kernels"]},
        "native": best["native"] | {"kernels": by_mode["native"]["kernels"]},
        "forward_ratio": best["portable"]["forward_s"] / best["native"]["forward_s"],
        "train_step_ratio": best["portable"]["train_step_s"] / best["native"]["train_step_s"],
        "same_bits": {k: len({r[k] for r in rows}) == 1 for k in ("logits", "weights")},
        "bits_repeat": {m: len({(r["logits"], r["weights"]) for r in rows if r["mode"] == m})
                        == 1 for m in ("portable", "native")},
        "machine": machine(), "versions": versions(),
    }
    emit(result, args.json)


if __name__ == "__main__":
    main()
