"""The planted-model acceptance on real T-REx facts: plant time, convergence, and every method's
validity block with its nulls, on facts that are not in this repository.

    python benchmarks/real_trex.py --path pararel/data --work /tmp/real-trex --json out.json

`--path` is a published release read by one of factprobe's importers: ParaRel's `data/` folder
(yanaiela/pararel: `trex_lms_vocab/P<id>.jsonl`, LAMA's T-REx facts filtered to the models'
vocabularies) by default, or with `--source trex` / `--source lama` a LAMA-style folder of
`P<id>.jsonl`. Every step is the command a user runs (`factprobe build facts --limit 100`, `build mc
--choices 10 --train 60 --test 40`, `plant` and `plant --masked` with their defaults and the
hand-written templates of data/templates, then `eval` of each method), so the figures are
those of the CLI, timed as whole processes. After the causal plant it also scores
benchmarks/planting_subject_only.py's three subject-only numbers (the `entropy` one is not
part of `eval`). Prints one table and, with `--json`, writes every figure.

The other importers run the same chain (`--source lama|entityquestions|bear|pararel`): the
builds take the benchmark's own templates (`build import-templates --format SOURCE`) where
docs/benchmarks-in.md poses a method on them (LAMA's and BEAR's for the prompt baseline,
EntityQuestions' question for MONITOR, ParaRel's patterns for BELIEF, BELIEF-ICL and MONITOR's
statement frames; `--bench-templates none` keeps data/templates everywhere), and the planted
models are taught data/templates as docs/planting.md says, or with `--plant-templates bench`
the imported ones (LAMA's Google-RE relations have no file in data/templates). `--models` reuses
planted models already trained on the same MC set (plant is deterministic: the same set and
defaults give the same bytes), so a second set of templates costs only the evals.

Nothing here is downloaded: fetch the release yourself (a clone of yanaiela/pararel).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "data" / "templates"
# the relations of the check: 4 x 100 facts (60 train / 40 test, 10 choices); every
# one has a hand-written template file in data/templates
RELATIONS = "P19,P36,P103,P176"
# where docs/benchmarks-in.md poses a method on the benchmark's own templates: the builds (and
# the prompt baseline's --templates) that take them, and the fktc options the page gives
BENCH = {"lama": {"prompt"},
         "bear": {"prompt"},
         "entityquestions": {"fktc"},
         "pararel": {"multiprompt", "fktc"}}
FKTC_ARGS = {"entityquestions": ["--questions", "1"], "pararel": ["--frame", "statement"],
             "lama": ["--frame", "statement"]}


def run(args: list[str], log: Path) -> dict:
    """One CLI process, its wall time and the CPU time of it and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(args[:4])} failed (exit {done.returncode}); see {log}")
    return {"wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1)}


def validity(run_dir: Path) -> dict:
    """The validity block(s) of a run's metrics.json, found wherever the method keeps them."""
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    found = {}

    def walk(node, path):
        if isinstance(node, dict):
            if "auroc" in node and "planted" in node and "held_out" in node:
                found[path or "validity"] = node
                return
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else k)
    walk(metrics, "")
    return found


def headline(block: dict) -> dict:
    """AUROC, the nulls' AUROCs and the subject-only AUROCs of one validity block."""
    def value(node):
        return None if node is None else node.get("value") if isinstance(node, dict) else node
    out = {"auroc": value(block["auroc"])}
    for null in ("subject_blind", "link_shuffle"):
        if isinstance(block.get(null), dict):
            out[null] = value(block[null].get("auroc")) if "auroc" in block[null] else \
                block[null].get("reason", "undefined")
    for name, node in (block.get("subject_only") or {}).items():
        if isinstance(node, dict) and "auroc" in node:
            out[f"subject_only.{name}"] = value(node["auroc"])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", required=True, help="the release folder (ParaRel's data/)")
    p.add_argument("--source", default="pararel", help="the importer (pararel, trex, lama)")
    p.add_argument("--relations", default=RELATIONS)
    p.add_argument("--facts", type=int, default=100,
                   help="facts per relation in the MC set (60 train / 40 test); with the default "
                        "--limit every fact read, so the multi-prompt and FKTC sets hold "
                        "the same facts")
    p.add_argument("--limit", type=int, default=None,
                   help="facts read per relation (default --facts). More where the release "
                        "repeats facts, so that the MC set still finds --facts distinct "
                        "pairs (ParaRel's first 100 P176 lines hold 99); the multi-prompt "
                        "and FKTC sets then hold the extra facts too, which no validity "
                        "block counts (they are neither planted nor held out)")
    p.add_argument("--work", required=True, help="a new folder for the datasets and runs")
    p.add_argument("--methods", default="zp-lke,prompt,belief-icl,monitor,belief")
    p.add_argument("--bench-templates", default="auto",
                   help="builds on the benchmark's own templates: auto (where the docs say), "
                        "all (templates, multiprompt, fktc and prompt) or none")
    p.add_argument("--plant-templates", default=str(TEMPLATES),
                   help="what the planted models are taught: a templates folder or dataset, "
                        "or 'bench' for the imported ones (default data/templates)")
    p.add_argument("--fktc-args", default=None,
                   help="extra build fktc options, space-separated (default: the docs' ones)")
    p.add_argument("--models", help="a folder with planted/ and planted-mlm/ already trained "
                                    "on this MC set: reused instead of planting")
    p.add_argument("--builds-only", action="store_true",
                   help="stop after the datasets are built (to check an import cheaply)")
    p.add_argument("--json")
    a = p.parse_args(argv)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    d = work / "datasets"
    fp = [sys.executable, "-m", "factprobe.cli.app"]
    steps: dict[str, dict] = {}

    def step(name: str, *args: str) -> None:
        steps[name] = run([*fp, *args], work / f"{name}.log")
        print(f"{name}: {steps[name]['wall_s']} s wall, {steps[name]['cpu_s']} CPU-s", flush=True)

    step("facts", "build", "facts", "--quiet", "--source", a.source, "--path", a.path,
         "--relations", a.relations, "--limit", str(a.limit or a.facts),
         "--out", str(d / "facts"))
    step("mc", "build", "mc", "--quiet", "--facts", str(d / "facts"), "--out", str(d / "mc"),
         "--choices", "10", "--min-facts", str(a.facts), "--min-objects", "10",
         "--train", str(a.facts * 3 // 5), "--test", str(a.facts - a.facts * 3 // 5))
    bench_for = {"none": set(), "all": {"prompt", "multiprompt", "fktc"},
                 "auto": BENCH.get(a.source, set())}.get(a.bench_templates)
    if bench_for is None:
        p.error("--bench-templates is auto, all or none")
    if a.plant_templates == "bench":
        bench_for = bench_for | {"plant"}
    if bench_for:
        step("import_templates", "build", "import-templates", "--quiet", "--format",
             {"trex": "lama"}.get(a.source, a.source), "--path", a.path,
             "--relations", a.relations, "--out", str(d / "bench-templates"))

    if not {"multiprompt", "fktc"} <= bench_for:
        # data/templates' statements and questions, for the builds that do not take the
        # benchmark's own (Google-RE's relations have no file there: --bench-templates all)
        step("templates", "build", "templates", "--quiet", "--facts", str(d / "facts"),
             "--templates-dir", str(TEMPLATES), "--paraphrases", "0",
             "--out", str(d / "templates"))

    def templates_for(use: str) -> str:
        return str(d / ("bench-templates" if use in bench_for else "templates"))
    step("multiprompt", "build", "multiprompt", "--quiet", "--facts", str(d / "facts"),
         "--templates", templates_for("multiprompt"), "--out", str(d / "multiprompt"))
    fktc_args = (a.fktc_args.split() if a.fktc_args is not None
                 else FKTC_ARGS.get(a.source, []) if "fktc" in bench_for else [])
    step("fktc", "build", "fktc", "--quiet", "--facts", str(d / "facts"),
         "--templates", templates_for("fktc"), *fktc_args, "--out", str(d / "fktc"))
    if a.builds_only:
        return 0
    taught = templates_for("plant") if a.plant_templates == "bench" else a.plant_templates
    models = Path(a.models) if a.models else work / "models"
    if not a.models:
        step("plant", "plant", "--quiet", "--dataset", str(d / "mc"), "--templates", taught,
             "--out", str(models / "planted"))
    methods = a.methods.split(",")
    if "belief" in methods and not a.models:
        step("plant_masked", "plant", "--quiet", "--masked", "--dataset", str(d / "mc"),
             "--templates", taught, "--out", str(models / "planted-mlm"))
    args = {"zp-lke": ["--dataset", str(d / "mc"), "--examples", "50", "--seeds", "0"],
            "prompt": ["--dataset", str(d / "mc"), "--templates",
                       templates_for("prompt") if "prompt" in bench_for else taught],
            "belief-icl": ["--dataset", str(d / "multiprompt"), "--max-names", "1",
                           "--samples", "10", "--sample-prompts", "100"],
            "monitor": ["--dataset", str(d / "fktc")],
            "belief": ["--dataset", str(d / "multiprompt"), "--max-names", "1"]}
    blocks = {}
    for m in methods:
        model = models / ("planted-mlm" if m == "belief" else "planted")
        out = work / "runs" / m
        step(f"eval_{m}", "eval", m, "--quiet", *args[m], "--model", str(model),
             "--out", str(out))
        blocks[m] = {k: headline(v) for k, v in validity(out).items()}
    step("report", "report", "--quiet", "--no-plots", "--results", str(work / "runs"),
         "--out", str(work / "report"))
    subject_only = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "planting_subject_only.py"), "--json",
         "--model", str(models / "planted"), "--dataset", str(d / "mc")],
        capture_output=True, text=True, check=True).stdout
    plants = {}
    for name in ("planted", "planted-mlm"):
        meta = models / name / "planted.json"
        if meta.exists():
            info = json.loads(meta.read_text(encoding="utf-8"))
            plants[name] = {k: info.get(k) for k in ("epochs_run", "steps", "converged")}
            plants[name]["final_accuracy"] = (info.get("planted_accuracy") or [None])[-1]
    facts_meta = json.loads((d / "facts" / "dataset.json").read_text(encoding="utf-8"))
    imported = {"counts": facts_meta.get("counts"),
                "skipped": (facts_meta.get("source") or {}).get("skipped"),
                "release": (facts_meta.get("source") or {}).get("release")}
    result = {"relations": a.relations, "source": a.source, "path": a.path,
              "bench_templates": sorted(bench_for), "plant_templates": taught,
              "imported": imported, "steps": steps, "plants": plants,
              "validity": blocks,
              "subject_only_script": json.loads(subject_only[subject_only.index("{"):])}
    print(json.dumps({"imported": imported, "plants": plants, "validity": blocks,
                      "subject_only_script": result["subject_only_script"]}, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
