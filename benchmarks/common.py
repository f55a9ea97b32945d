"""Shared pieces of the model benchmarks: machine facts, synthetic names and facts, a locally
trained tokenizer, random-weight models of small (CPU) and real (GPU) sizes, FLOP counting.

Nothing here downloads anything: tokenizers are trained on synthetic text and models are built
from configs with random weights, so timings depend on shapes only.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# Appended, not put first: the checkout's factprobe/ folder holds only the app layer (setup.py
# maps builders/, probes/ and evaluators/ under it), so ahead of an installed factprobe it would
# hide factprobe.probes. The root is on the path for the tests' helpers that some scripts reuse.
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

SYLLABLES = ["ka", "lo", "mer", "vin", "dra", "sel", "tor", "ba", "qui", "nes", "ro", "zel",
             "fa", "du", "ren", "mo", "li", "ska", "vor", "tan", "pe", "gru", "ost", "hal",
             "wen", "bri", "cas", "tel", "nor", "um", "ja", "sto"]

# Dense bf16 tensor-core peak (TFLOP/s, no sparsity) by a substring of the device name.
PEAK_BF16_TFLOPS = [("H200", 989.0), ("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0),
                    ("A100", 312.0), ("L40S", 362.0), ("L4", 121.0)]

# Random-weight models: name -> (architecture, config keywords). The CPU default is a small GPT-2
# with GPT-2's vocabulary; the others are the shapes of real checkpoints, for GPU runs.
MODEL_CONFIGS = {
    "gpt2-small-random": ("gpt2", dict(n_layer=4, n_embd=256, n_head=4, vocab_size=50257,
                                       n_positions=2048)),
    "pythia-410m": ("gpt_neox", dict(num_hidden_layers=24, hidden_size=1024,
                                     num_attention_heads=16, intermediate_size=4096,
                                     vocab_size=50304, max_position_embeddings=2048,
                                     rotary_pct=0.25, use_parallel_residual=True)),
    "pythia-1.4b": ("gpt_neox", dict(num_hidden_layers=24, hidden_size=2048,
                                     num_attention_heads=16, intermediate_size=8192,
                                     vocab_size=50304, max_position_embeddings=2048,
                                     rotary_pct=0.25, use_parallel_residual=True)),
    "llama-1b": ("llama", dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32,
                               num_key_value_heads=8, intermediate_size=8192, vocab_size=128256,
                               max_position_embeddings=4096, tie_word_embeddings=True,
                               rope_theta=500000.0)),
}


def versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in ("factprobe", "torch", "transformers", "lm_eval", "numpy", "pyarrow", "pandas"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def machine() -> dict:
    model = platform.processor() or platform.machine()
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    out = {"cpu": model, "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        out["memory_gb"] = round(kb / 1024 ** 2)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return out


def peak_tflops(device_name: str) -> float | None:
    for key, value in PEAK_BF16_TFLOPS:
        if key in device_name:
            return value
    return None


def word(rng: np.random.Generator, lo: int, hi: int) -> str:
    k = int(rng.integers(lo, hi + 1))
    return "".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), size=k)).title()


def unique_names(rng: np.random.Generator, n: int, words: int, lo: int = 2, hi: int = 3
                 ) -> list[str]:
    seen: set[str] = set()
    out = []
    while len(out) < n:
        name = " ".join(word(rng, lo, hi) for _ in range(words))
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def tokenizer(vocab: int = 4000, seed: int = 0):
    """A byte-level BPE trained on synthetic syllable text (not on the benchmark's names, so
    names split into several tokens as rare names do in real vocabularies)."""
    from factprobe.probes.planting.model_factory import train_tokenizer
    rng = np.random.default_rng(seed + 1000)
    lines = [" ".join(word(rng, 1, 3) if rng.random() < 0.85 else str(int(rng.integers(0, 3000)))
                      for _ in range(12)) + "," for _ in range(20000)]
    return train_tokenizer(lines, vocab_size=vocab)


def build_model(name: str, tok, *, dtype: str = "float32", seed: int = 0, **overrides):
    """A random-weight causal LM of a known shape, sized at least to the tokenizer."""
    import torch
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        GPTNeoXConfig,
        GPTNeoXForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
    )
    arch, kw = MODEL_CONFIGS[name]
    kw = dict(kw, **overrides)
    if "vocab_size" in kw:
        kw["vocab_size"] = max(kw["vocab_size"], len(tok))
    common = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    cls = {"gpt2": (GPT2Config, GPT2LMHeadModel), "gpt_neox": (GPTNeoXConfig, GPTNeoXForCausalLM),
           "llama": (LlamaConfig, LlamaForCausalLM)}[arch]
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    with torch.device("cpu"):
        model = cls[1](cls[0](**kw, **common))
    return model.to(dt).eval()


def add_model_args(ap) -> None:
    """The model options every model benchmark takes."""
    ap.add_argument("--model", default="gpt2-small-random", choices=sorted(MODEL_CONFIGS))
    ap.add_argument("--layers", type=int, help="override the model's layer count")
    ap.add_argument("--width", type=int, help="override the model's width")
    ap.add_argument("--vocab", type=int, help="override the model's vocabulary size")
    ap.add_argument("--tokenizer-vocab", type=int, default=4000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])


def model_from_args(args):
    """(tokenizer, model on args.device) from the options of ``add_model_args``."""
    tok = tokenizer(args.tokenizer_vocab)
    arch = MODEL_CONFIGS[args.model][0]
    over = {}
    if args.layers:
        over["n_layer" if arch == "gpt2" else "num_hidden_layers"] = args.layers
    if args.width:
        over["n_embd" if arch == "gpt2" else "hidden_size"] = args.width
        if arch != "gpt2":
            over["intermediate_size"] = 4 * args.width
    if args.vocab:
        over["vocab_size"] = args.vocab
    return tok, build_model(args.model, tok, dtype=args.dtype, **over).to(args.device)


def max_positions(model) -> int:
    cfg = model.config
    return int(getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions"))


def matmul_params(model) -> tuple[int, int]:
    """(parameters of the layers, parameters of the output head) that take part in a matrix
    product per token: everything except the input embedding tables; the head counts even
    when it is tied to the input embedding."""
    emb = {id(p) for p in model.get_input_embeddings().parameters()}
    for name, mod in model.named_modules():
        if name.endswith(("wpe", "embed_positions")):
            emb.update(id(p) for p in mod.parameters())
    head = model.get_output_embeddings().weight
    body = sum(p.numel() for p in model.parameters() if id(p) not in emb and p is not head)
    return body, head.numel()


def model_flops(model, tokens: int, logit_rows: int, attended_keys: int) -> float:
    """FLOPs of the useful work: 2 x layer parameters per token fed, 2 x head parameters per
    position whose logits are computed, and attention: 2 products (QK^T, AV) x 2 FLOPs x
    layers x width per (query token, key it may attend) pair. Masked-out keys that a dense
    kernel also multiplies are not counted."""
    cfg = model.config
    layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
    width = getattr(cfg, "hidden_size", None) or cfg.n_embd
    body, head = matmul_params(model)
    return 2.0 * body * tokens + 2.0 * head * logit_rows + 4.0 * layers * width * attended_keys


class Timer:
    def __init__(self, device: str = "cpu"):
        self.device = device

    def __enter__(self):
        self._sync()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self._sync()
        self.seconds = time.perf_counter() - self.t0

    def _sync(self):
        if self.device.startswith("cuda"):
            import torch
            torch.cuda.synchronize()


def run_child(cmd: list[str]) -> tuple[float, float]:
    """Seconds and peak resident memory (MB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024


def measured_matmul_tflops(device: str = "cpu", dtype: str = "float32", n: int = 2048,
                           repeat: int = 5) -> float:
    """The machine's practical ceiling: TFLOP/s of the best of ``repeat`` square n x n matrix
    products with the library's own GEMM, the same threads and dtype as the benchmark. Model
    work can approach it, not beat it, so it is the yardstick on CPUs (no published peak)."""
    import torch
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    a = torch.randn(n, n, device=device).to(dt)
    b = torch.randn(n, n, device=device).to(dt)
    a @ b
    best = float("inf")
    for _ in range(repeat):
        with Timer(device) as t:
            a @ b
        best = min(best, t.seconds)
    return 2.0 * n ** 3 / best / 1e12


def in_fresh_process(fn, *args) -> None:
    """Run ``fn(*args)`` in a new interpreter and wait. The benchmark process must stay small:
    a child's peak resident memory as the kernel reports it includes the memory image it was
    forked from (kept across exec), so generating gigabytes of input in the parent would be
    counted as the measured command's own."""
    import multiprocessing
    proc = multiprocessing.get_context("spawn").Process(target=fn, args=args)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise SystemExit(f"generating the input failed (exit code {proc.exitcode})")


def emit(result: dict, json_path: str | None, append: bool = False) -> None:
    """Print a benchmark's result and keep it in ``json_path``: the build scripts append one
    line per run (1M and 10M share a file), the model scripts write one document."""
    import json
    print(json.dumps(result, indent=2))
    if not json_path:
        return
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if append:
        with open(path, "a") as fh:
            fh.write(json.dumps(result) + "\n")
    else:
        path.write_text(json.dumps(result, indent=2) + "\n")
