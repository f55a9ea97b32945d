"""What is wrong with a local model folder, said before transformers tries to load it.

transformers reports a damaged local file as whatever its parser raised: a Rust
``SafetensorError`` traceback for truncated weights, "the network is unreachable" for a
broken ``config.json`` when offline, and, with no tokenizer files at all, an empty tokenizer
that fails much later in the run. These checks name the file and the fix instead. They read
only the JSON files and each safetensors header, nothing next to loading the weights.
"""
from __future__ import annotations

import json
from pathlib import Path

from factprobe.core import jsonsafe
from factprobe.core.errors import UserError

# Any one of these is a tokenizer transformers can load (fast, BPE, WordPiece, SentencePiece).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "vocab.txt",
                   "tokenizer.model", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.tiktoken")
FIX = "re-save it (save_pretrained) or download it again"


def _json(path: Path):
    try:
        return jsonsafe.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path} is not UTF-8 text, so not a JSON file; {FIX}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column "
                        f"{exc.colno}); {FIX}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _safetensors(path: Path) -> None:
    from safetensors import SafetensorError, safe_open
    try:
        with safe_open(str(path), framework="pt"):
            pass
    except (SafetensorError, OSError) as exc:
        raise UserError(f"{path} is damaged ({str(exc).splitlines()[0]}): it is truncated or "
                        f"not a safetensors file; {FIX}") from None


def check_model_folder(folder: Path) -> None:
    """Raise a UserError naming the file if ``folder`` cannot be a loadable model."""
    config = folder / "config.json"
    if not config.is_file():
        if (folder / "dataset.json").is_file():
            raise UserError(f"{folder} is a factprobe dataset, not a model: give it to "
                            f"--dataset, and a model folder or Hub name to --model")
        raise UserError(f"{folder} has no config.json, so it is not a Hugging Face model "
                        f"folder; save one with model.save_pretrained({str(folder)!r})")
    for path in sorted(folder.glob("*.json")):   # config, tokenizer, weight index
        value = _json(path)
        if path.name == "config.json" and not isinstance(value, dict):
            raise UserError(f"{path} holds a JSON {type(value).__name__}, not the model's "
                            f"configuration object; {FIX}")
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        value = _json(index)
        weight_map = value.get("weight_map") if isinstance(value, dict) else None
        if not isinstance(weight_map, dict):
            raise UserError(f"{index} has no weight_map; {FIX}")
        shards = sorted({str(s) for s in weight_map.values()})
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise UserError(f"{folder} lacks weight shard(s) {', '.join(missing[:3])} listed in "
                            f"{index.name}; download the model again")
    weights = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin"))
    if not weights:
        raise UserError(f"{folder} has no weights (model.safetensors or pytorch_model.bin); "
                        f"save them beside config.json with model.save_pretrained(...)")
    for path in weights:
        if path.suffix == ".safetensors":
            _safetensors(path)
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise UserError(f"{folder} has no tokenizer ({', '.join(TOKENIZER_FILES[:4])} ...); "
                        f"save it beside the model with tokenizer.save_pretrained(...)")
