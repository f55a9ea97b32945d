"""``factprobe build templates``: hand-written templates plus filtered, reviewed LLM paraphrases.

For each hand-written statement or question template, the LLM is asked for the paraphrases
still missing, as a JSON list, again and again until ``paraphrases`` distinct valid ones exist
or ``max_requests`` asks were made; then the shortfall is reported (not an error). Fact-checking
frames are kept as written: they are a frame around a statement, not a way to state the fact.

The instruction (below) carries the relation's label, description and subject/object
categories, because an LLM that guesses an entity's category changes the relation (the BELIEF
paper, App. A.2, had to add them for the same reason).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.errors import UserError
from factprobe.builders.inputs import InputDataset, Needs, as_input
from factprobe.core.provenance import input_of, make_provenance
from factprobe.core.tables import (
    RELATIONS_SCHEMA,
    base_manifest,
    file_sha256,
    read_table,
    write_dataset,
)
from factprobe.builders.templates.files import (
    RelationTemplates,
    Template,
    file_name,
    load_template_dir,
    question_text,
    templates_table,
)
from factprobe.builders.templates.filters import REASONS, FilterConfig, RelationGate
from factprobe.builders.templates.llm import ChatClient, LLMConfig, parse_string_list
from factprobe.builders.templates.review import apply_review, check_review_out, read_review, write_review

SYSTEM = (
    "You paraphrase sentence templates for a dataset that tests what language models know "
    "about facts. A template states one relation between a subject, written [X], and an object, "
    "written [Y]. A good paraphrase states the same fact in other words: the same relation in "
    "the same direction, [X] still the subject and [Y] still the object, true for exactly the "
    "same pairs. Use plain, everyday words and vary the sentence structure from one paraphrase "
    "to the next. Never fill in the placeholders and never add information. Answer with a JSON "
    "list of strings and nothing else.")


# any dataset with a facts table will do: only its relations are read
FACTS_INPUT = Needs("--facts", None, columns=("relation_id",))

@dataclass(frozen=True)
class TemplatesConfig:
    out: str
    templates_dir: str = "data/templates"
    relations: tuple[str, ...] | None = None   # None: every file (or every relation of facts)
    facts: InputDataset | str | None = None    # resolved by the CLI (FACTS_INPUT), or a path
    paraphrases: int = 19
    max_requests: int = 5                      # asks per hand-written template
    llm: LLMConfig | None = None
    filters: FilterConfig = field(default_factory=FilterConfig)
    review_out: str | None = None
    review_in: str | None = None
    progress: bool = True

    def manifest_params(self) -> dict:
        llm = self.llm
        return {"paraphrases": self.paraphrases, "max_requests": self.max_requests,
                "relations": None if self.relations is None else list(self.relations),
                "llm": None if llm is None or self.paraphrases == 0 else {
                    "model": llm.model, "temperature": llm.temperature,
                    "max_tokens": llm.max_tokens, "seed": llm.seed},
                "filters": asdict(self.filters)}


def instruction(rel: RelationTemplates, parent: Template, k: int) -> list[dict]:
    """The chat messages asking for ``k`` paraphrases of ``parent``."""
    meaning = f"Relation: {rel.label}" + (f" ({rel.description})" if rel.description else "")
    lines = [meaning + "."]
    if rel.subject_category or rel.object_category:
        lines.append(f"[X] is {_a(rel.subject_category or 'entity')} and [Y] is "
                     f"{_a(rel.object_category or 'entity')}.")
    if parent.style == "question":
        lines += [f"Question: {question_text(parent.template)}",
                  "Its answer is [Y].",
                  f"Write {k} different questions that ask for the same thing. Each one must "
                  f"contain [X] exactly once, must not contain [Y], and must end with a question "
                  f"mark."]
    else:
        lines += [f"Template: {parent.template}",
                  f"Write {k} different paraphrases of this template. Each one must contain [X] "
                  f"exactly once and [Y] exactly once, written exactly like that, with the "
                  f"square brackets."]
    lines.append(f"Answer with a JSON list of {k} strings.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def _a(noun: str) -> str:
    """
    >>> _a("city"), _a("award"), _a("the capital")
    ('a city', 'an award', 'the capital')
    """
    if noun.split()[0].lower() in ("a", "an", "the"):
        return noun
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _relations(cfg: TemplatesConfig) -> tuple[list[str] | None, pa.Table | None]:
    facts_input = as_input(cfg.facts, FACTS_INPUT)
    if not facts_input:
        return (list(cfg.relations) if cfg.relations else None), None
    folder = facts_input.folder
    # only the relation column: a T-REx-sized facts table need not be read whole for this
    in_facts = sorted(set(read_table(folder, "facts", ["relation_id"]).column(0).to_pylist()))
    if cfg.relations:
        unknown = [r for r in cfg.relations if r not in in_facts]
        if unknown:
            raise UserError(f"--relations names {', '.join(unknown)}, not a relation of "
                            f"{facts_input.spec} (it has {', '.join(in_facts)})")
        in_facts = sorted(cfg.relations)
    relations = None
    if (folder / "relations.parquet").exists():
        relations = read_table(folder, "relations")
        relations = relations.filter(pc.is_in(relations["relation_id"],
                                              value_set=pa.array(in_facts)))
    return in_facts, relations


def build_templates(cfg: TemplatesConfig) -> tuple[Path, dict]:
    """Build the templates dataset; returns its folder and a summary for the command's message."""
    if cfg.paraphrases > 0 and (cfg.llm is None or not cfg.llm.model):
        raise UserError("--paraphrases > 0 needs --llm-model (the model is part of every cache "
                        "key); or use --paraphrases 0 for the hand-written templates only")
    if cfg.review_out:
        check_review_out(cfg.review_out)
    decisions = read_review(cfg.review_in) if cfg.review_in else None
    wanted, relations = _relations(cfg)
    files = load_template_dir(cfg.templates_dir, wanted)
    client = ChatClient(cfg.llm) if cfg.paraphrases > 0 else None

    made: list[Template] = []
    dropped: dict[str, Counter] = {}
    not_a_list: Counter = Counter()
    requests: Counter = Counter()
    shortfall: dict[str, int] = {}
    retrieved: set[str] = set()
    parents = [(rel, t) for rel in files.values() for t in rel.templates]
    bar = _progress(cfg, len(parents))
    for rel in files.values():
        gate = RelationGate(cfg.filters)
        for t in rel.templates:
            gate.add_manual(t.template)
            made.append(t)
        for parent in rel.templates:
            bar.update(1)
            if client is None or parent.style == "check":
                continue
            kept: list[str] = []
            n = 0
            while len(kept) < cfg.paraphrases and n < cfg.max_requests:
                answer = client.ask(instruction(rel, parent, cfg.paraphrases - len(kept)), n,
                                    parent.template_id)
                n += 1
                retrieved.add(answer.retrieved[:10])
                items = parse_string_list(answer.text)
                if items is None:
                    not_a_list[rel.relation_id] += 1
                    continue
                for item in items:
                    if len(kept) == cfg.paraphrases:
                        break  # surplus items of a generous answer are not needed
                    text = gate.offer(item, parent.style)
                    if text is not None:
                        kept.append(text)
            requests[rel.relation_id] += n
            width = max(2, len(str(cfg.paraphrases)))
            made += [Template(f"{parent.template_id}/p{i:0{width}d}", rel.relation_id, text,
                              parent.style, f"llm:{cfg.llm.model}", parent.template_id)
                     for i, text in enumerate(kept, 1)]
            if len(kept) < cfg.paraphrases:
                shortfall[parent.template_id] = cfg.paraphrases - len(kept)
        dropped[rel.relation_id] = gate.dropped
    bar.close()

    review_counts = None
    final = made
    if decisions is not None:
        final, review_counts = apply_review(made, decisions, cfg.review_in)

    per_relation = {}
    for rid in files:
        rows = [t for t in final if t.relation_id == rid]
        per_relation[rid] = {
            "manual": sum(1 for t in rows if t.origin == "manual"),
            "paraphrases": sum(1 for t in rows if t.origin != "manual"),
            "requests": requests[rid], "not_a_list": not_a_list[rid],
            "dropped": {r: dropped[rid][r] for r in REASONS if dropped[rid][r]}}
    counts = {"templates": len(final), "relations": len(files), "per_relation": per_relation,
              "dropped": {r: sum(d[r] for d in dropped.values()) for r in REASONS},
              "not_a_list": sum(not_a_list.values()), "requests": sum(requests.values()),
              "shortfall": shortfall, "missing": sum(shortfall.values())}
    if review_counts is not None:
        counts["review"] = review_counts
    source = {"type": "templates", "templates_dir": cfg.templates_dir,
              "files_sha256": {file_name(r): file_sha256(Path(f.path)) for r, f in files.items()},
              "retrieved": sorted(d for d in retrieved if d)}
    if cfg.review_in:
        source["review_sha256"] = file_sha256(cfg.review_in)
    facts_input = as_input(cfg.facts, FACTS_INPUT)
    if facts_input:
        source["facts_dataset"] = facts_input.manifest.get("name")
    if relations is None:
        relations = _relations_from_files(files)
    manifest = base_manifest(Path(cfg.out).name, "templates", source, cfg.manifest_params(),
                             counts, make_provenance(source, {"facts": input_of(facts_input)}))
    out = write_dataset(cfg.out, {"templates": templates_table(final), "relations": relations},
                        manifest)
    if cfg.review_out:
        write_review(cfg.review_out, made, decisions)
    summary = {"shortfall": shortfall, "asked": client.asked if client else 0,
               "replayed": client.replayed if client else 0, "templates": len(final)}
    return out, summary


def _relations_from_files(files: dict[str, RelationTemplates]) -> pa.Table:
    rids = list(files)
    return pa.table({"relation_id": rids, "label": [files[r].label for r in rids],
                     "description": [files[r].description for r in rids],
                     "object_type": [""] * len(rids), "iri": [""] * len(rids)},
                    schema=RELATIONS_SCHEMA)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(cfg: TemplatesConfig, total: int):
    if not cfg.progress or cfg.paraphrases == 0:
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, desc="paraphrasing templates", unit="template")


def summary_message(out: Path, summary: dict) -> str:
    """The command's closing line(s): what was written, and any shortfall."""
    msg = (f"wrote {out} ({summary['templates']} templates; {summary['asked']} LLM requests, "
           f"{summary['replayed']} replayed from the cache)")
    short = summary["shortfall"]
    if short:
        worst = sorted(short.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        msg += (f"; {len(short)} hand-written templates are short of paraphrases, "
                f"{sum(short.values())} missing in all ("
                + ", ".join(f"{k}: {v} missing" for k, v in worst)
                + (", ..." if len(short) > 5 else "")
                + "); see counts.shortfall in dataset.json, or raise --max-requests")
    return msg
