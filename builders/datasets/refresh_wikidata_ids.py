"""``build refresh`` of LAMA's Google-RE facts by the Wikidata ids its release gives beside the
Freebase ones (Petroni et al., 2019, "Language Models as Knowledge Bases?", EMNLP; LAMA's
``Google_RE/*_test.jsonl``: ``sub_w``, ``obj_w``, kept by ``--source lama`` as fact columns).

Google-RE names its relations after Freebase's predicates (``place_of_birth``...) and its
entities by Freebase ids (``/m/0jcx``), which no Wikidata snapshot holds. Where a line has a
``sub_w``, the (relation, subject) pair is read from the snapshot as (the relation's Wikidata
property, ``sub_w``), and the refreshed facts keep the dataset's relation ids, so its templates
(``place_of_birth/lama``) still apply. A pair whose lines give no ``sub_w`` (every
``date_of_birth`` object and most subjects have none in the release) is *unresolved*: counted
and listed, never guessed; a pair given two different ``sub_w`` is *ambiguous*. The outcome is
the same ``resolved`` table a refresh of a label-named dataset writes
(:mod:`.refresh_labels`), so ``factprobe diff`` reads the old facts under the ids they became;
old objects are compared by ``obj_w`` where the release gives one, and ``date_of_birth``'s
objects, years in the release, are read as years.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.tables import read_schema, read_table
from factprobe.builders.datasets.facts import fact_ids
from factprobe.builders.datasets.refresh_labels import RESOLVED_SCHEMA

# Google-RE's relations and the Wikidata properties of the same facts (Freebase's
# /people/person/place_of_birth, ..._of_death and date_of_birth).
PROPERTIES = {"place_of_birth": "P19", "place_of_death": "P20", "date_of_birth": "P569"}
# Google-RE's date_of_birth objects are years ("1879", "0150"): a snapshot's dates are read in
# the same form, or every birth date would be "changed"
YEAR_RELATIONS = ("date_of_birth",)
ID_COLUMNS = ("sub_w", "obj_w")


def has_wikidata_ids(folder) -> bool:
    """Whether the dataset's facts hold Google-RE facts with the release's Wikidata id columns."""
    if not set(ID_COLUMNS) <= set(read_schema(folder, "facts").names):
        return False
    relations = pc.unique(read_table(folder, "facts", ["relation_id"])["relation_id"])
    return any(r in PROPERTIES for r in relations.to_pylist())


def resolve_by_ids(folder) -> pa.Table:
    """The resolution table (:data:`RESOLVED_SCHEMA`): per (relation, subject id) of the
    dataset, the id it is read under. A Google-RE pair takes its lines' ``sub_w`` (matched
    ``sub_w``): one distinct value resolves, none leaves it unresolved, two are ambiguous; any
    other relation's pair (a T-REx fact of the same import) is its own id already (``id``)."""
    facts = read_table(folder, "facts", ["relation_id", "subject_id", "sub_w"]).to_pylist()
    found: dict[tuple[str, str], set[str]] = {}
    for row in facts:
        key = (row["relation_id"], row["subject_id"])
        ids = found.setdefault(key, set())
        if row["relation_id"] not in PROPERTIES:
            ids.add(row["subject_id"])
        elif isinstance(row["sub_w"], str) and row["sub_w"].strip():
            ids.add(row["sub_w"].strip())
    rows = []
    for (rel, subject), ids in sorted(found.items()):
        matched = "sub_w" if rel in PROPERTIES else "id"
        ordered = sorted(ids)
        if len(ordered) == 1:
            rows.append((rel, subject, "resolved", ordered[0], matched, ordered))
        elif ordered:
            rows.append((rel, subject, "ambiguous", "", matched, ordered))
        else:
            rows.append((rel, subject, "unresolved", "", "", []))
    cols = list(zip(*rows)) if rows else [[]] * 6
    return pa.table({f.name: pa.array(list(c), f.type) for f, c in zip(RESOLVED_SCHEMA, cols)},
                    schema=RESOLVED_SCHEMA)


def as_properties(pairs: pa.Table) -> pa.Table:
    """(relation, subject) pairs with Google-RE's relations as their Wikidata properties: what
    the snapshot is asked for."""
    rel = [PROPERTIES.get(r, r) for r in pairs["relation_id"].to_pylist()]
    out = pa.table({"relation_id": pa.array(rel, pa.string()), "subject_id": pairs["subject_id"]})
    out = out.group_by(["relation_id", "subject_id"]).aggregate([])
    return out.sort_by([("relation_id", "ascending"), ("subject_id", "ascending")])


def to_dataset_relations(facts: pa.Table, relations: pa.Table, pairs: pa.Table
                         ) -> tuple[pa.Table, pa.Table]:
    """The snapshot's facts (under Wikidata properties) and relations table back under the
    dataset's relation ids, for the dataset's pairs: a P19 fact of a subject the dataset asks
    ``place_of_birth`` of becomes a ``place_of_birth`` fact (its fact_id recomputed), and one
    the dataset also asks P19 of (a T-REx fact of the same import) stays a P19 fact as well."""
    parts, rel_parts = [], []
    for rel in sorted(pc.unique(pairs["relation_id"]).to_pylist()):
        prop = PROPERTIES.get(rel, rel)
        subjects = pairs.filter(pc.equal(pairs["relation_id"], rel))["subject_id"]
        part = facts.filter(pc.and_(pc.equal(facts["relation_id"], prop),
                                    pc.is_in(facts["subject_id"], value_set=subjects)))
        meta = relations.filter(pc.equal(relations["relation_id"], prop))
        if rel != prop:
            ids = pa.array([rel] * part.num_rows, pa.string())
            part = part.set_column(part.schema.get_field_index("relation_id"), "relation_id", ids)
            part = part.set_column(part.schema.get_field_index("fact_id"), "fact_id",
                                   fact_ids(ids, part["subject_id"], part["object_id"]))
            meta = meta.set_column(meta.schema.get_field_index("relation_id"), "relation_id",
                                   pa.array([rel] * meta.num_rows, pa.string()))
        parts.append(part)
        rel_parts.append(meta)
    return (pa.concat_tables(parts) if parts else facts.slice(0, 0),
            pa.concat_tables(rel_parts) if rel_parts else relations.slice(0, 0))


def objects_by_ids(old: pa.Table, folder) -> pa.Table:
    """The dataset's facts (``old``, in the dataset's row order) with each Google-RE object
    under the release's ``obj_w`` where it gives one: the id a snapshot names the object by."""
    obj_w = read_table(folder, "facts", ["relation_id", "obj_w"])
    ids = [w.strip() if rel in PROPERTIES and isinstance(w, str) and w.strip() else o
           for rel, w, o in zip(obj_w["relation_id"].to_pylist(), obj_w["obj_w"].to_pylist(),
                                old["object_id"].to_pylist())]
    return old.set_column(old.schema.get_field_index("object_id"), "object_id",
                          pa.array(ids, old.schema.field("object_id").type))


def year_relations(pairs: pa.Table) -> list[str]:
    """The dataset's relations whose objects Google-RE gives as years."""
    return sorted(set(pairs["relation_id"].to_pylist()) & set(YEAR_RELATIONS))
