"""Which CPU kernels torch computes with, so that a model trained or scored on one x86-64
machine has the same bits on another of its vendor's.

Torch chooses three things from the CPU it runs on: ATen's vectorised kernels (softmax, layer
norm, AdamW: AVX2 or AVX-512), oneDNN's primitives, and MKL's GEMM code path. The same seed,
data and thread count therefore train other bits on an AVX-512 machine than on an AVX2 one.
Measured 2026-12-02: the shipped sample's two planted models, trained on an AMD EPYC with
AVX-512, differed from those of an AVX2 EPYC (dvc.lock's hashes); with ATen and oneDNN held
to AVX2 they were the same bytes, and ZP-LKE's scores of the same model were too. MKL's
conditional numerical reproducibility (``MKL_CBWR``) holds its GEMMs to the AVX2 branch.

That does not reach across vendors: on an Intel Xeon (AMX) the same pins planted other bytes
than both AMD machines, and so did every MKL branch tried there (AVX2 with and without CNR,
AVX, SSE4.2, COMPATIBLE, AVX-512: docs/planting.md). So the vendor is part of the record,
and of a run's resume identity, with the three settings.

``portable`` (the default of ``plant`` and ``eval``) sets the three variables before torch is
imported; ``native`` leaves torch to choose (faster GEMMs on AVX-512 and AMX machines, other
bits). A variable the user exported wins; a CPU without AVX2 (or not x86-64) runs natively,
and what ran is recorded (:func:`in_effect`) in planted.json and run.json."""
from __future__ import annotations

import os
import platform
import sys
from collections.abc import MutableMapping

MODES = ("portable", "native")

PORTABLE = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}
# what in_effect() reads where PORTABLE holds
PORTABLE_RECORD = {"aten": "AVX2", "onednn_max_isa": "AVX2", "mkl_cbwr": "AVX2"}

HELP = ("CPU kernels torch computes with: 'portable' (default) holds ATen, oneDNN and MKL to "
        "their AVX2 code, the same bits on every x86-64 machine with AVX2; 'native' lets torch "
        "pick the CPU's widest (AVX-512, AMX: faster matrix products, other bits). Must be "
        "chosen before torch is imported; recorded in {where}")


def _cpuinfo(field: str, cpuinfo: str) -> str | None:
    """The first ``field`` line's value in the system's CPU list (Linux); None elsewhere."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(field):
                    return line.partition(":")[2]
    except OSError:
        pass
    return None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags, where the system lists them (Linux); empty elsewhere."""
    return set((_cpuinfo("flags", cpuinfo) or "").split())


def cpu_vendor(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's vendor as the system names it (``GenuineIntel``, ``AuthenticAMD``), or the
    machine's architecture where the system lists none (not Linux, not x86)."""
    vendor = (_cpuinfo("vendor_id", cpuinfo) or "").strip()
    return vendor or platform.machine() or "unknown"


def can_pin(machine: str | None = None, flags: set[str] | None = None) -> bool:
    """Whether the AVX2 kernels exist here: x86-64 with AVX2 and FMA.

    >>> can_pin("x86_64", {"avx2", "fma", "sse4_2"}), can_pin("x86_64", {"sse4_2"})
    (True, False)
    >>> can_pin("aarch64", {"avx2", "fma"})
    False
    """
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64"):
        return False
    flags = cpu_flags() if flags is None else flags
    return {"avx2", "fma"} <= flags


def pin(mode: str = "portable", environ: MutableMapping[str, str] | None = None,
        imported: bool | None = None, pinnable: bool | None = None) -> bool:
    """Set the portable kernels' variables (those the user has not set) unless ``mode`` is
    native, torch is already imported (it has read them: too late) or the CPU lacks AVX2.
    Returns whether it set them.

    >>> env = {"MKL_CBWR": "COMPATIBLE"}
    >>> pin("portable", env, imported=False, pinnable=True), sorted(env.items())
    (True, [('ATEN_CPU_CAPABILITY', 'avx2'), ('MKL_CBWR', 'COMPATIBLE'), ('ONEDNN_MAX_CPU_ISA', 'AVX2')])
    >>> env = {}
    >>> pin("native", env, imported=False, pinnable=True), pin("portable", env, imported=True), env
    (False, False, {})
    """
    if mode not in MODES:
        raise ValueError(f"kernels: {mode!r} is not one of {', '.join(MODES)}")
    environ = os.environ if environ is None else environ
    imported = "torch" in sys.modules if imported is None else imported
    if mode == "native" or imported or not (can_pin() if pinnable is None else pinnable):
        return False
    for name, value in PORTABLE.items():
        environ.setdefault(name, value)
    return True


def too_late(mode: str) -> str | None:
    """The warning for a portable run that cannot be one: this process imported torch before
    factprobe could choose (a library caller's own ``import torch``), and torch chose wider
    kernels. None where the run computes as asked."""
    if mode != "portable" or "torch" not in sys.modules or not can_pin():
        return None
    got = in_effect()
    if {k: got[k] for k in PORTABLE_RECORD} == PORTABLE_RECORD:
        return None
    how = " ".join(f"{k}={v}" for k, v in PORTABLE.items())
    return (f"torch was imported before factprobe chose its CPU kernels, so this run computes "
            f"with torch's own ({got['aten']}; recorded as such) and its bits may differ from "
            f"another machine's: call factprobe before importing torch, or export {how}")


def in_effect() -> dict | None:
    """What torch computes with in this process, and on whose CPU, for planted.json and
    run.json; None where torch was never imported (a served model's backend)."""
    if "torch" not in sys.modules:
        return None
    import torch
    return {"aten": torch.backends.cpu.get_cpu_capability(),
            "onednn_max_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "native"),
            "mkl_cbwr": os.environ.get("MKL_CBWR", "native"),
            # the same pins compute other bits on another vendor's CPU (measured: module doc)
            "vendor": cpu_vendor()}
