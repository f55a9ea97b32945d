"""llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) on 127.0.0.1, serving a
Hugging Face model folder converted to a float32 GGUF with llama.cpp's own
``convert_hf_to_gguf.py``. ``make llama-server`` installs both: the package (built from
PyPI's source) and the converter, taken from that source into ``.llama/llama.cpp``
(``FACTPROBE_LLAMA_CONVERTER`` points elsewhere).

The converter knows a BPE tokenizer by the hash of its pre-tokenizer's output; the suite's
tokenizers are trained here, so no hash is known: they split as GPT-2 does (byte-level), and
the conversion says so (``get_vocab_base_pre``), as the converter's own table does for GPT-2.

The server runs with a float32 KV cache (``--type_k 0 --type_v 0``; its default is float16,
measured 3e-3 apart from the local backend where float32 is 1e-5) and one thread.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from tests.serving import free_port, wait_answering

ROOT = Path(__file__).resolve().parents[1]
CONVERTER = Path(os.environ.get("FACTPROBE_LLAMA_CONVERTER") or ROOT / ".llama" / "llama.cpp")

_CONVERT = """
import runpy, sys
root = sys.argv[1]
sys.path[:0] = [root + "/gguf-py", root]
from conversion import base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
sys.argv = [root + "/convert_hf_to_gguf.py", *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def missing() -> str:
    """Why the llama.cpp tests cannot run here ('' when they can)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed: run 'make llama-server' (a ~25-minute build)"
    for mod in ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(mod) is None:
            return f"llama-cpp-python's server needs {mod}: run 'make llama-server'"
    if not (CONVERTER / "convert_hf_to_gguf.py").exists():
        return (f"llama.cpp's convert_hf_to_gguf.py is not in {CONVERTER}: run 'make "
                f"llama-server' (or set FACTPROBE_LLAMA_CONVERTER)")
    return ""


def to_gguf(model_dir: Path, out: Path) -> Path:
    """``model_dir`` (a Hugging Face causal LM folder) as a float32 GGUF at ``out``."""
    proc = subprocess.run([sys.executable, "-c", _CONVERT, str(CONVERTER), str(model_dir),
                           "--outtype", "f32", "--outfile", str(out)],
                          capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "NO_LOCAL_GGUF": ""})
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"convert_hf_to_gguf.py failed: {proc.stderr[-2000:]}")
    return out


class LlamaServer:
    """``python -m llama_cpp.server`` on a free port; ``url`` is its API root."""

    def __init__(self, gguf: Path, name: str, log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
             name, "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048",
             "--n_threads", "1", "--type_k", "0", "--type_v", "0", "--verbose", "false"],
            stdout=open(log, "ab"), stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_NUM_THREADS": "1"})
        try:
            wait_answering(self.proc, f"{self.url}/models", 90, "llama_cpp.server",
                           lambda: log.read_text(errors="replace"))
        except RuntimeError:
            self.close()
            raise

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """Dies as a crashed server does: no goodbye, connections cut."""
        self.proc.kill()
        self.proc.wait()
