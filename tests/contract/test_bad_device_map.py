"""Bad ``--device-map``, ``--max-memory`` and ``--offload-folder`` values, held to the contract
of :mod:`tests.contract.harness`: exit 2, one line, nothing changed or left behind (the
offload folder factprobe would have made included)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.contract.harness import Case, check, expand, run, snapshot

OUT = "{ws}/out"


def zp(*args: str) -> tuple[str, ...]:
    return ("eval", "zp-lke", "--dataset", "mc", "--model", "model", "--examples", "2",
            "--out", OUT, *args)


def belief(*args: str) -> tuple[str, ...]:
    return ("eval", "belief", "--dataset", "multiprompt", "--model", "mlm", "--out", OUT, *args)


def _map(content: str):
    def setup(ws: Path) -> None:
        (ws / "map.json").write_text(content, encoding="utf-8")
    return setup


CASES = [
    Case("max-memory-no-size", zp("--device-map", "auto", "--max-memory", "0:70GiB,cpu"),
         ("--max-memory", "DEVICE:SIZE")),
    Case("max-memory-bad-unit", zp("--device-map", "auto", "--max-memory", "cpu:12XB"),
         ("--max-memory", "not a size")),
    Case("max-memory-negative", zp("--device-map", "auto", "--max-memory", "cpu:-1GiB"),
         ("--max-memory", "not a size")),
    Case("max-memory-bad-device", zp("--device-map", "auto", "--max-memory", "gpu:1GiB"),
         ("--max-memory", "GPU number, cpu or mps")),
    Case("max-memory-twice", zp("--device-map", "auto", "--max-memory", "cpu:1GiB,cpu:2GiB"),
         ("--max-memory", "twice")),
    Case("max-memory-alone", zp("--max-memory", "cpu:1GiB"), ("--max-memory", "--device-map")),
    Case("offload-folder-alone", zp("--offload-folder", "off"),
         ("--offload-folder", "--device-map")),
    Case("device-and-device-map", zp("--device", "cpu", "--device-map", "auto"),
         ("--device cpu", "--device-map auto", "give one")),
    Case("device-map-no-such-file", zp("--device-map", "nosuch.json"),
         ("--device-map nosuch.json", "no such file")),
    Case("device-map-a-list", zp("--device-map", "map.json"), ("map.json", "object"),
         setup=_map("[1, 2]")),
    Case("device-map-not-json", zp("--device-map", "map.json"), ("map.json", "JSON"),
         setup=_map("transformer.h.0: cpu\n")),
    Case("device-map-bad-device", zp("--device-map", "map.json"),
         ("'transformer.h.0'", "'gpu0'", "not a device"),
         setup=_map(json.dumps({"transformer.h.0": "gpu0", "": "cpu"}))),
    Case("device-map-unknown-module", zp("--device-map", "map.json"),
         ("no module 'encoder.layer.0'", "transformer"),
         setup=_map(json.dumps({"encoder.layer.0": "cpu", "": "cpu"}))),
    Case("device-map-partial", zp("--device-map", "map.json"), ("no device for",),
         setup=_map(json.dumps({"transformer.h.0": "cpu"}))),
    Case("device-map-splits-tied-weights", zp("--device-map", "map.json", "--offload-folder",
                                              "off"),
         ("lm_head.weight (disk)", "transformer.wte.weight (cpu)", "same device"),
         setup=_map(json.dumps({"transformer.wte": "cpu", "lm_head": "disk", "": "cpu"}))),
    Case("device-map-file-and-max-memory",
         zp("--device-map", "map.json", "--max-memory", "cpu:1GiB"), ("drop one",),
         setup=_map(json.dumps({"": "cpu"}))),
    Case("disk-without-offload-folder",
         zp("--device-map", "auto", "--max-memory", "cpu:1000"), ("--offload-folder",)),
    Case("map-file-disk-without-offload-folder", zp("--device-map", "map.json"),
         ("--device-map map.json", "disk", "--offload-folder"),
         setup=_map(json.dumps({"transformer.h": "disk", "": "cpu"}))),
    Case("masked-disk-without-offload-folder",
         belief("--device-map", "sequential", "--max-memory", "cpu:1KB"), ("--offload-folder",)),
    Case("offload-folder-is-a-file",
         zp("--device-map", "auto", "--max-memory", "cpu:1000", "--offload-folder",
            "userfile.txt"), ("--offload-folder userfile.txt", "a file")),
    Case("offload-folder-is-the-out-folder",
         zp("--device-map", "auto", "--offload-folder", "{ws}/out/weights"),
         ("--offload-folder", "inside the run's own folder out")),
    Case("offload-folder-in-the-checkpoints",
         zp("--device-map", "auto", "--offload-folder", "{ws}/.out.partial"),
         ("--offload-folder", ".out.partial")),
    Case("device-map-empty", zp("--device-map", ""), ("--device-map is empty",)),
    Case("device-map-a-folder", zp("--device-map", "mine"), ("--device-map mine", "a folder")),
    Case("device-map-binary", zp("--device-map", "map.json"), ("map.json", "not readable"),
         setup=lambda ws: (ws / "map.json").write_bytes(b"\xff\xfe\x00garbage")),
    Case("device-map-hostile-module-name", zp("--device-map", "map.json"),
         ("no module", "\\u202e"),
         setup=_map(json.dumps({"\u00e9\u202e": "cpu", "": "cpu"}))),
    Case("offload-folder-empty", zp("--device-map", "auto", "--offload-folder", ""),
         ("--offload-folder", "empty")),
    Case("device-map-to-the-fake-backend", zp("--backend", "fake", "--device-map", "auto"),
         ("--device-map",)),
]


def _gpu_cases() -> list[Case]:
    """A map naming a GPU, refused where none is (every CPU machine)."""
    import torch
    if torch.cuda.is_available():
        return []
    return [Case("device-map-gpu-absent", zp("--device-map", "map.json"), ("GPU 0",),
                 setup=_map(json.dumps({"": 0}))),
            Case("max-memory-gpu-absent",
                 zp("--device-map", "auto", "--max-memory", "0:1GiB,cpu:1GiB"), ("GPU 0",))]


@pytest.mark.parametrize("case", CASES + _gpu_cases(), ids=lambda c: c.id)
def test_bad_placement(case: Case, workspace):
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    proc = run(expand(case.argv, {"ws": str(workspace)}), cwd=workspace, env=case.env,
               timeout=case.timeout)
    check(proc, before, snapshot(workspace), needles=case.needles,
          new_ok=lambda p: p.startswith(".cache-factprobe"))
