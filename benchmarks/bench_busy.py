"""`factprobe plant` and `factprobe eval zp-lke` on the sample, with the machine to themselves
and with one core held by another process, at the default thread choice and ``--threads auto``
(and with ``--old`` at torch's old default for plant, one thread per core).

    python benchmarks/bench_busy.py --repeat 2 --old --json .bench/busy.jsonl

``eval`` computes on lanes (threads of one torch thread each, ``factprobe/core/lanes.py``);
``--intra-op`` also times how it computed before them, for comparison in the same run: one
lane on torch's intra-op threads, as many as the cores (``intra-op default``) or the free
cores (``intra-op auto``), set by a shim that replaces the thread choice before the command
runs (nothing in factprobe takes that path any more).

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
import hashlib
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


def commands(work: Path, epochs: int, methods: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """plant, eval zp-lke, and ``eval M`` for each of ``methods`` (params.yaml's dataset and
    flags for M, the planted model, or the masked one for belief)."""
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
            "--lists-per-relation", str(plant["lists_per_relation"]),
            "--out", str(work / "planted")],
        "eval zp-lke": cli + [
            "eval", "zp-lke", "--quiet", "--dataset", "data/datasets/sample-mc", "--model",
            "data/models/planted", *shlex.split(p["eval"]["zp_lke"]["args"]),
            "--no-subject-blind", "--out", str(work / "zp-lke")],
    } | {f"eval {m}": cli + [
        "eval", m, "--quiet", "--dataset",
        f"data/datasets/{p['eval'][m.replace('-', '_')]['dataset']}", "--model",
        "data/models/planted-mlm" if m == "belief" else "data/models/planted",
        *shlex.split(p["eval"][m.replace("-", "_")]["args"]), "--no-subject-blind",
        "--out", str(work / m)] for m in methods}


def hold_core(core: int) -> subprocess.Popen:
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    return subprocess.Popen([sys.executable, "-c", code])


# the command as it ran before lanes: factprobe.cli.threads.apply_threads replaced by one that
# sets torch's intra-op threads to the count and computes on one lane
INTRA_OP = """
import sys
import factprobe.cli.threads as threads
mode = sys.argv.pop(1)
def intra_op(requested, work_cap=None, lanes=False):
    import torch
    from factprobe.core.cpus import choose_threads
    choice = choose_threads("auto" if mode == "auto" else requested, work_cap)
    torch.set_num_threads(choice.threads)
    return choice.as_dict() | {"threads": 1, "intra_op": choice.threads}
threads.apply_threads = intra_op
from factprobe.cli.app import main
sys.argv[0] = "factprobe"
raise SystemExit(main())
"""


def intra_op(cmd: list[str], mode: str) -> list[str]:
    """``cmd`` (``python -m factprobe.cli.app ...``) on torch's intra-op threads, one lane."""
    return [cmd[0], "-c", INTRA_OP, mode, *cmd[3:]]


def timed(cmd: list[str], extra: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + extra, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd + extra)} failed: {proc.stderr[-2000:]}")
    return {"seconds": round(seconds, 2)}


def chosen(work: Path, name: str) -> dict:
    if name == "plant":
        # planted.json does not record the thread count (it follows the load epoch by epoch
        # and changes no byte); the weights' hash shows the bytes are the same free and held
        return {"threads": None, "weights_sha256": hashlib.sha256(
            (work / "planted" / "model.safetensors").read_bytes()).hexdigest()}
    folder = work / name.split()[1]
    run = json.loads((folder / "run.json").read_text())
    t = run["threads"]
    return {"threads": t.get("intra_op", t["threads"]), "lanes": t["threads"],
            "session_s": run["timings_s"]["total"],
            "outputs_sha256": hashlib.sha256(
                (folder / "outputs.parquet").read_bytes()).hexdigest()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2, help="plant epochs per run (2)")
    ap.add_argument("--only", choices=("plant", "eval zp-lke", "eval"),
                    help="one command only ('eval': the evals only)")
    ap.add_argument("--methods", default="",
                    help="also eval these methods (comma-separated: prompt, belief-icl, "
                         "monitor, belief), params.yaml's settings, --no-subject-blind")
    ap.add_argument("--old", action="store_true",
                    help="also time torch's old default, one thread per core (slow when busy)")
    ap.add_argument("--intra-op", action="store_true",
                    help="also time eval as it computed before lanes: torch's intra-op "
                         "threads on one lane, at the cores and at --threads auto")
    ap.add_argument("--work", default=str(ROOT / ".bench" / "busy"))
    ap.add_argument("--json", help="append the result to this JSON-lines file")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for need in ("data/datasets/sample-mc", "data/models/planted") + \
            (("data/models/planted-mlm",) if "belief" in args.methods.split(",") else ()):
        if not (ROOT / need).exists():
            raise SystemExit(f"{need} is missing: run dvc repro first")
    cores = sorted(os.sched_getaffinity(0))
    all_threads = ["--threads", str(len(cores))]     # torch's own default: one per core
    # plant always trains on one thread unless told; eval's lanes give the same bytes on any
    # count, so its auto only decides the speed
    settings = {"default": [], "auto": ["--threads", "auto"],
                **({"one per core (old default)": all_threads} if args.old else {})}
    before = {"intra-op default": "cores", "intra-op auto": "auto"} if args.intra_op else {}
    results: dict = {}
    methods = tuple(m for m in args.methods.split(",") if m)
    for name, cmd in commands(work, args.epochs, methods).items():
        if args.only and name != args.only and not (args.only == "eval" and name != "plant"):
            continue
        runs: dict = {}
        # eval's old default is --intra-op's (--threads N now counts lanes)
        these = {k: v for k, v in settings.items() if name == "plant" or v != all_threads} | \
            ({k: ["intra-op", m] for k, m in before.items()} if name != "plant" else {})
        for _ in range(args.repeat):
            for held in (False, True):
                for label, extra in these.items():
                    spinner = hold_core(cores[-1]) if held else None
                    try:
                        time.sleep(0.5 if held else 0)   # the spinner is running before we start
                        load = os.getloadavg()[0]
                        if extra[:1] == ["intra-op"]:
                            got = timed(intra_op(cmd, extra[1]), [])
                        else:
                            got = timed(cmd, extra if name != "plant" or
                                        extra != ["--threads", "auto"] else [])
                    finally:
                        if spinner is not None:
                            spinner.kill()
                            spinner.wait()
                    got |= {"load_before": round(load, 2), **chosen(work, name)}
                    runs.setdefault(f"{label}, {'one core held' if held else 'free'}",
                                    []).append(got)
                    print(name, label, "held" if held else "free", got, file=sys.stderr)
        med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
        results[name] = {
            "runs": runs, "median_s": med,
            "default_held_over_free": round(med["default, one core held"] / med["default, free"],
                                            3),
            "auto_held_over_free": round(med["auto, one core held"] / med["auto, free"], 3)}
        for label in (before if name != "plant" else ()):   # --intra-op times eval only
            results[name][f"{label}_held_over_free".replace(" ", "_")] = round(
                med[f"{label}, one core held"] / med[f"{label}, free"], 3)
            results[name][f"default_free_over_{label}_free".replace(" ", "_")] = round(
                med["default, free"] / med[f"{label}, free"], 3)
        if name != "plant":
            # outputs.parquet: one sha256 for every lanes run, free or held, whatever the count
            lanes = [r["outputs_sha256"] for k, v in runs.items() if not k.startswith("intra-op")
                     for r in v]
            results[name]["distinct_outputs_on_lanes"] = len(set(lanes))
            results[name]["distinct_outputs_all"] = len({r["outputs_sha256"]
                                                         for v in runs.values() for r in v})
        if args.old and name == "plant":
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
