"""The Nobel laureates dataset (ZP-LKE App. A.1) through Wikidata's statement model.

A laureate is a person with an award statement (``p:P166`` / ``ps:P166``) whose value is an
instance or subclass of Nobel Prize (Q7191), dated by the statement's point-in-time qualifier
(``pq:P585``). Every property and class is a parameter, so a graph in another namespace that
follows the same model (like the bundled sample) feeds the same builder.
"""
from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
from tqdm import tqdm

from factprobe.core.errors import UserError
from factprobe.core.tables import (
    FACTS_SCHEMA,
    LAUREATES_SCHEMA,
    RELATIONS_SCHEMA,
    base_manifest,
    fact_id,
    text_sha256,
    write_dataset,
)
from factprobe.builders.sources.graph import PREFIXES, checked_lang, paged_select
from factprobe.builders.sources.iris import compact, resolve
from factprobe.builders.sources.sparql import Endpoint
# The configuration lives in a module without pandas or pyarrow: the CLI's parser reads its
# defaults for --help (re-exported here, where callers have always found them).
from factprobe.builders.datasets.nobel_config import NobelConfig, NobelModel  # noqa: F401


def laureates_query(iri: dict[str, str], lang: str, page_size: int, offset: int) -> str:
    return (PREFIXES +
            "SELECT ?person ?name ?award ?awardName ?time ?birth ?gender ?genderName WHERE {\n"
            f"  ?person <{iri['award_statement']}> ?st .\n"
            f"  ?st <{iri['award_value']}> ?award .\n"
            f"  ?award (<{iri['instance_of']}>|<{iri['subclass_of']}>)/<{iri['subclass_of']}>* "
            f"<{iri['nobel_class']}> .\n"
            f"  OPTIONAL {{ ?st <{iri['award_time']}> ?time }}\n"
            f"  OPTIONAL {{ ?person <{iri['birth']}> ?birth }}\n"
            f"  OPTIONAL {{ ?person <{iri['gender']}> ?gender .\n"
            f"             OPTIONAL {{ ?gender rdfs:label|skos:prefLabel ?genderName "
            f"FILTER(LCASE(LANG(?genderName)) = \"{lang}\") }} }}\n"
            f"  OPTIONAL {{ ?person rdfs:label|skos:prefLabel ?name "
            f"FILTER(LCASE(LANG(?name)) = \"{lang}\") }}\n"
            f"  OPTIONAL {{ ?award rdfs:label|skos:prefLabel ?awardName "
            f"FILTER(LCASE(LANG(?awardName)) = \"{lang}\") }}\n"
            "}\nORDER BY ?person ?st ?award ?time ?birth ?gender ?name ?awardName ?genderName\n"
            f"LIMIT {int(page_size)} OFFSET {int(offset)}")


_YEAR = re.compile(r"^([+-]?)0*(\d{1,4})")


def year_of(value: str) -> int | None:
    """Year of an xsd date, dateTime, gYear or plain number literal.

    >>> year_of("1879-03-14T00:00:00Z"), year_of("+1921-01-01T00:00:00Z"), year_of("1955")
    (1879, 1921, 1955)
    >>> year_of("unknown") is None
    True
    """
    m = _YEAR.match(value.strip())
    if not m:
        return None
    return int(m.group(2)) * (-1 if m.group(1) == "-" else 1)


def build_nobel(endpoint: Endpoint, cfg: NobelConfig, prefixes: dict[str, str],
                source_tag: str) -> Path:
    lang = checked_lang(cfg.lang)
    iri = {k: resolve(v, prefixes) for k, v in asdict(cfg.model).items()}
    bar = tqdm(desc="SPARQL pages", unit="page", disable=not cfg.progress)
    try:
        rows = paged_select(endpoint, lambda n, off: laureates_query(iri, lang, n, off),
                            cfg.page_size, None, bar, ("person", "award"))
    finally:
        bar.close()
    if not rows:
        raise UserError("no award statements matched the Nobel model in this graph; check the "
                        "--award-statement/--award-value/--nobel-class parameters against the "
                        "graph's vocabulary")

    people = people_from_bindings(rows, prefixes)
    provenance = {"type": source_tag, **endpoint.description,
                  "query_sha256": text_sha256(laureates_query(iri, lang, cfg.page_size, 0)),
                  "model": iri, "retrieved": endpoint.retrieval_dates()}
    return write_nobel(people, cfg, iri, prefixes, provenance, source_tag)


def people_from_bindings(rows: list[dict], prefixes: dict[str, str]) -> dict[str, dict]:
    """Per candidate: names, awards ``{(award id, award label): {years}}``, birth years,
    genders, and how many award statements had no year."""
    people: dict[str, dict] = {}
    for b in rows:
        pid = compact(b["person"]["value"], prefixes)
        p = people.setdefault(pid, {"names": set(), "awards": {}, "births": set(),
                                    "genders": set(), "undated": 0})
        if "name" in b:
            p["names"].add(b["name"]["value"])
        award = compact(b["award"]["value"], prefixes)
        label = b.get("awardName", {}).get("value", award)
        year = year_of(b["time"]["value"]) if "time" in b else None
        if year is None:
            p["undated"] += 1
        p["awards"].setdefault((award, label), set()).add(year)
        if "birth" in b and year_of(b["birth"]["value"]) is not None:
            p["births"].add(year_of(b["birth"]["value"]))
        if "gender" in b:
            p["genders"].add(b.get("genderName", {}).get("value")
                             or compact(b["gender"]["value"], prefixes))
    return people


def write_nobel(people: dict[str, dict], cfg: NobelConfig, iri: dict[str, str],
                prefixes: dict[str, str], provenance: dict, source_tag: str) -> Path:
    """The laureates, their birth-year facts and the manifest, from :func:`people_from_bindings`'
    shape (any source that fills it)."""
    dropped = {"no_name": 0, "no_birth_year": 0, "no_award_up_to_max_year": 0,
               "several_birth_years": 0}
    laureates = []
    for pid, p in people.items():
        years = sorted({y for ys in p["awards"].values() for y in ys
                        if y is not None and y <= cfg.max_year})
        if not p["names"]:
            dropped["no_name"] += 1
            continue
        if not p["births"]:
            dropped["no_birth_year"] += 1
            continue
        if not years:
            dropped["no_award_up_to_max_year"] += 1
            continue
        if len(p["births"]) > 1:
            # Wikidata sometimes holds two birth dates; the earliest is kept, and counted.
            dropped["several_birth_years"] += 1
        fields = sorted({label for (award, label), ys in p["awards"].items()
                         if any(y is not None and y <= cfg.max_year for y in ys)})
        laureates.append({"subject_id": pid, "name": min(p["names"]),
                          "birth_year": min(p["births"]), "award_years": years,
                          "fields": fields, "gender": min(p["genders"]) if p["genders"] else ""})
    if not laureates:
        raise UserError(f"every candidate laureate was dropped ({dropped}); check the "
                        f"--birth-property and --max-year parameters")
    laureates.sort(key=lambda d: (d["award_years"][0], d["name"], d["subject_id"]))
    table = pa.Table.from_pylist(laureates, schema=LAUREATES_SCHEMA)

    rid = compact(iri["birth"], prefixes)
    facts = pa.Table.from_pylist([{
        "fact_id": fact_id(rid, d["subject_id"], str(d["birth_year"])),
        "relation_id": rid, "subject_id": d["subject_id"], "object_id": str(d["birth_year"]),
        "subject": d["name"], "object": str(d["birth_year"]), "subject_aliases": [],
        "object_aliases": [], "answers": [str(d["birth_year"])], "split": "",
        "source": source_tag} for d in laureates], schema=FACTS_SCHEMA)
    relations = pa.Table.from_pylist([{
        "relation_id": rid, "label": "birth year",
        "description": "year of birth of a Nobel laureate", "object_type": "year",
        "iri": iri["birth"]}], schema=RELATIONS_SCHEMA)
    params = {"model": asdict(cfg.model), "max_year": cfg.max_year,
              "lang": checked_lang(cfg.lang)}
    counts = {"laureates": table.num_rows, "facts": facts.num_rows,
              "women": sum(1 for d in laureates if d["gender"] == "female"),
              "laureates_with_several_awards": sum(1 for d in laureates
                                                   if len(d["award_years"]) > 1),
              "statements_without_year": sum(p["undated"] for p in people.values()),
              "dropped": dropped}
    manifest = base_manifest(Path(cfg.out).name, "nobel", provenance, params, counts)
    return write_dataset(cfg.out, {"laureates": table, "facts": facts, "relations": relations},
                         manifest)
