"""``factprobe build refresh``: a dataset's (relation, subject) pairs read again from a later
snapshot of the graph (Wikidata's query service, a Wikidata dump, any SPARQL endpoint, an RDF
file).

The source is read as ``build facts`` reads it, for the dataset's relations, through the same
assembly (best-rank objects, labels, aliases, de-duplication); only the rows whose
(relation, subject) pair the dataset holds are kept. A SPARQL source (Wikidata's query service
included) is asked for those subjects only, a few hundred per query; a dump is read whole, as
``build facts`` reads it. A pair the snapshot no longer has is
counted and listed in the manifest; ``factprobe diff`` says row by row what changed.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.errors import UserError
from factprobe.core.provenance import input_of, make_provenance
from factprobe.core.tables import base_manifest, read_schema, read_table, write_dataset
from factprobe.builders.sources.graph_flags import NAME as GRAPH, GraphOptions
from factprobe.builders.sources.table import SOURCES
from factprobe.builders.datasets.build_facts import read_source
from factprobe.builders.datasets.facts import triple_count
from factprobe.builders.inputs import InputDataset, Needs, as_input
from factprobe.builders.sources.config import FactsConfig
from factprobe.builders.datasets.diff_labels import RESOLVED
from factprobe.builders.datasets.refresh_labels import (
    dataset_labels,
    labels_are_ids,
    named_rows,
    none_resolved,
    resolve_facts,
    resolve_sparql,
    resolved_pairs,
    wanted_keys,
)
from factprobe.builders.datasets.refresh_labels import summary as label_summary
from factprobe.builders.datasets import refresh_wikidata_ids as google_re

# The datasets whose facts table names its pairs by id (facts, aliases, mc, misprimes...).
FACT_KINDS = ("facts", "mc", "misprimes", "multiprompt", "fktc", "nobel")
REFRESH_INPUT = Needs("--dataset", FACT_KINDS, columns=("relation_id", "subject_id", "object_id"))
# Sources that name entities by Wikidata id: the dataset's ids must be Wikidata's.
WIKIDATA_SOURCES = ("wikidata", "wikidata-dump")
GONE_LISTED = 100   # pairs named in the manifest; the diff table lists every one


@dataclass(frozen=True)
class RefreshConfig:
    """``dataset``: the dataset to refresh; ``facts``: the source to read it from, as
    ``build facts`` takes it (its ``relations`` are the dataset's, whatever it says; ``lang``,
    ``date_format`` and ``prefixes`` default to the dataset's own when None/empty)."""
    dataset: InputDataset | str
    facts: FactsConfig


def _key(relation: pa.Array, subject: pa.Array) -> pa.Array:
    """One string per (relation, subject) pair, for set membership."""
    return pc.binary_join_element_wise(relation.cast(pa.string()), subject.cast(pa.string()),
                                       "\x1f")


def dataset_pairs(folder: Path, spec: str) -> pa.Table:
    """The distinct (relation_id, subject_id) pairs of a dataset's facts, sorted."""
    facts = read_table(folder, "facts", ["relation_id", "subject_id"])
    if facts.num_rows == 0:
        raise UserError(f"--dataset {spec} holds no facts; there is nothing to refresh")
    for column in ("subject_id", "relation_id"):
        # null or blank; fill_null: a comparison with a null is null, not true
        blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(facts[column]), ""), True)
        if pc.any(blank).as_py():
            raise UserError(f"--dataset {spec}: {pc.sum(blank).as_py()} fact(s) have no "
                            f"{column.split('_')[0]} id; refresh re-reads facts by id: build the "
                            f"dataset from a source that keeps ids (Wikidata, a dump, SPARQL, "
                            f"T-REx)")
    pairs = facts.group_by(["relation_id", "subject_id"]).aggregate([])
    return pairs.sort_by([("relation_id", "ascending"), ("subject_id", "ascending")])


def check_ids(pairs: pa.Table, source: str, spec: str) -> None:
    """Wikidata's sources find an entity by its Q-id and a relation by its P-id only."""
    if source not in WIKIDATA_SOURCES:
        return
    for column, pattern, what in (("relation_id", r"P[1-9][0-9]*", "property ids like P36"),
                                  ("subject_id", r"Q[1-9][0-9]*", "item ids like Q142")):
        values = pc.unique(pairs[column]).to_pylist()
        bad = sorted(v for v in values if not re.fullmatch(pattern, v))
        if bad:
            shown = ", ".join(repr(v) for v in bad[:3]) + (" ..." if len(bad) > 3 else "")
            raise UserError(f"--dataset {spec}: {len(bad)} {column} value(s) are not Wikidata "
                            f"{what} ({shown}); --source {source} reads Wikidata ids: refresh "
                            f"this dataset from its own graph with --source sparql or rdf")


def source_config(cfg: RefreshConfig, inp: InputDataset, pairs: pa.Table) -> FactsConfig:
    """The ``build facts`` config that reads the dataset's relations, in its language and date
    form unless the command said otherwise."""
    params = inp.manifest.get("params") or {}
    relations = sorted(pc.unique(pairs["relation_id"]).to_pylist())
    subjects: dict[str, list[str]] = {r: [] for r in relations}
    for rel, subject in zip(pairs["relation_id"].to_pylist(), pairs["subject_id"].to_pylist()):
        subjects[rel].append(subject)
    prefixes = params.get("prefixes") if isinstance(params.get("prefixes"), dict) else {}
    facts = cfg.facts
    options = SOURCES[facts.source].with_default_options(facts.options)
    own = options.get(GRAPH)
    if isinstance(own, GraphOptions):      # the graph sources: the dataset's prefixes first
        options[GRAPH] = replace(own, prefixes={**prefixes, **own.prefixes})
    return replace(
        facts, relations=tuple(relations), limit=None, subjects=subjects,
        lang=facts.lang or str(params.get("lang") or "en"),
        date_format=facts.date_format or str(params.get("date_format") or "date"),
        options=options)


def keep_pairs(facts: pa.Table, pairs: pa.Table) -> pa.Table:
    """The rows of ``facts`` whose (relation, subject) pair is one of ``pairs``, in order."""
    wanted = _key(pairs["relation_id"], pairs["subject_id"])
    mask = pc.is_in(_key(facts["relation_id"], facts["subject_id"]), value_set=wanted)
    return facts.filter(mask)


def gone_pairs(pairs: pa.Table, kept: pa.Table) -> list[str]:
    """``relation subject`` of each pair of the dataset that the snapshot no longer has."""
    found = _key(kept["relation_id"], kept["subject_id"])
    missing = pairs.filter(pc.invert(pc.is_in(_key(pairs["relation_id"], pairs["subject_id"]),
                                              value_set=found)))
    return [f"{r} {s}" for r, s in zip(missing["relation_id"].to_pylist(),
                                       missing["subject_id"].to_pylist())]


def refreshed_counts(facts: pa.Table, pairs: pa.Table, gone: list[str], source: str,
                     snapshot: dict) -> dict:
    per_relation = facts.group_by("relation_id").aggregate([([], "count_all")])
    with_aliases = set()
    for side in ("subject", "object"):
        has = pc.greater(pc.list_value_length(facts[f"{side}_aliases"]), 0)
        with_aliases.update(facts.filter(has)[f"{side}_id"].to_pylist())
    return {
        "facts": facts.num_rows,
        "relations": per_relation.num_rows,
        "subject_relation_pairs": facts.num_rows and len(
            pc.unique(_key(facts["relation_id"], facts["subject_id"]))),
        "facts_per_relation": dict(sorted(zip(per_relation["relation_id"].to_pylist(),
                                              per_relation["count_all"].to_pylist()))),
        "entities_with_aliases": len(with_aliases),
        "dropped": {},
        "refresh": {"source": source, "snapshot": snapshot, "pairs": pairs.num_rows,
                    "pairs_found": pairs.num_rows - len(gone), "pairs_gone": len(gone),
                    "gone": gone[:GONE_LISTED]},
    }


def snapshot_of(provenance: dict) -> dict:
    """What names the snapshot read: a dump's date, the days the answers were retrieved, an RDF
    file's sha256."""
    keep = ("type", "endpoint", "path", "dump_date", "retrieved", "sha256", "format")
    return {k: provenance[k] for k in keep if provenance.get(k) not in (None, "", [])}


def changes_since(inp: InputDataset, kept: pa.Table, resolved: pa.Table | None = None,
                  by_ids: bool = False) -> dict | None:
    """Rows of each change from the dataset to its refresh (:mod:`.diff`); None when the
    dataset's facts lack a column the diff compares. A dataset named by labels is compared
    under the ids they resolved to (:mod:`.diff_labels`)."""
    from factprobe.builders.datasets.diff import DIFF_COLUMNS, change_counts, diff_facts
    from factprobe.builders.datasets.diff_labels import align_to_ids
    if not set(DIFF_COLUMNS) <= set(read_schema(inp.folder, "facts").names):
        return None
    old = read_table(inp.folder, "facts", list(DIFF_COLUMNS))
    if by_ids:
        old = google_re.objects_by_ids(old, inp.folder)
    if resolved is not None:
        old, _ = align_to_ids(old, resolved, kept)
    totals, _ = change_counts(diff_facts(old, kept))
    return totals


def check_relation_ids(relations: list[str], source: str, spec: str) -> None:
    """A label-named dataset read from Wikidata: its relations must still be property ids."""
    bad = sorted(r for r in set(relations) if not re.fullmatch(r"P[1-9][0-9]*", r))
    if source in WIKIDATA_SOURCES and bad:
        raise UserError(f"--dataset {spec}: relation id(s) {', '.join(map(repr, bad[:3]))} are "
                        f"not Wikidata property ids like P36; --source {source} reads those only")


def build_refresh(cfg: RefreshConfig) -> Path:
    inp = as_input(cfg.dataset, REFRESH_INPUT)
    by_label = labels_are_ids(inp.manifest)
    labels = dataset_labels(inp.folder, inp.spec) if by_label else None
    # LAMA's Google-RE: Freebase ids and predicates, read by the release's Wikidata ids
    by_ids = not by_label and google_re.has_wikidata_ids(inp.folder)
    resolved = None
    if labels is not None:
        # the labels stand in for the pairs until they are resolved (a dump: as it is read)
        pairs = pa.table({"relation_id": [r for r, _ in sorted(labels)],
                          "subject_id": [s for _, s in sorted(labels)]})
        check_relation_ids(pairs["relation_id"].to_pylist(), cfg.facts.source, inp.spec)
    elif by_ids:
        resolved = google_re.resolve_by_ids(inp.folder)
        pairs = resolved_pairs(resolved)
        if pairs.num_rows == 0:
            raise UserError(
                f"--dataset {inp.spec}: none of its {resolved.num_rows} Google-RE (relation, "
                f"subject) pairs has a Wikidata id (sub_w) in the release; refresh reads a "
                f"Wikidata snapshot by those ids")
        check_ids(google_re.as_properties(pairs), cfg.facts.source, inp.spec)
    else:
        pairs = dataset_pairs(inp.folder, inp.spec)
        check_ids(pairs, cfg.facts.source, inp.spec)
    if by_ids:
        facts_cfg = source_config(cfg, inp, google_re.as_properties(pairs))
        if google_re.year_relations(pairs) and not cfg.facts.date_format:
            facts_cfg = replace(facts_cfg, date_format="year")
    else:
        facts_cfg = source_config(cfg, inp, pairs)
    reading = None
    if labels is not None and facts_cfg.source != "wikidata-dump":
        from factprobe.builders.sources.readers import graph, graph_endpoint
        opened = graph_endpoint(facts_cfg)
        resolved = resolve_sparql(opened[0], labels, facts_cfg.lang, opened[1]).table()
        pairs = resolved_pairs(resolved)
        if pairs.num_rows == 0:
            raise none_resolved(inp.spec, resolved)
        facts_cfg = source_config(cfg, inp, pairs)
        reading = contextlib.nullcontext(graph(facts_cfg, opened))
    none_left = UserError(
        f"the {facts_cfg.source} source has none of the {pairs.num_rows} (relation, subject) "
        f"pairs of --dataset {inp.spec} (relations {', '.join(facts_cfg.relations or ())}); is "
        f"it the graph the dataset came from?")
    with reading or read_source(facts_cfg) as result:
        if triple_count(result) == 0:
            raise none_left
        # assembled as build facts does: the SPARQL sources read only the dataset's subjects;
        # a dump reads every subject of its relations, kept a row group at a time (for a
        # dataset named by labels: the rows whose subject bears one of its names)
        if result.assembly is not None:
            wanted = wanted_keys(labels) if labels is not None and resolved is None else None
            asked = google_re.as_properties(pairs) if by_ids else pairs
            facts, relation_table, _ = result.assembly.assemble_kept(
                (lambda group: named_rows(group, wanted)) if wanted is not None else
                (lambda group: keep_pairs(group, asked)))
        else:
            from factprobe.builders.datasets.facts import assemble_facts
            facts, relation_table, _ = assemble_facts(result)
        provenance = dict(result.provenance)
    if by_ids:   # the snapshot's properties back under the dataset's relation ids
        facts, relation_table = google_re.to_dataset_relations(facts, relation_table, pairs)
    if labels is not None and resolved is None:
        resolved = resolve_facts(facts, labels).table()
        pairs = resolved_pairs(resolved)
        if pairs.num_rows == 0:
            raise none_resolved(inp.spec, resolved)
    kept = keep_pairs(facts, pairs)
    if kept.num_rows == 0:
        raise none_left
    present = pc.unique(kept["relation_id"])
    relation_table = relation_table.filter(pc.is_in(relation_table["relation_id"],
                                                    value_set=present))
    gone = gone_pairs(pairs, kept)
    counts = refreshed_counts(kept, pairs, gone, facts_cfg.source, snapshot_of(provenance))
    tables = {"facts": kept, "relations": relation_table}
    if resolved is not None:   # which id each label became, and which found none or several
        counts["refresh"]["labels"] = label_summary(resolved)
        tables[RESOLVED] = resolved
    if by_ids:
        counts["refresh"]["wikidata_properties"] = {
            r: google_re.PROPERTIES[r] for r in sorted(set(pairs["relation_id"].to_pylist()))
            if r in google_re.PROPERTIES}
    changes = changes_since(inp, kept, resolved, by_ids)
    if changes is not None:   # what the dataset card says changed (factprobe diff: each row)
        counts["refresh"]["changes"] = changes
    params = {**facts_cfg.manifest_params(), "refresh_of": inp.manifest.get("name")}
    if resolved is not None and not by_ids:
        params["subjects_by_label"] = True
    if by_ids:
        params["subjects_by_wikidata_ids"] = "sub_w"
    manifest = base_manifest(
        Path(facts_cfg.out).name, "facts", provenance, params, counts,
        make_provenance(source=provenance, inputs={"refreshed": input_of(inp)}))
    return write_dataset(facts_cfg.out, tables, manifest)
