"""`factprobe plant` and `factprobe eval zp-lke` on the sample, with the machine to themselves
and with one core held by another process, at the default thread choice (and with ``--old``
at torch's old default, one thread per core).

    python benchmarks/bench_busy.py --repeat 2 --old --json .bench/busy.jsonl

"Held": a child process spinning on one core of this process's affinity (a busy loop pinned
with ``sched_setaffinity``), started before the command and killed after it. Each command is a
fresh child process; ``plant`` runs the shipped params.yaml settings for a fixed ``--epochs``
(so that every run does the same work), ``eval zp-lke`` the shipped ``eval.zp_lke.args`` on
the planted model. Conditions alternate within each repetition, so a machine that gets busier
during the run slows every condition alike; the load average before each run is recorded.
Needs data/datasets/sample-mc and data/models/planted (``dvc repro`` makes them).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, emit, machine, versions  # noqa: E402


def _params() -> dict:
    import yaml
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def commands(work: Path, epochs: int) -> dict[str, list[str]]:
    p = _params()
    plant = p["plant"]
    cli = [sys.executable, "-m", "factprobe.cli.app"]
    return {
        "plant": cli + [
            "plant", "--quiet", "--dataset", "data/datasets/sample-mc", "--templates",
            "data/templates", "--seed", str(plant["seed"]), "--epochs", str(epochs),
            "--target-accuracy", str(plant["target_accuracy"]), "--layers",
            str(plant["layers"]), "--width", str(plant["width"]), "--vocab-size",
            str(plant["vocab_size"]), "--block", str(plant["block"]), "--batch-size",
            str(plant["batch_size"]), "--lr", str(plant["lr"]), "--weight-decay",
            str(plant["weight_decay"]), "--decay-share", str(plant["decay_share"]),
            "--out", str(work / "planted")],
        "eval zp-lke": cli + [
            "eval", "zp-lke", "--quiet", "--dataset", "data/datasets/sample-mc", "--model",
            "data/models/planted", *shlex.split(p["eval"]["zp_lke"]["args"]),
            "--no-subject-blind", "--out", str(work / "zp-lke")],
    }


def hold_core(core: int) -> subprocess.Popen:
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    return subprocess.Popen([sys.executable, "-c", code])


def timed(cmd: list[str], extra: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + extra, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd + extra)} failed: {proc.stderr[-2000:]}")
    return {"seconds": round(seconds, 2)}


def chosen(work: Path, name: str) -> int | None:
    if name == "plant":
        return json.loads((work / "planted" / "planted.json").read_text())["config"]["threads"]
    return json.loads((work / "zp-lke" / "run.json").read_text())["threads"]["threads"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2, help="plant epochs per run (2)")
    ap.add_argument("--only", choices=("plant", "eval zp-lke"), help="one command only")
    ap.add_argument("--old", action="store_true",
                    help="also time torch's old default, one thread per core (slow when busy)")
    ap.add_argument("--work", default=str(ROOT / ".bench" / "busy"))
    ap.add_argument("--json", help="append the result to this JSON-lines file")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for need in ("data/datasets/sample-mc", "data/models/planted"):
        if not (ROOT / need).exists():
            raise SystemExit(f"{need} is missing: run dvc repro first")
    cores = sorted(os.sched_getaffinity(0))
    all_threads = ["--threads", str(len(cores))]     # torch's own default: one per core
    # eval follows the load only with --threads auto (its default is the cores, for the same
    # bytes on any load); plant always trains on one thread
    settings = {"default": [], "auto": ["--threads", "auto"],
                **({"one per core (old default)": all_threads} if args.old else {})}
    results: dict = {}
    for name, cmd in commands(work, args.epochs).items():
        if args.only and name != args.only:
            continue
        runs: dict = {}
        for _ in range(args.repeat):
            for held in (False, True):
                for label, extra in settings.items():
                    spinner = hold_core(cores[-1]) if held else None
                    try:
                        time.sleep(0.5 if held else 0)   # the spinner is running before we start
                        load = os.getloadavg()[0]
                        got = timed(cmd, extra if name != "plant" or extra != ["--threads", "auto"]
                                    else [])
                    finally:
                        if spinner is not None:
                            spinner.kill()
                            spinner.wait()
                    got |= {"load_before": round(load, 2), "threads": chosen(work, name)}
                    runs.setdefault(f"{label}, {'one core held' if held else 'free'}",
                                    []).append(got)
                    print(name, label, "held" if held else "free", got, file=sys.stderr)
        med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
        results[name] = {
            "runs": runs, "median_s": med,
            "default_held_over_free": round(med["default, one core held"] / med["default, free"],
                                            3),
            "auto_held_over_free": round(med["auto, one core held"] / med["auto, free"], 3)}
        if args.old:
            old = "one per core (old default)"
            results[name] |= {
                "old_held_over_free": round(med[f"{old}, one core held"] / med[f"{old}, free"],
                                            3),
                "auto_free_over_old_free": round(med["auto, free"] / med[f"{old}, free"], 3)}
    emit({"benchmark": "plant and eval zp-lke with one core held", "cores": len(cores),
          "plant_epochs": args.epochs, **results, "machine": machine(),
          "versions": versions(), "loadavg_after": os.getloadavg()}, args.json, append=True)


if __name__ == "__main__":
    main()
