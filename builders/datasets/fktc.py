"""``factprobe build fktc``: an FKTC-style dataset (MONITOR paper, Sec. 5.1) from any facts table.

Per relation: a base question Q0 and question paraphrases, at most ``questions`` in all (7 in
the paper), kept greedily while their pairwise sentence BLEU stays below 0.7. Per fact: M
misprimes, objects of the same relation that are not the subject's answers (5 in the paper).
A probe derives the prompts per fact: every question (the paraphrase set, Q0 included, as in
the authors' code), the positive interference prompt "{y*}. Q0(x)" and the M negative ones
"{y-}. Q0(x)": 7 + 1 + 5 = 13 in the paper.

The templates table marks the base question with ``is_base``; question templates are stored as
``<question> [Y].`` like every question template (:func:`~factprobe.builders.templates.files.question_text`
gives the question back).

``frame="statement"`` poses cloze statements instead (ParaRel's patterns, hand-written
statements): the paper's word-prediction frame (its Table 1, frame 1, "[X] is located in _"),
each statement cut before ``[Y]`` and completed by the model, its wording kept. Only statements
whose ``[Y]`` is last can be completed left to right; the others are counted per relation
(``frames_y_not_last``). Such a dataset's templates table has a ``frame`` column
(``statement``) that tells ``eval monitor`` to pose them.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.errors import UserError
from factprobe.core.provenance import input_of, make_provenance
from factprobe.builders.inputs import InputDataset, as_input, templates_needs
from factprobe.core.tables import base_manifest, file_sha256, read_table, write_dataset
from factprobe.builders.datasets.misprimes import MISPRIMES_INPUT, draw_negatives, negatives_array
from factprobe.builders.templates.files import (
    Template,
    question_text,
    read_templates,
    template_files_source,
    templates_table,
    y_is_last,
)
from factprobe.builders.templates.filters import diverse

FRAMES = ("question", "statement")


@dataclass(frozen=True)
class FktcConfig:
    facts: InputDataset | str          # resolved by the CLI (FKTC_INPUT), or a path
    out: str
    templates: InputDataset | str | None = None  # a templates dataset (templates_needs())
    templates_dir: str = "data/templates"
    questions: int = 7          # question templates per relation, the base one included
    negatives: int = 5
    seed: int = 0
    bleu: float = 0.7
    progress: bool = True
    # question: the paper's QA frames (Sec. 4); statement: cloze statements whose [Y] is last,
    # the paper's WP frame (Table 1, frame 1), e.g. ParaRel's patterns
    frame: str = "question"


# fktc draws negatives again, so it reads what misprimes reads
FKTC_INPUT = MISPRIMES_INPUT


def pick_questions(templates: list[Template], limit: int, bleu: float,
                   frame: str = "question") -> tuple[list[Template], int]:
    """The relation's base question and its paraphrases, and how many BLEU left out.

    Hand-written questions come first (by id), then machine paraphrases and imported ones (by
    id: an import's ids follow its file order, ParaRel's ``pr01`` first); the first is the base. With ``frame="statement"`` the
    same for the statements whose ``[Y]`` is last, compared on the text the model is given
    (the statement cut before ``[Y]``).
    """
    if frame == "statement":
        usable = [t for t in templates if t.style == "statement" and y_is_last(t.template)]
    else:
        usable = [t for t in templates if t.style == "question"]
    qs = sorted(usable, key=lambda t: (t.origin != "manual", t.template_id))
    keep = diverse([question_text(t.template) for t in qs], bleu)
    dropped = len(qs) - len(keep)
    return [qs[i] for i in keep[:limit]], dropped


def y_not_last(templates: list[Template]) -> int:
    """Statements a left-to-right model cannot complete: ``[Y]`` is not last."""
    return sum(t.style == "statement" and not y_is_last(t.template) for t in templates)


def fktc_templates_table(chosen: dict[str, list[Template]], frame: str = "question"
                         ) -> pa.Table:
    rows = [t for qs in chosen.values() for t in qs]
    base = {t.template_id: i == 0 for qs in chosen.values() for i, t in enumerate(qs)}
    extra = {"is_base": (pa.bool_(), base)}
    if frame != "question":   # a question dataset keeps the columns it always had
        extra["frame"] = (pa.string(), {t.template_id: frame for t in rows})
    return templates_table(rows, extra)


def prompt_count(facts: pa.Table, questions_per_relation: dict[str, int]) -> int:
    """R questions + 1 positive + the fact's negatives, summed over facts."""
    return sum(questions_per_relation[r] + 1 + len(n) for r, n in
               zip(facts["relation_id"].to_pylist(), facts["negatives"].to_pylist()))


def build_fktc(cfg: FktcConfig) -> Path:
    if cfg.questions < 1 or cfg.negatives < 1:
        raise UserError("--questions and --negatives must be at least 1")
    if cfg.frame not in FRAMES:
        raise UserError(f"--frame {cfg.frame!r}: use one of {', '.join(FRAMES)}")
    what = "question template" if cfg.frame == "question" else \
        "statement template whose [Y] is last"
    facts_input = as_input(cfg.facts, FKTC_INPUT)
    folder, manifest = facts_input.folder, facts_input.manifest
    templates_input = as_input(cfg.templates, templates_needs())
    templates_folder = templates_input.folder if templates_input else None
    templates_spec = templates_input.spec if templates_input else None
    facts = read_table(folder, "facts")
    in_facts = sorted(set(facts["relation_id"].to_pylist()))
    by_rel: dict[str, list[Template]] = defaultdict(list)
    for t in read_templates(templates_folder, cfg.templates_dir, in_facts):
        by_rel[t.relation_id].append(t)
    chosen: dict[str, list[Template]] = {}
    dropped: dict[str, str] = {}
    bleu_dropped: dict[str, int] = {}
    for rid in in_facts:
        qs, n_bleu = pick_questions(by_rel.get(rid, []), cfg.questions, cfg.bleu, cfg.frame)
        if not qs:
            dropped[rid] = f"no {what}"
            continue
        chosen[rid] = qs
        bleu_dropped[rid] = n_bleu
    if not chosen:
        hint = "; ParaRel's and LAMA's patterns are statements: pass --frame statement" \
            if cfg.frame == "question" and any(t.style == "statement" for ts in by_rel.values()
                                               for t in ts) else ""
        raise UserError(f"no relation of {facts_input.spec} has a {what} in "
                        f"{templates_spec or cfg.templates_dir}{hint}")
    facts = facts.filter(pc.is_in(facts["relation_id"], value_set=pa.array(sorted(chosen))))
    lists, neg_counts = draw_negatives(facts, cfg.negatives, cfg.seed)
    if "negatives" in facts.column_names:
        facts = facts.drop(["negatives"])
    facts = facts.append_column("negatives", negatives_array(lists))
    n_questions = {r: len(q) for r, q in chosen.items()}
    per_relation = {r: {"facts": neg_counts["per_relation"][r]["facts"],
                        "questions": n_questions[r], "questions_dropped_bleu": bleu_dropped[r],
                        "short_negatives": neg_counts["per_relation"][r]["short"]}
                    for r in sorted(chosen)}
    if cfg.frame == "statement":
        for r in per_relation:
            per_relation[r]["frames_y_not_last"] = y_not_last(by_rel[r])
    counts = {"facts": facts.num_rows, "relations": len(chosen),
              "prompts": prompt_count(facts, n_questions), "per_relation": per_relation,
              "dropped_relations": dropped, "short_negatives": neg_counts["short"]}
    tables = {"facts": facts, "templates": fktc_templates_table(chosen, cfg.frame)}
    if (folder / "relations.parquet").exists():
        rel = read_table(folder, "relations")
        tables["relations"] = rel.filter(pc.is_in(rel["relation_id"],
                                                  value_set=pa.array(sorted(chosen))))
    source = {"type": "facts", "facts_dataset": manifest.get("name"),
              "facts_sha256": file_sha256(folder / "facts.parquet"),
              "templates": templates_spec or cfg.templates_dir}
    if templates_folder:
        source["templates_sha256"] = file_sha256(templates_folder / "templates.parquet")
    params = {"questions": cfg.questions, "negatives": cfg.negatives, "seed": cfg.seed,
              "bleu": cfg.bleu}
    if cfg.frame != "question":   # a question dataset's manifest stays as it always was
        params["frame"] = cfg.frame
    prov = make_provenance(
        source=None if templates_folder else template_files_source(cfg.templates_dir, sorted(chosen)),
        inputs={"facts": input_of(facts_input), "templates": input_of(templates_input)})
    return write_dataset(cfg.out, tables, base_manifest(Path(cfg.out).name, "fktc", source,
                                                        params, counts, prov))
