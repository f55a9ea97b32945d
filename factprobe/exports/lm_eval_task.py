"""``factprobe export lm-eval``: a dataset as an lm-evaluation-harness ``multiple_choice`` task
whose questions are exactly those of ``factprobe eval zp-lke`` or ``factprobe eval prompt``.

The folder::

    <task>.yaml              the task: doc_to_text context, doc_to_choice choices, doc_to_target
                             label, target_delimiter "", metric acc
    <task>.jsonl             one question a line: its exact prompt (context), its exact
                             continuations (choices, each with its leading separator), the
                             gold's index (label), and fact_id, relation_id, gold, ...
    factprobe_docs.py        loads the .jsonl from beside itself (the task's custom_dataset),
                             so the folder runs from any working directory
    factprobe_export.json    what was exported, from what, and the files (the folder's marker)

The rows come from the method's own plan (:mod:`factprobe.probes.methods.zp_lke`,
:mod:`factprobe.probes.methods.prompt`), so the prompts cannot drift from what ``factprobe eval`` scores.
lm-eval asks for ``context + target_delimiter + choice``; with the delimiter empty and the
separator inside each choice, it scores the same (context, continuation) pairs as factprobe,
and its ``acc`` (the argmax of the summed log-probabilities, ties to the first choice) is
factprobe's MC correctness. Both prepend BOS as the tokenizer does by default.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from factprobe.core.errors import UserError
from factprobe.core.outdir import atomic_folder
from factprobe.exports.files import jsonl, need_rows, safe_name, test_facts, write_marker

LOADER = "factprobe_docs.py"
# Kept to what factprobe reads back (fact_id, relation_id...), in this order.
META_KEYS = ("fact_id", "relation_id", "gold", "template_id", "seed", "n_examples")


@dataclass(frozen=True)
class LMEvalExport:
    dataset: str                  # as the user gave it (recorded in the marker)
    out: str
    method: str                   # zp-lke | prompt
    method_config: object         # ZPLKEConfig | PromptConfig, response test off
    task: str = ""                # lm-eval task name; default factprobe_<dataset>_<method>
    relations: tuple[str, ...] | None = None
    limit: int | None = None
    # zp-lke without --examples: the paper's 50, or fewer where a relation has fewer train
    # facts (as `factprobe init` sizes eval.zp_lke to the graph)
    sized_examples: bool = False


def task_name(cfg: LMEvalExport, folder: Path) -> str:
    if cfg.task:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", cfg.task):
            raise UserError(f"--task {cfg.task!r}: a task name is a letter, then letters, "
                            f"digits, '_' or '-'")
        return cfg.task
    return "factprobe_" + safe_name(f"{folder.name}_{cfg.method}").replace("-", "_")


def require_choices(facts: pd.DataFrame, dataset: str) -> None:
    """lm-eval's task is the dataset's multiple choice: every test fact needs its choices."""
    hint = (f"export a multiple-choice dataset (build one with 'factprobe build mc --facts "
            f"{dataset} --out MC_DIR')")
    if "choices" not in facts.columns:
        raise UserError(f"{dataset} has no choices column; {hint}")
    test = facts[test_facts(facts)]
    empty = test["choices"].map(lambda c: c is None or len(c) == 0)
    if empty.any():
        raise UserError(f"{int(empty.sum())} of {len(test)} test facts in {dataset} have no "
                        f"choices (first: {test.loc[empty, 'fact_id'].iloc[0]}); {hint}")


def questions(plan) -> list[dict]:
    """One row per multiple-choice question of ``plan`` (its ``mc`` stage), in plan order."""
    stage = next((s for s in plan.stages if s.name == "mc"), None)
    rows = []
    for req in stage.requests if stage else ():
        gold = [k for k, m in enumerate(req.option_meta) if m.get("is_gold")]
        if len(gold) != 1:
            raise UserError(f"fact {req.meta.get('fact_id')} has {len(gold)} gold choices "
                            f"(exactly one expected): its choices must hold its object once")
        row = {"context": req.context, "choices": list(req.continuations), "label": gold[0]}
        row.update({k: req.meta[k] for k in META_KEYS if k in req.meta})
        rows.append(row)
    return rows


def _yaml(task: str, data_file: str, method: str, rows: int) -> str:
    # Written by hand: the "!function" tag is lm-eval's, which yaml.safe_dump cannot write.
    # Strings are JSON-quoted, which YAML reads as they are.
    return f"""\
# lm-evaluation-harness task written by 'factprobe export lm-eval' (method {method}).
# {rows} questions in {data_file}: each row's context is the exact prompt, its choices the
# exact continuations (each with its leading separator, hence target_delimiter ""), and
# label the gold's index. Run:
#   lm_eval --model hf --model_args pretrained=MODEL --include_path THIS_FOLDER --tasks {task}
task: "{task}"
custom_dataset: !function factprobe_docs.load
output_type: multiple_choice
test_split: test
doc_to_text: context
doc_to_choice: choices
doc_to_target: label
target_delimiter: ""
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def _loader(data_file: str) -> str:
    return f'''\
"""Loads {data_file} from beside this file for lm-evaluation-harness (the task's
custom_dataset), so the task folder runs from any working directory. Written by factprobe."""
import json
from pathlib import Path

import datasets

DATA = Path(__file__).resolve().parent / "{data_file}"


def load(**_):
    lines = DATA.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return datasets.DatasetDict({{"test": datasets.Dataset.from_list(rows)}})
'''


def export_lm_eval(cfg: LMEvalExport) -> str:
    """Write the task folder (atomically); returns the line the CLI prints."""
    from factprobe.builders.inputs import open_input
    from factprobe.evaluators.methods import METHODS, load_tables
    from factprobe.probes.engine.runner import select_facts

    method = METHODS[cfg.method]
    folder = open_input(cfg.dataset)
    task = task_name(cfg, folder)
    tables = load_tables(folder, method.probe.tables, cfg.method)
    tables["facts"] = select_facts(tables["facts"], cfg.relations, cfg.limit)
    require_choices(tables["facts"], cfg.dataset)
    sized = ""
    if cfg.sized_examples:
        cfg, sized = _sized(cfg, tables["facts"])
    plan = method.probe.plan(tables, cfg.method_config)
    rows = questions(plan)
    need_rows(rows, cfg.dataset, "questions")
    per_fact = pd.Series([r["fact_id"] for r in rows]).value_counts()
    data_file = f"{task}.jsonl"
    info = {"task": task, "method": cfg.method, "dataset": cfg.dataset,
            "method_config": _config_dict(cfg.method_config),
            "relations": sorted({r["relation_id"] for r in rows}), "questions": len(rows),
            "facts": int(len(per_fact)), "skipped_relations": dict(plan.skipped or {})}
    with atomic_folder(cfg.out, "export", flag="OUT") as tmp:
        (tmp / data_file).write_text(jsonl(rows), encoding="utf-8")
        (tmp / f"{task}.yaml").write_text(_yaml(task, data_file, cfg.method, len(rows)),
                                          encoding="utf-8")
        (tmp / LOADER).write_text(_loader(data_file), encoding="utf-8")
        write_marker(tmp, "lm-eval", info)
    note = ""
    if per_fact.nunique() > 1:
        # lm-eval averages questions; factprobe first averages each fact's questions
        note = (f"; facts have {per_fact.min()} to {per_fact.max()} questions each, so lm-eval's "
                f"acc (a mean over questions) can differ from factprobe's mc_accuracy (a mean "
                f"over facts)")
    return (f"wrote {cfg.out}: lm-eval task {task}, {len(rows)} questions on {len(per_fact)} "
            f"facts{sized}; run it with lm_eval --include_path {cfg.out} --tasks {task}{note}")


def _sized(cfg: LMEvalExport, facts: pd.DataFrame) -> tuple[LMEvalExport, str]:
    """ZP-LKE's default 50 examples, lowered to the train facts of the relation with fewest
    (among those with test facts to ask about), and the words saying so."""
    import dataclasses
    want = cfg.method_config.n_examples[0]
    split = facts["split"] if "split" in facts.columns else pd.Series("", index=facts.index)
    asked = set(facts.loc[split == "test", "relation_id"])
    train = facts[split == "train"]["relation_id"].value_counts()
    counts = {r: int(train.get(r, 0)) for r in asked}
    if not counts or min(counts.values()) >= want:
        return cfg, ""
    fewest = min(counts, key=lambda r: (counts[r], r))
    n = counts[fewest]
    if n == 0:
        raise UserError(f"relation {fewest} has no train facts to draw ZP-LKE's examples from; "
                        f"leave it out with --relations, or ask for --examples 0")
    config = dataclasses.replace(cfg.method_config, n_examples=(n,))
    return (dataclasses.replace(cfg, method_config=config),
            f", {n} in-context examples (--examples not given: ZP-LKE's {want}, lowered to the "
            f"{n} train facts of {fewest})")


def _config_dict(config) -> dict:
    import dataclasses
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(config).items()}
