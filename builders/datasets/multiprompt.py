"""``factprobe build multiprompt``: a MyriadLAMA-style multi-prompt dataset (BELIEF paper, Sec. 4,
App. A) from any facts table with aliases and any templates.

The dataset is the unique triples (with all answers and both sides' aliases) plus the templates
of their relations. Prompts are derived when a probe runs: for each subject-relation pair, every
template of the relation times every name of the subject. ``materialize`` also writes them.
The statistics of the paper's Table 1 go into the manifest:

- templates: templates of the relations kept
- unique triples: rows of facts.parquet
- derived triples: sum over unique triples and their relation's templates of
  (subject names x object names)
- subject-relation pairs: distinct (relation, subject)
- prompts: sum over subject-relation pairs of (templates x subject names)
"""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.errors import UserError
from factprobe.core.provenance import input_of, make_provenance
from factprobe.builders.inputs import FACTS, InputDataset, Needs, as_input, templates_needs
from factprobe.core.tables import base_manifest, file_sha256, read_table, write_dataset
from factprobe.builders.templates.files import read_templates, template_files_source, templates_table

STAT_KEYS = ("templates", "unique_triples", "derived_triples", "subject_relation_pairs",
             "prompts")
PROMPTS_SCHEMA = pa.schema([
    ("prompt_id", pa.string()),
    ("relation_id", pa.string()),
    ("subject_id", pa.string()),
    ("template_id", pa.string()),
    ("subject_name", pa.string()),
    ("prompt", pa.string()),
    ("answers", pa.list_(pa.string())),
])


@dataclass(frozen=True)
class MultipromptConfig:
    facts: InputDataset | str               # resolved by the CLI (MULTIPROMPT_INPUT), or a path
    out: str
    templates: InputDataset | str | None = None  # a templates dataset (templates_needs())
    templates_dir: str = "data/templates"   # else the hand-written YAML files
    materialize: bool = False
    progress: bool = True


def names(label: str, aliases: list[str] | None) -> list[str]:
    """Every name of an entity: the label first, then its distinct aliases.

    >>> names("United States", ["USA", "US", "USA", "United States"])
    ['United States', 'USA', 'US']
    """
    out = [label]
    for a in aliases or []:
        if a and a not in out:
            out.append(a)
    return out


def pair_answer_names(facts: pa.Table) -> dict[tuple[str, str], list[str]]:
    """(relation_id, subject_id) -> every correct object name of the pair, aliases included.

    A probe that accepts any name of any correct object (BELIEF) reads this.
    """
    acc: dict[tuple[str, str], set[str]] = defaultdict(set)
    cols = [facts[c].to_pylist() for c in ("relation_id", "subject_id", "object",
                                           "object_aliases", "answers")]
    for r, s, o, oa, ans in zip(*cols):
        acc[(r, s)].update(names(o, oa))
        acc[(r, s)].update(ans or [])
    return {k: sorted(v) for k, v in acc.items()}


def statistics(facts: pa.Table, templates_per_relation: dict[str, int]) -> dict:
    """The paper's Table 1 for ``facts`` (only relations in ``templates_per_relation``), overall
    and per relation."""
    per: dict[str, Counter] = defaultdict(Counter)
    seen_pairs: set[tuple[str, str]] = set()
    cols = [facts[c].to_pylist() for c in ("relation_id", "subject_id", "subject",
                                           "subject_aliases", "object", "object_aliases")]
    for r, s, sl, sa, o, oa in zip(*cols):
        t = templates_per_relation[r]
        n_subj = len(names(sl, sa))
        c = per[r]
        c["unique_triples"] += 1
        c["derived_triples"] += t * n_subj * len(names(o, oa))
        if (r, s) not in seen_pairs:
            seen_pairs.add((r, s))
            c["subject_relation_pairs"] += 1
            c["prompts"] += t * n_subj
    out_per = {}
    for r in sorted(per):
        out_per[r] = {"templates": templates_per_relation[r],
                      **{k: per[r][k] for k in STAT_KEYS[1:]}}
    total = {k: sum(v[k] for v in out_per.values()) for k in STAT_KEYS}
    return {"total": total, "per_relation": out_per}

MULTIPROMPT_INPUT = Needs("--facts", FACTS, columns=(
    "fact_id", "relation_id", "subject_id", "object_id", "subject", "object",
    "subject_aliases", "object_aliases", "answers"))


def build_multiprompt(cfg: MultipromptConfig) -> Path:
    facts_input = as_input(cfg.facts, MULTIPROMPT_INPUT)
    folder, manifest = facts_input.folder, facts_input.manifest
    templates_input = as_input(cfg.templates, templates_needs())
    templates_folder = templates_input.folder if templates_input else None
    templates_spec = templates_input.spec if templates_input else None
    facts = read_table(folder, "facts")
    in_facts = sorted(set(facts["relation_id"].to_pylist()))
    templates = read_templates(templates_folder, cfg.templates_dir, in_facts)
    per_rel = Counter(t.relation_id for t in templates)
    kept = sorted(per_rel)
    dropped = {r: "no templates" for r in in_facts if r not in per_rel}
    if not kept:
        raise UserError(f"no relation of {facts_input.spec} has templates in "
                        f"{templates_spec or cfg.templates_dir} (facts have "
                        f"{', '.join(in_facts) or 'no rows'})")
    facts = facts.filter(pc.is_in(facts["relation_id"], value_set=pa.array(kept)))
    # unique triples: one row per (relation, subject, object), the first by fact_id
    order = pc.sort_indices(facts, sort_keys=[("relation_id", "ascending"),
                                              ("subject_id", "ascending"),
                                              ("object_id", "ascending"),
                                              ("fact_id", "ascending")])
    facts = facts.take(order)
    keys = list(zip(*(facts[c].to_pylist() for c in ("relation_id", "subject_id", "object_id"))))
    first = [i for i, k in enumerate(keys) if i == 0 or k != keys[i - 1]]
    duplicates = facts.num_rows - len(first)
    facts = facts.take(pa.array(first, pa.int64()))

    stats = statistics(facts, dict(per_rel))
    tables = {"facts": facts, "templates": templates_table(templates)}
    if (folder / "relations.parquet").exists():
        rel = read_table(folder, "relations")
        tables["relations"] = rel.filter(pc.is_in(rel["relation_id"], value_set=pa.array(kept)))
    if cfg.materialize:
        tables["prompts"] = prompts_table(facts, templates)
        assert tables["prompts"].num_rows == stats["total"]["prompts"]
    source = {"type": "facts", "facts_dataset": manifest.get("name"),
              "facts_sha256": file_sha256(folder / "facts.parquet"),
              "templates": templates_spec or cfg.templates_dir}
    if templates_folder:
        source["templates_sha256"] = file_sha256(templates_folder / "templates.parquet")
    counts = {"statistics": stats["total"], "per_relation": stats["per_relation"],
              "dropped_relations": dropped, "duplicate_triples": duplicates,
              "templates_by_origin": dict(sorted(Counter(
                  "manual" if t.origin == "manual" else t.origin.split(":")[0]
                  for t in templates).items()))}
    params = {"materialize": cfg.materialize}
    prov = make_provenance(
        source=None if templates_folder else template_files_source(cfg.templates_dir, kept),
        inputs={"facts": input_of(facts_input), "templates": input_of(templates_input)})
    return write_dataset(cfg.out, tables, base_manifest(Path(cfg.out).name, "multiprompt", source,
                                                        params, counts, prov))


def prompts_table(facts: pa.Table, templates) -> pa.Table:
    """Every prompt: each subject-relation pair x its relation's templates x the subject's names.

    ``prompt`` has ``[X]`` filled and ``[Y]`` left as the slot the probe fills or masks.
    """
    answers = pair_answer_names(facts)
    by_rel: dict[str, list] = defaultdict(list)
    for t in sorted(templates, key=lambda t: (t.relation_id, t.template_id)):
        by_rel[t.relation_id].append(t)
    pairs: dict[tuple[str, str], list[str]] = {}
    for r, s, sl, sa in zip(*(facts[c].to_pylist() for c in ("relation_id", "subject_id",
                                                              "subject", "subject_aliases"))):
        pairs.setdefault((r, s), names(sl, sa))
    cols: dict[str, list] = {f.name: [] for f in PROMPTS_SCHEMA}
    for (r, s), subject_names in sorted(pairs.items()):
        for t in by_rel[r]:
            for name in subject_names:
                cols["prompt_id"].append(hashlib.sha1("\x1f".join((t.template_id, s, name))
                                                      .encode("utf-8")).hexdigest()[:16])
                cols["relation_id"].append(r)
                cols["subject_id"].append(s)
                cols["template_id"].append(t.template_id)
                cols["subject_name"].append(name)
                cols["prompt"].append(t.template.replace("[X]", name))
                cols["answers"].append(answers[(r, s)])
    return pa.table(cols, schema=PROMPTS_SCHEMA)


__all__ = ["MultipromptConfig", "build_multiprompt", "names", "pair_answer_names", "statistics",
           "prompts_table", "STAT_KEYS"]
