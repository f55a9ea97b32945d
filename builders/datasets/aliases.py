"""``factprobe build aliases``: other names of subjects and objects, from Wikidata's Action API
or from the source graph's ``skos:altLabel``, merged into a copy of a facts dataset."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa

from factprobe.core.errors import UserError
from factprobe.builders.inputs import FACTS, InputDataset, Needs, as_input
from factprobe.core.provenance import input_of, make_provenance
from factprobe.core.redact import is_redacted
from factprobe.core.retry import RetryPolicy
from factprobe.core.tables import base_manifest, file_sha256, read_table, write_dataset
from factprobe.core.transport import DEFAULT_MAX_ANSWER_MB, MB
from factprobe.builders.datasets.facts import alias_lists
from factprobe.builders.sources.graph import checked_lang
from factprobe.builders.sources.iris import SKOS, WELL_KNOWN, is_wikidata_id, resolve
from factprobe.builders.sources.sparql import Endpoint, HttpEndpoint, LocalGraph

VALUES_BATCH = 200  # entity IRIs per altLabel query: keeps each query well under URL/POST limits


@dataclass(frozen=True)
class AliasConfig:
    facts: InputDataset | str      # resolved by the CLI (ALIASES_INPUT), or a path
    out: str
    via: str = "wikidata"
    api_url: str | None = None       # a Wikibase Action API other than Wikidata's
    path: str | None = None          # graph override for --via graph
    endpoint: str | None = None
    lang: str = "en"
    contact: str | None = None
    cache_dir: str | None = None
    refresh: bool = False
    timeout_s: float = 30.0
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB
    retries: int = 3
    progress: bool = True


def _graph_for(cfg: AliasConfig, manifest: dict) -> tuple[Endpoint, dict[str, str]]:
    # a hand-edited manifest may hold anything: only maps are read
    src = manifest.get("source") if isinstance(manifest.get("source"), dict) else {}
    params = manifest.get("params") if isinstance(manifest.get("params"), dict) else {}
    prefixes = params.get("prefixes") if isinstance(params.get("prefixes"), dict) else {}
    policy = RetryPolicy(retries=cfg.retries)
    if cfg.path or (not cfg.endpoint and src.get("path") and str(src.get("type", "")).startswith("rdf")):
        graph = LocalGraph(cfg.path or src["path"])
        return graph, {**WELL_KNOWN, **graph.prefixes, **prefixes}
    url = cfg.endpoint or src.get("endpoint")
    if not url:
        raise UserError(f"{cfg.facts} was built from {src.get('type', 'an unknown source')}, "
                        f"which has no graph to read altLabels from; pass --path FILE or "
                        f"--endpoint URL, or use --via wikidata")
    if not cfg.endpoint and is_redacted(str(url)):
        raise UserError(f"{cfg.facts} was built from {url}, whose credentials factprobe does not "
                        f"record; pass --endpoint URL with them again")
    return (HttpEndpoint(url, cache_dir=cfg.cache_dir, contact=cfg.contact,
                         timeout_s=cfg.timeout_s, policy=policy, refresh=cfg.refresh,
                         max_bytes=int(cfg.max_answer_mb * MB)),
            dict(prefixes))


def _dump_path(cfg: AliasConfig, manifest: dict) -> str | None:
    """The Wikidata dump to read names from: --path when it is one, else the dump the facts
    were built from (unless --path or --endpoint names another graph)."""
    from factprobe.builders.sources.wikidata_dump.stream import is_dump_path
    if cfg.path:
        return cfg.path if is_dump_path(cfg.path) else None
    src = manifest.get("source", {})
    if not cfg.endpoint and src.get("type") == "wikidata-dump" and src.get("path"):
        return str(src["path"])
    return None


def graph_aliases(endpoint: Endpoint, ids: list[str], prefixes: dict[str, str], lang: str
                  ) -> pd.DataFrame:
    lang = checked_lang(lang)
    iri_of = {}
    for eid in ids:
        try:
            iri_of[resolve(eid, prefixes, bare_ns=WELL_KNOWN["wd"])] = eid
        except UserError:
            continue  # literal objects (years, dates) have no IRI and no aliases
    rows = []
    iris = sorted(iri_of)
    for i in range(0, len(iris), VALUES_BATCH):
        values = " ".join(f"<{x}>" for x in iris[i:i + VALUES_BATCH])
        q = (f"SELECT ?e ?a WHERE {{ VALUES ?e {{ {values} }} ?e <{SKOS}altLabel> ?a . "
             f"FILTER(LCASE(LANG(?a)) = \"{lang}\") }} ORDER BY ?e ?a")
        for b in endpoint.select(q, ("e", "a"))["results"]["bindings"]:
            rows.append((iri_of[b["e"]["value"]], b["a"]["value"]))
    return pd.DataFrame(rows, columns=["entity_id", "alias"])


def wikidata_aliases(cfg: AliasConfig, ids: list[str]) -> tuple[pd.DataFrame, dict]:
    from factprobe.builders.sources.wikidata_api import fetch_labels_aliases
    qids = [i for i in ids if is_wikidata_id(i)]
    if not qids:
        raise UserError(f"{cfg.facts} has no Wikidata ids (Q123) to look up; use --via graph")
    from factprobe.builders.sources.wikidata_api import API_URL
    names = fetch_labels_aliases(qids, lang=cfg.lang, api_url=cfg.api_url or API_URL, cache_dir=cfg.cache_dir,
                                 contact=cfg.contact, policy=RetryPolicy(retries=cfg.retries),
                                 timeout_s=cfg.timeout_s, refresh=cfg.refresh,
                                 max_bytes=int(cfg.max_answer_mb * MB), progress=cfg.progress)
    rows = [(eid, alias) for eid, n in sorted(names.items()) for alias in n.aliases]
    return pd.DataFrame(rows, columns=["entity_id", "alias"]), {
        "api": "wbgetentities", "retrieved": list(names.retrieval_dates)}


NAME_COLUMNS = ["subject_id", "object_id", "subject", "object", "subject_aliases",
                "object_aliases"]
ALIASES_INPUT = Needs("--facts", FACTS, columns=tuple(NAME_COLUMNS))


def build_aliases(cfg: AliasConfig) -> Path:
    if cfg.via == "wikidata" and (cfg.path or cfg.endpoint):
        raise UserError("--path and --endpoint are for --via graph; --via wikidata asks the "
                        "Wikidata API (--api-url)")
    if cfg.path and cfg.endpoint:
        raise UserError("give --path FILE or --endpoint URL to read altLabels from, not both")
    if cfg.via == "graph" and cfg.api_url:
        raise UserError("--api-url is for --via wikidata; --via graph reads --path or "
                        "--endpoint")
    facts_input = as_input(cfg.facts, ALIASES_INPUT)
    folder, manifest = facts_input.folder, facts_input.manifest
    cfg = replace(cfg, facts=str(folder))
    facts = read_table(cfg.facts, "facts")
    df = facts.select(NAME_COLUMNS).to_pandas()
    ids = sorted(set(df["subject_id"]) | set(df["object_id"]))
    if cfg.via == "wikidata":
        fetched, provenance = wikidata_aliases(cfg, ids)
    elif cfg.via == "graph" and _dump_path(cfg, manifest):
        from factprobe.builders.sources.wikidata_dump.options import DumpOptions
        from factprobe.builders.sources.wikidata_dump.to_aliases import dump_aliases
        fetched, provenance = dump_aliases(
            _dump_path(cfg, manifest), ids, cfg.lang, progress=cfg.progress,
            options=DumpOptions(work_root=str(Path(cfg.cache_dir) / "wikidata-dump")
                                if cfg.cache_dir else None))
    elif cfg.via == "graph":
        endpoint, prefixes = _graph_for(cfg, manifest)
        fetched = graph_aliases(endpoint, ids, prefixes, cfg.lang)
        provenance = {"via": "graph", **endpoint.description,
                      "retrieved": endpoint.retrieval_dates()}
    else:
        raise UserError(f"--via {cfg.via!r}: choose wikidata or graph")

    existing = pd.concat([
        df[["subject_id", "subject_aliases"]].explode("subject_aliases").set_axis(
            ["entity_id", "alias"], axis=1),
        df[["object_id", "object_aliases"]].explode("object_aliases").set_axis(
            ["entity_id", "alias"], axis=1)])
    labels = pd.concat([pd.Series(df["subject"].to_numpy(), index=df["subject_id"]),
                        pd.Series(df["object"].to_numpy(), index=df["object_id"])])
    index, lists = alias_lists(pd.concat([existing, fetched]), labels)
    pad = pa.concat_arrays([lists, pa.array([[]], type=pa.list_(pa.string()))])

    def column(ids: pd.Series) -> pa.Array:
        pos = index.get_indexer(ids)
        pos[pos < 0] = len(lists)
        return pad.take(pa.array(pos))

    out = facts.set_column(facts.schema.get_field_index("subject_aliases"), "subject_aliases",
                           column(df["subject_id"]))
    out = out.set_column(out.schema.get_field_index("object_aliases"), "object_aliases",
                         column(df["object_id"]))
    new_manifest = base_manifest(
        Path(cfg.out).name, manifest.get("kind", "facts"),
        {**manifest.get("source", {}), "aliases": provenance,
         "facts_sha256": file_sha256(Path(cfg.facts) / "facts.parquet")},
        {**manifest.get("params", {}), "aliases": {"via": cfg.via, "lang": cfg.lang}},
        {**manifest.get("counts", {}), "entities_with_aliases": len(index),
         "aliases_fetched": len(fetched)},
        make_provenance(source={"type": "aliases", **provenance},
                        inputs={"facts": input_of(facts_input)}))
    tables = {"facts": out}
    if (Path(cfg.facts) / "relations.parquet").exists():
        tables["relations"] = read_table(cfg.facts, "relations")
    return write_dataset(cfg.out, tables, new_manifest)
