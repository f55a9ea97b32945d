"""``build aliases --via graph`` on a dataset built from a dump: every name of its entities in
one language, read from the dump again (one pass, names only), no network call."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from factprobe.builders.sources.graph import checked_lang
from factprobe.builders.sources.wikidata_dump import join
from factprobe.builders.sources.wikidata_dump.options import DumpOptions, cores
from factprobe.builders.sources.wikidata_dump.run import extracted
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.stream import detect


def dump_aliases(path: str, ids: list[str], lang: str, options: DumpOptions = DumpOptions(),
                 progress: bool = True) -> tuple[pd.DataFrame, dict]:
    """(``entity_id``, ``alias``) rows for the entities ``ids``: their labels, preferred
    labels and aliases in ``lang`` (the caller drops each entity's own label), and where they
    came from."""
    lang = checked_lang(lang)
    dump = detect(path)
    spec = ExtractSpec(dump.syntax, lang, (), (), False)
    with join.memory_errors(options.memory_limit), extracted(dump, spec, options, progress) as ex:
        con = join.connect(ex.work.path, cores(),
                           options.memory_limit or join.default_memory_limit())
        try:
            con.register("wanted_ids", pa.table({"id": pa.array(sorted(set(ids)),
                                                                 type=pa.string())}))
            rows = con.execute(
                f"SELECT DISTINCT entity_id, value FROM read_parquet("
                f"{join.files_sql(ex.files('names'))}) WHERE kind IN ('label', 'pref', 'alt') "
                f"AND entity_id IN (SELECT id FROM wanted_ids) ORDER BY entity_id, value"
            ).fetchall()
        finally:
            con.close()
        provenance = {"via": "graph", **{k: v for k, v in ex.provenance().items()
                                         if k in ("type", "path", "sha256", "format",
                                                  "compression", "dump_date")},
                      "retrieved": []}
    return pd.DataFrame(rows, columns=["entity_id", "alias"]), provenance
