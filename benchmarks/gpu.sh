#!/usr/bin/env bash
# The GPU figures of docs/benchmarks.md in one command: ZP-LKE scoring of random-weight models
# of real sizes in bf16 (Pythia-410M, Pythia-1.4B, a 1B Llama-style model), then BELIEF-ICL
# generation and MONITOR's anchors on the 1B Llama. One JSON file per run under OUT.
#
#   OUT=gpu-results bash benchmarks/gpu.sh
#
# lm-evaluation-harness is compared when it can be imported (it has no GPU-specific code, so
# the CPU test of equal scores carries over); without it the runs go on with --skip-lm-eval.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-.bench/gpu}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
peer=()
$PY -c "import lm_eval" 2>/dev/null || peer=(--skip-lm-eval)
$PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name(0))"
# The 1B model first: its figure is the one the acceptance names, and a lease may end early.
for model in llama-1b pythia-410m pythia-1.4b; do
  $PY benchmarks/bench_zp_lke.py --model "$model" --device cuda --dtype bfloat16 \
    --relations 8 --facts 25 --batch-size 64 --lm-eval-batch-size 64 --repeat 3 \
    --tokenizer-vocab 8000 --skip-plain "${peer[@]}" --json "$OUT/zp_lke_$model.json"
done
# float32 on the GPU: factprobe and lm-eval must agree within 1e-4, as on the CPU (bf16 cannot
# tell a wrong position from rounding; this run found the transformers 5.17 slicing bug).
$PY benchmarks/bench_zp_lke.py --model llama-1b --layers 4 --device cuda --dtype float32 \
  --relations 2 --facts 5 --batch-size 64 --lm-eval-batch-size 64 --tokenizer-vocab 8000 \
  --skip-plain "${peer[@]}" --json "$OUT/zp_lke_llama-4layers_fp32.json"
$PY benchmarks/bench_generate.py --model llama-1b --device cuda --dtype bfloat16 \
  --greedy-prompts 200 --sample-prompts 20 --monitor-facts 200 --batch-size 64 \
  --lm-eval-batch-size 64 "${peer[@]}" --json "$OUT/generate_llama-1b.json"
# Several GPUs of this machine as Ray replicas (--executor ray), against one GPU, on the same
# ZP-LKE run (written, not yet run: no multi-GPU session so far).
ngpu=$($PY -c "import torch; print(torch.cuda.device_count())")
if [ "$ngpu" -gt 1 ] && $PY -c "import ray" 2>/dev/null; then
  $PY benchmarks/bench_scale.py --replicas "$ngpu" --gpus-per-replica 1 --device cuda \
    --relations 41 --facts 100 --choices 100 --layers 24 --width 1024 \
    --json "$OUT/scale_${ngpu}gpu.json"
fi
