"""``build facts --source wikidata-dump``: the truthy statements of the relations asked for, with
labels and aliases from the dump itself, assembled by the same rules as every other source but
in DuckDB (:mod:`.assemble`), which spills to disk, instead of in pandas.

What the SPARQL source does to a binding is done here to a dump term: entity objects take their
label (rows without one are dropped and counted by the assembly), literals keep their value in
the form ``--date-format`` asks for, text in another language is dropped and counted, the
relation's label and description come from its property entity.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import pandas as pd

from factprobe.core.errors import UserError
from factprobe.builders.datasets.facts import RAW_COLUMNS, SourceResult
from factprobe.builders.sources.common import natural_key
from factprobe.builders.sources.graph import checked_lang, literal_label
from factprobe.builders.sources.iris import WDT, XSD, compact
from factprobe.builders.sources.wikidata_dump import join
from factprobe.builders.sources.wikidata_dump.assemble import DumpAssembly
from factprobe.builders.sources.wikidata_dump.options import DumpOptions, cores
from factprobe.builders.sources.wikidata_dump.run import extracted
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec, property_ids
from factprobe.builders.sources.wikidata_dump.stream import detect

TAG = "wikidata-dump"


@contextlib.contextmanager
def facts_from_dump(path: str, relations, *, lang: str = "en", limit: int | None = None,
                    date_format: str = "date", skip_bad: bool = False,
                    options: DumpOptions = DumpOptions(), progress: bool = True
                    ) -> Iterator[SourceResult]:
    """The facts of ``relations`` (``None``: every relation) in the dump at ``path``. The
    scratch shards live until the ``with`` block ends: a kill while the caller writes its
    dataset loses no shard."""
    lang = checked_lang(lang)
    wanted = property_ids(relations) if relations else None
    dump = detect(path)
    spec = ExtractSpec(dump.syntax, lang, wanted, (), skip_bad)
    with join.memory_errors(options.memory_limit), extracted(dump, spec, options,
                                                             progress) as ex:
        con = join.connect(ex.work.path, cores(),
                           options.memory_limit or join.default_memory_limit())
        try:
            join.load_statements(con, ex.files("statements"), list(wanted) if wanted else None,
                                 limit)
            present = join.present_relations(con)
            if wanted:
                missing = [r for r in wanted if r not in present]
                if missing:
                    raise UserError(f"no facts for relation(s) {', '.join(missing)} in the dump "
                                    f"{dump.path}; check the property ids on wikidata.org")
            rels = list(wanted) if wanted else sorted(present, key=natural_key)
            join.load_names(con, ex.files("names"), rels)
            meta = join.names_by_kind(con, rels)
            provenance = {**ex.provenance(), "relations": {r: WDT + r for r in rels},
                          "lang": lang}
            dropped = {}
            if ex.stats.bad_lines:
                provenance["bad_lines"] = ex.stats.bad_lines
                dropped["bad_lines"] = ex.stats.bad_lines
            # The facts are assembled in DuckDB when the caller asks (assemble_facts), on this
            # connection, which stays open until the dataset is written.
            assembly = DumpAssembly(con, lang, date_format, TAG, dropped,
                                    _relation_meta(rels, meta), options.memory_limit,
                                    spill_dir=ex.work.path / "facts-spill")
            yield SourceResult(triples=pd.DataFrame(columns=RAW_COLUMNS),
                               relations=assembly.relation_meta, provenance=provenance,
                               dropped=assembly.dropped, source_tag=TAG, assembly=assembly)
        finally:
            con.close()


def in_memory(result: SourceResult) -> SourceResult:
    """The same facts as a plain :class:`SourceResult` (every row in pandas), for the
    in-memory :func:`~factprobe.builders.datasets.facts.assemble_facts`: what the dump source
    handed over before issue 30, kept to check the out-of-core assembly against it. Call it
    before ``result.assembly.assemble()``, which drops the join's statements."""
    asm = result.assembly
    triples, _ = _triples(join.labelled_statements(asm.con), asm.lang, asm.date_format)
    return SourceResult(triples=triples, aliases=join.aliases(asm.con).to_pandas(),
                        relations=result.relations, provenance=result.provenance,
                        dropped=result.dropped, source_tag=result.source_tag)


def _triples(table, lang: str, date_format: str) -> tuple[pd.DataFrame, int]:
    """The facts table the assembly takes. Entity objects (nearly every row of a dense
    extraction) go through in Arrow columns; only literal rows are formatted one by one, so
    no Python string per fact and field is made (a quarter of the build's time and most of
    its memory on 600,000 facts)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    def flat(name: str) -> pa.Array:
        col = table[name]
        return pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)

    is_iri = pc.fill_null(pc.equal(flat("object_kind"), "iri"), False)
    object_id, olabel = flat("object_id"), flat("object_label")
    otype = pa.repeat("entity", table.num_rows) if table.num_rows else pa.array([], pa.string())
    keep = None
    foreign = 0
    literal = pc.indices_nonzero(pc.invert(is_iri)).to_pylist()
    if literal:
        lits = table.take(literal).select(["object_id", "datatype", "lang"]).to_pydict()
        xsd = {"xsd": XSD}
        values, types, dropped = [], [], []
        for i, (oid, datatype, lit_lang) in enumerate(zip(lits["object_id"], lits["datatype"],
                                                          lits["lang"])):
            if lit_lang and lit_lang != lang:
                dropped.append(literal[i])
                values.append(None)
                types.append(None)
                continue
            dtype = datatype or XSD + "string"
            values.append(literal_label({"value": oid, "datatype": dtype}, date_format))
            types.append(compact(dtype, xsd))
        mask = pc.invert(is_iri)
        values, types = pa.array(values, pa.string()), pa.array(types, pa.string())
        object_id = pc.replace_with_mask(object_id, mask, values)
        olabel = pc.replace_with_mask(olabel, mask, values)
        otype = pc.replace_with_mask(otype, mask, types)
        foreign = len(dropped)
        if dropped:
            keep = pa.array(np.isin(np.arange(table.num_rows), dropped, invert=True))
    out = pa.table({"relation_id": table["relation_id"], "subject_id": table["subject_id"],
                    "object_id": object_id, "subject": table["subject"], "object": olabel,
                    "object_type": otype})
    if keep is not None:
        out = out.filter(keep)
    return out.to_pandas(), foreign


def _relation_meta(rels: list[str], names: dict) -> pd.DataFrame:
    rows = []
    for rid in rels:
        got = names.get(rid, {})
        label = (got.get("pref") or got.get("label") or [rid])[0]
        desc = next((got[k][0] for k in ("description", "comment", "definition") if got.get(k)),
                    "")
        rows.append({"relation_id": rid, "label": label, "description": desc,
                     "iri": WDT + rid})
    return pd.DataFrame(rows)
