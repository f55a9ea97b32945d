"""--kernels: torch held to its AVX2 kernels (portable, the default) or left to pick its own
(native), chosen before torch is imported and recorded in run.json and planted.json
(factprobe/core/kernels.py)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from factprobe.core import kernels
from tests.evaluators.cli.test_eval_cli import ROOT, mc_dir, run  # noqa: F401  (a fixture)

needs_avx2 = pytest.mark.skipif(not kernels.can_pin(), reason="needs an x86-64 CPU with AVX2")
PINNED = {"aten": "AVX2", "onednn_max_isa": "AVX2", "mkl_cbwr": "AVX2",
          "vendor": kernels.cpu_vendor()}


def _clean_env() -> dict:
    """This process's environment without the variables tests/conftest.py's pin set."""
    return {k: v for k, v in os.environ.items() if k not in kernels.PORTABLE}


def _capability(code: str, env: dict) -> str:
    return subprocess.run([sys.executable, "-c", code + "\nimport torch\n"
                           "print(torch.backends.cpu.get_cpu_capability())"],
                          capture_output=True, text=True, check=True, env=env).stdout.strip()


@pytest.mark.slow
@needs_avx2
def test_pin_before_torch_holds_aten_to_avx2_and_native_is_torchs_own_choice():
    env = _clean_env()
    own = _capability("", env)
    pinned = _capability("from factprobe.core.kernels import pin\nassert pin('portable')", env)
    native = _capability("from factprobe.core.kernels import pin\nassert not pin('native')", env)
    assert pinned == "AVX2" and native == own
    # too late once torch is in: nothing is set, and the warning names what ran
    late = subprocess.run([sys.executable, "-c",
                           "import os, torch\nfrom factprobe.core import kernels\n"
                           "assert not kernels.pin('portable')\n"
                           "print(kernels.too_late('portable') or '')\n"
                           "assert 'MKL_CBWR' not in os.environ"],
                          capture_output=True, text=True, check=True, env=env).stdout
    assert (own in late and "export" in late) if own != "AVX2" else late.strip() == ""


def test_a_users_own_setting_wins():
    env = {"ATEN_CPU_CAPABILITY": "default"}
    assert kernels.pin("portable", env, imported=False, pinnable=True)
    assert env == {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "AVX2",
                   "MKL_CBWR": "AVX2"}
    with pytest.raises(ValueError):
        kernels.pin("fastest", {}, imported=False, pinnable=True)


@needs_avx2
def test_this_test_process_computes_with_the_portable_kernels():
    # conftest pins before anything imports torch, so a command run in this process computes
    # as one in a new process does
    import torch  # noqa: F401
    assert kernels.in_effect() == PINNED and kernels.too_late("portable") is None


@pytest.mark.slow
@needs_avx2
def test_eval_and_plant_record_the_kernels(mc_dir, tiny_causal_dir, tmp_path):  # noqa: F811
    base = ["eval", "zp-lke", "--dataset", str(mc_dir), "--model", str(tiny_causal_dir),
            "--examples", "2", "--response-tokens", "2", "--limit", "2"]
    proc = run(*base, "--out", str(tmp_path / "portable"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "portable" / "run.json").read_text())["kernels"] == PINNED
    # native needs a process of its own: torch is loaded here already
    proc = subprocess.run([sys.executable, "-m", "factprobe.cli", *base, "--quiet",
                           "--kernels", "native", "--out", str(tmp_path / "native")],
                          capture_output=True, text=True, env=_clean_env(), cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads((tmp_path / "native" / "run.json").read_text())["kernels"]
    assert got == {"aten": _capability("", _clean_env()), "onednn_max_isa": "native",
                   "mkl_cbwr": "native", "vendor": kernels.cpu_vendor()}
    proc = run("plant", "--dataset", str(mc_dir), "--epochs", "1", "--layers", "1", "--width",
               "32", "--heads", "2", "--vocab-size", "300", "--templates", "", "--threads", "1",
               "--out", str(tmp_path / "model"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "model" / "planted.json").read_text())["kernels"] == PINNED


def test_the_vendor_is_read_from_the_systems_cpu_list(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 fma\n")
    assert kernels.cpu_vendor(str(info)) == "AuthenticAMD"
    assert kernels.cpu_flags(str(info)) == {"fpu", "avx2", "fma"}
    # no list (not Linux): the architecture stands in, never an error
    assert kernels.cpu_vendor(str(tmp_path / "absent")) == (platform.machine() or "unknown")


def test_an_unknown_choice_is_one_line_and_exit_2(mc_dir, tmp_path):  # noqa: F811
    proc = run("plant", "--dataset", str(mc_dir), "--kernels", "fastest",
               "--out", str(tmp_path / "m"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--kernels" in proc.stderr and "portable" in proc.stderr
    assert not (tmp_path / "m").exists()
