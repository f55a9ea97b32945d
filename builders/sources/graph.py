"""Facts from a graph that answers SPARQL: Wikidata, any endpoint, or an RDF file in process.

Per relation, two paginated queries: the triples, then the labels of every entity they touch.
Labels are read from ``rdfs:label`` / ``skos:prefLabel`` / ``skos:altLabel`` directly, because
neither Oxigraph nor a plain endpoint has Wikidata's ``SERVICE wikibase:label``; every query
declares its prefixes for the same reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from tqdm import tqdm

from factprobe.core.errors import UserError
from factprobe.core.tables import text_sha256
from factprobe.builders.datasets.facts import SourceResult
from factprobe.builders.sources.iris import (
    RDFS,
    SCHEMA,
    SKOS,
    WD,
    WDT,
    XSD,
    checked_iri,
    compact,
    is_wikidata_id,
    resolve,
)
from factprobe.builders.sources.sparql import Endpoint

PREFIXES = (f"PREFIX rdfs: <{RDFS}>\nPREFIX skos: <{SKOS}>\nPREFIX schema: <{SCHEMA}>\n")
_PREF, _LABEL, _ALT = SKOS + "prefLabel", RDFS + "label", SKOS + "altLabel"
_DESCRIPTION_PREDICATES = (SCHEMA + "description", RDFS + "comment", SKOS + "definition")


@dataclass(frozen=True)
class GraphQueryConfig:
    lang: str = "en"
    page_size: int = 10_000
    limit: int | None = None          # facts per relation
    date_format: str = "date"         # "date" -> 1879-03-14, "year" -> 1879
    prefixes: dict = field(default_factory=dict)
    # relation id -> the subject ids to read it for (build refresh); None: every subject. A
    # few subjects of a relation Wikidata holds millions of facts of are a few small queries.
    subjects: dict | None = None


SUBJECT_BATCH = 200   # subjects per query: small enough for any endpoint's request size


def triples_query(pred: str, page_size: int, offset: int) -> str:
    """One page of a relation's triples, in a fixed order so pages never overlap.

    >>> print(triples_query("http://www.wikidata.org/prop/direct/P36", 100, 200))
    SELECT ?s ?o WHERE {
      ?s <http://www.wikidata.org/prop/direct/P36> ?o .
      FILTER(!isBlank(?s) && !isBlank(?o))
    }
    ORDER BY ?s ?o
    LIMIT 100 OFFSET 200
    """
    return (f"SELECT ?s ?o WHERE {{\n  ?s <{checked_iri(pred)}> ?o .\n"
            f"  FILTER(!isBlank(?s) && !isBlank(?o))\n}}\nORDER BY ?s ?o\n"
            f"LIMIT {int(page_size)} OFFSET {int(offset)}")


def _values(subjects: list[str] | None) -> str:
    """The clause that binds ?s to the subjects asked for; empty for every subject."""
    if subjects is None:
        return ""
    return "  VALUES ?s { " + " ".join(f"<{checked_iri(s)}>" for s in subjects) + " }\n"


def subject_triples_query(pred: str, subjects: list[str], page_size: int, offset: int) -> str:
    """One page of a relation's triples for the given subjects only.

    >>> print(subject_triples_query("http://x/p", ["http://x/a", "http://x/b"], 10, 0))
    SELECT ?s ?o WHERE {
      VALUES ?s { <http://x/a> <http://x/b> }
      ?s <http://x/p> ?o .
      FILTER(!isBlank(?s) && !isBlank(?o))
    }
    ORDER BY ?s ?o
    LIMIT 10 OFFSET 0
    """
    return triples_query(pred, page_size, offset).replace(
        "WHERE {\n", "WHERE {\n" + _values(subjects), 1)


def labels_query(pred: str, lang: str, page_size: int, offset: int,
                 subjects: list[str] | None = None) -> str:
    """Labels and aliases of every entity a relation touches (of its facts about ``subjects``
    when given), in one language."""
    lang = checked_lang(lang)
    if subjects is None:
        touched = (f"{{ ?e <{checked_iri(pred)}> ?x }} UNION "
                   f"{{ ?x <{pred}> ?e . FILTER(isIRI(?e)) }}")
    else:
        touched = (f"{_values(subjects).strip()} ?s <{checked_iri(pred)}> ?o . "
                   f"{{ BIND(?s AS ?e) }} UNION {{ BIND(?o AS ?e) FILTER(isIRI(?o)) }}")
    return (PREFIXES +
            "SELECT ?e ?p ?l WHERE {\n"
            f"  {{ SELECT DISTINCT ?e WHERE {{ {touched} }} }}\n"
            "  VALUES ?p { rdfs:label skos:prefLabel skos:altLabel }\n"
            "  ?e ?p ?l .\n"
            f"  FILTER(LCASE(LANG(?l)) = \"{lang}\")\n"
            "}\nORDER BY ?e ?p ?l\n"
            f"LIMIT {int(page_size)} OFFSET {int(offset)}")


def relation_meta_query(iris: list[str], lang: str) -> str:
    values = " ".join(f"<{checked_iri(i)}>" for i in iris)
    return (PREFIXES +
            f"SELECT ?r ?p ?v WHERE {{\n  VALUES ?r {{ {values} }}\n"
            "  VALUES ?p { rdfs:label skos:prefLabel schema:description rdfs:comment "
            "skos:definition }\n"
            f"  ?r ?p ?v .\n  FILTER(LCASE(LANG(?v)) = \"{checked_lang(lang)}\")\n}}\n"
            "ORDER BY ?r ?p ?v")


PREDICATES_QUERY = ("SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o . FILTER(isIRI(?o) || "
                    "DATATYPE(?o) != <http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>) }"
                    " GROUP BY ?p ORDER BY DESC(?n) ?p LIMIT 40")


def checked_lang(lang: str) -> str:
    import re
    if not re.fullmatch(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*", lang):
        raise UserError(f"--lang {lang!r} is not a language tag (like en or pt-br)")
    return lang.lower()


def paged_select(endpoint: Endpoint, make_query, page_size: int, limit: int | None, bar,
                 required: tuple[str, ...]) -> list[dict]:
    """Every row of a paged SELECT; ``required``: the variables every row must bind."""
    rows: list[dict] = []
    offset = 0
    while True:
        size = page_size if limit is None else min(page_size, limit - len(rows))
        if size <= 0:
            break
        page = endpoint.select(make_query(size, offset), required)["results"]["bindings"]
        rows.extend(page)
        bar.update(1)
        if len(page) < size:
            break
        offset += size
    return rows


def literal_label(term: dict, date_format: str) -> str | None:
    """Display form of a literal object; ``None`` when it is text in another language.

    >>> literal_label({"type": "literal", "value": "1879-03-14T00:00:00Z",
    ...                "datatype": "http://www.w3.org/2001/XMLSchema#dateTime"}, "date")
    '1879-03-14'
    >>> literal_label({"type": "literal", "value": "1921", "datatype":
    ...                "http://www.w3.org/2001/XMLSchema#gYear"}, "year")
    '1921'
    """
    value = term["value"]
    datatype = term.get("datatype", "")
    if datatype in (XSD + "dateTime", XSD + "date", XSD + "gYear", XSD + "gYearMonth"):
        sign = "-" if value.startswith("-") else ""
        body = value.lstrip("+-")
        return sign + (body[:4] if date_format == "year" else body.split("T")[0])
    return value


class GraphReader:
    """Reads facts for relations from one :class:`Endpoint`."""

    def __init__(self, endpoint: Endpoint, config: GraphQueryConfig, *, source_tag: str,
                 wikidata: bool = False, progress: bool = True):
        self.endpoint = endpoint
        self.config = config
        self.source_tag = source_tag
        self.wikidata = wikidata
        self.progress = progress
        self.prefixes = dict(config.prefixes)

    def _id(self, term: dict) -> str:
        return compact(term["value"], self.prefixes)

    def read(self, relations: list[str]) -> SourceResult:
        cfg = self.config
        lang = checked_lang(cfg.lang)
        preds = {}
        for name in relations:
            iri = resolve(name, self.prefixes, bare_ns=WDT)
            preds[compact(iri, self.prefixes)] = iri

        triples: dict[str, list] = {k: [] for k in ("relation_id", "subject_id", "object_id",
                                                    "subject", "object", "object_type")}
        alias_rows: list[tuple[str, str]] = []
        labels: dict[str, str] = {}
        queries: dict[str, str] = {}
        dropped = {"rows_with_foreign_literal": 0}
        missing = []
        bar = tqdm(desc="SPARQL pages", unit="page", disable=not self.progress)
        try:
            for rid, pred in preds.items():
                batches = self._subject_batches(rid)
                queries[rid] = text_sha256("\n".join(
                    triples_query(pred, cfg.page_size, 0) + "\n" +
                    labels_query(pred, lang, cfg.page_size, 0) if batch is None else
                    subject_triples_query(pred, batch, cfg.page_size, 0) + "\n" +
                    labels_query(pred, lang, cfg.page_size, 0, batch) for batch in batches))
                rows = []
                for batch in batches:
                    got = paged_select(
                        self.endpoint, lambda n, off: triples_query(pred, n, off) if batch is None
                        else subject_triples_query(pred, batch, n, off),
                        cfg.page_size, cfg.limit, bar, ("s", "o"))
                    rows += got
                    if got:
                        names = paged_select(
                            self.endpoint, lambda n, off: labels_query(pred, lang, n, off, batch),
                            cfg.page_size, None, bar, ("e", "p", "l"))
                        self._collect_labels(names, labels, alias_rows)
                if not rows and (cfg.subjects is None or not self._has_facts(pred)):
                    missing.append(rid)
                    continue
                for b in rows:
                    s, o = b["s"], b["o"]
                    sid = self._id(s)
                    if o["type"] == "uri":
                        oid = self._id(o)
                        olabel = None  # filled from labels below
                        otype = "entity"
                    else:
                        lit_lang = o.get("xml:lang", "")
                        if lit_lang and lit_lang.lower() != lang:
                            dropped["rows_with_foreign_literal"] += 1
                            continue
                        olabel = literal_label(o, cfg.date_format)
                        oid = olabel
                        otype = compact(o.get("datatype", XSD + "string"), {"xsd": XSD})
                    triples["relation_id"].append(rid)
                    triples["subject_id"].append(sid)
                    triples["object_id"].append(oid)
                    triples["subject"].append(None)  # labels are filled in below
                    triples["object"].append(olabel)
                    triples["object_type"].append(otype)
        finally:
            bar.close()
        if missing:
            raise UserError(self._missing_message(missing))

        triples["subject"] = [labels.get(s) for s in triples["subject_id"]]
        triples["object"] = [labels.get(o) if t == "entity" else lab for o, t, lab in
                             zip(triples["object_id"], triples["object_type"], triples["object"])]
        df = pd.DataFrame(triples)
        aliases = pd.DataFrame(alias_rows, columns=["entity_id", "alias"])
        meta = self._relation_meta(preds)
        provenance = {
            "type": self.source_tag,
            **self.endpoint.description,
            "relations": {rid: iri for rid, iri in preds.items()},
            "query_sha256": queries,
            "lang": lang,
            "retrieved": self.endpoint.retrieval_dates(),
        }
        return SourceResult(triples=df, aliases=aliases, relations=meta, provenance=provenance,
                            dropped={k: v for k, v in dropped.items() if v},
                            source_tag=self.source_tag)

    def _subject_batches(self, rid: str) -> list[list[str] | None]:
        """The subjects' IRIs to read ``rid`` for, in batches; [None]: every subject."""
        if self.config.subjects is None:
            return [None]
        iris = sorted({resolve(s, self.prefixes, bare_ns=WD)
                       for s in self.config.subjects.get(rid, ())})
        return [iris[i:i + SUBJECT_BATCH] for i in range(0, len(iris), SUBJECT_BATCH)]

    def _has_facts(self, pred: str) -> bool:
        """Whether the graph holds any fact of ``pred`` (for a relation none of the subjects
        asked for has: gone from them, or unknown to the graph)."""
        return bool(self.endpoint.select(triples_query(pred, 1, 0), ("s", "o"))
                    ["results"]["bindings"])

    def _collect_labels(self, bindings: list[dict], labels: dict, alias_rows: list) -> None:
        # Preferred label: skos:prefLabel, else rdfs:label; the smallest value when a graph has
        # several, so the choice does not depend on result order. The rest become aliases.
        per_entity: dict[str, dict[str, list[str]]] = {}
        for b in bindings:
            eid = self._id(b["e"])
            per_entity.setdefault(eid, {}).setdefault(b["p"]["value"], []).append(b["l"]["value"])
        for eid, by_pred in per_entity.items():
            names = sorted(by_pred.get(_PREF, [])) or sorted(by_pred.get(_LABEL, []))
            if names and eid not in labels:
                labels[eid] = names[0]
            for values in by_pred.values():
                alias_rows.extend((eid, v) for v in values)

    def _relation_meta(self, preds: dict[str, str]) -> pd.DataFrame:
        # Wikidata keeps a property's label on wd:P36, not on the direct-claim predicate wdt:P36.
        subject_of = {rid: (WD + iri[len(WDT):] if iri.startswith(WDT) else iri)
                      for rid, iri in preds.items()}
        result = self.endpoint.select(relation_meta_query(sorted(set(subject_of.values())),
                                                          self.config.lang), ("r", "p", "v"))
        found: dict[str, dict[str, list[str]]] = {}
        for b in result["results"]["bindings"]:
            found.setdefault(b["r"]["value"], {}).setdefault(b["p"]["value"], []).append(
                b["v"]["value"])
        rows = []
        for rid, iri in preds.items():
            got = found.get(subject_of[rid], {})
            label = (sorted(got.get(_PREF, [])) or sorted(got.get(_LABEL, [])) or [rid])[0]
            desc = next((sorted(got[p])[0] for p in _DESCRIPTION_PREDICATES if got.get(p)), "")
            rows.append({"relation_id": rid, "label": label, "description": desc, "iri": iri})
        return pd.DataFrame(rows)

    def _missing_message(self, missing: list[str]) -> str:
        names = ", ".join(missing)
        if self.wikidata:
            bad = [m for m in missing if not is_wikidata_id(m)]
            hint = (f" ({', '.join(bad)} not Wikidata property ids like P36)" if bad else
                    "; check the property ids on wikidata.org")
            return f"no facts for relation(s) {names} on Wikidata{hint}"
        result = self.endpoint.select(PREDICATES_QUERY, ("p",))
        present = [compact(b["p"]["value"], self.prefixes)
                   for b in result["results"]["bindings"]]
        return (f"no facts for relation(s) {names} in {self.source_tag} source; relations "
                f"present: {', '.join(present) or 'none (the graph is empty)'}")
