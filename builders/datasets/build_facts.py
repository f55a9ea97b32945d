"""``factprobe build facts``: any source -> facts.parquet, relations.parquet, dataset.json.

The sources are the table :data:`factprobe.builders.sources.table.SOURCES`; this module only reads the
one asked for and writes the dataset.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.core.tables import base_manifest, write_dataset
from factprobe.builders.datasets.facts import SourceResult, assemble_facts, triple_count
from factprobe.builders.sources.config import FactsConfig  # noqa: F401 (the builder's config)
from factprobe.builders.sources.table import SOURCES, Source, source_for


def read_source(cfg: FactsConfig, sources: dict[str, Source] = SOURCES
                ) -> contextlib.AbstractContextManager:
    """The facts of ``cfg.source`` (an entry of ``sources``), as a context manager: a source
    that holds temporary files while it is read (wikidata-dump) keeps them until the facts are
    written."""
    source = source_for(cfg.source, cfg.path, cfg.endpoint, sources)
    result = source.read(_complete(cfg, source))
    if isinstance(result, contextlib.AbstractContextManager):
        return result
    return contextlib.nullcontext(result)


def _complete(cfg: FactsConfig, source: Source) -> FactsConfig:
    """``cfg`` with the source's own options at their defaults where none were given."""
    return replace(cfg, options=source.with_default_options(cfg.options))


def build_facts(cfg: FactsConfig, sources: dict[str, Source] = SOURCES) -> Path:
    with read_source(cfg, sources) as result:
        source = source_for(cfg.source, cfg.path, cfg.endpoint, sources)
        return write_facts(_complete(cfg, source), result)


def write_facts(cfg: FactsConfig, result: SourceResult) -> Path:
    if triple_count(result) == 0:
        # what the source itself left out (an import's skipped rows), so the line says why
        left = {k: v for k, v in (result.dropped or {}).items() if v}
        why = f" (left out: {', '.join(f'{k} {v}' for k, v in sorted(left.items()))})" \
            if left else ""
        raise UserError(f"the {cfg.source} source {cfg.path or cfg.endpoint or ''} holds no facts "
                        f"for the relations asked ({', '.join(cfg.relations or ['all'])}){why}; "
                        f"check the input and --relations")
    if result.assembly is not None:  # out of core: facts written as they are assembled
        facts, relations, counts = result.assembly.assemble_streamed()
    else:
        facts, relations, counts = assemble_facts(result)
    if facts.num_rows == 0:
        raise UserError("no facts left after dropping entities without a label in "
                        f"{cfg.lang!r}; check --lang and the relations ({counts['dropped']})")
    manifest = base_manifest(Path(cfg.out).name, "facts", result.provenance,
                             cfg.manifest_params(), counts)
    return write_dataset(cfg.out, {"facts": facts, "relations": relations}, manifest)
