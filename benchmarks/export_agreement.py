"""`factprobe export lm-eval` agreement: the same questions scored by `factprobe eval` and by
lm-evaluation-harness (`lm_eval.simple_evaluate` on the exported task folder).

    python benchmarks/export_agreement.py --dataset data/datasets/sample-mc \\
        --model data/models/planted --method zp-lke --args "--examples 50"
    python benchmarks/export_agreement.py --dataset data/datasets/sample-mc \\
        --model data/models/planted --method prompt --args "--templates data/templates"

Prints one JSON object: both accuracies, the questions, how many questions' argmax agree, the
largest |difference| of an option's log-probability, and the machine. The eval side runs with
``--no-subject-blind`` (a planted model's null pass is not part of the export).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--method", choices=("zp-lke", "prompt"), default="zp-lke")
    p.add_argument("--args", default="", help="the method's flags, as eval takes them "
                   "(zp-lke: one --examples N and --seeds S, given to export as --seed S)")
    p.add_argument("--limit", type=int, help="at most N test facts per relation")
    p.add_argument("--batch-size", type=int, default=16)
    a = p.parse_args()

    import lm_eval
    from lm_eval.tasks import TaskManager

    from factprobe.cli.app import main as factprobe
    extra = shlex.split(a.args)
    limit = ["--limit", str(a.limit)] if a.limit else []
    export_extra = [("--seed" if x == "--seeds" else x) for x in extra]
    with tempfile.TemporaryDirectory() as tmp:
        task_dir, run = Path(tmp) / "task", Path(tmp) / "run"
        assert factprobe(["export", "lm-eval", a.dataset, str(task_dir), "--method", a.method,
                          *export_extra, *limit, "--quiet"]) == 0
        with common.Timer() as t_ours:
            assert factprobe(["eval", a.method, "--dataset", a.dataset, "--model", a.model,
                              "--out", str(run), "--response-tokens", "0", "--dtype", "float32",
                              "--device", "cpu", "--no-subject-blind", *extra, *limit,
                              "--quiet"]) == 0
        task = json.loads((task_dir / "factprobe_export.json").read_text())["task"]
        with common.Timer() as t_theirs:
            res = lm_eval.simple_evaluate(
                model="hf", model_args=f"pretrained={a.model},dtype=float32,device=cpu",
                tasks=[task], task_manager=TaskManager(include_path=str(task_dir)),
                batch_size=a.batch_size, log_samples=True)
        ours_acc = json.loads((run / "metrics.json").read_text())["mc_accuracy"]["value"]
        out = pd.read_parquet(run / "outputs.parquet")
    out = out[out["stage"] == "mc"]
    keys = ["fact_id"] + (["template_id"] if a.method == "prompt" else [])
    ours = {k if isinstance(k, tuple) else (k,): g.sort_values("option")["logprob"].to_numpy()
            for k, g in out.groupby(keys)}
    agree, diff = 0, 0.0
    for s in res["samples"][task]:
        lp = ours[tuple(s["doc"][k] for k in keys)]
        theirs = np.array([r[0] for r in s["filtered_resps"]], dtype=float)
        agree += int(np.argmax(theirs) == np.argmax(lp))
        diff = max(diff, float(np.abs(theirs - lp).max()))
    print(json.dumps({"dataset": a.dataset, "model": a.model, "method": a.method,
                      "args": a.args, "limit": a.limit, "questions": len(res["samples"][task]),
                      "factprobe_mc_accuracy": ours_acc,
                      "lm_eval_acc": round(res["results"][task]["acc,none"], 6),
                      "argmax_agree": agree, "max_abs_logprob_diff": diff,
                      "seconds": {"factprobe": round(t_ours.seconds, 1),
                                  "lm_eval": round(t_theirs.seconds, 1)},
                      "machine": common.machine(), "versions": common.versions()}, indent=1))


if __name__ == "__main__":
    main()
