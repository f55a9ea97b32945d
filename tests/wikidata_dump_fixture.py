"""A small Wikidata written three ways: the JSON dump, the truthy N-Triples dump, and the full
RDF (statements, ranks, qualifiers) that a SPARQL store would hold, for the dump tests.

The JSON follows Wikidata's JSON data model (entities, labels/descriptions/aliases per language,
claims with mainsnak, rank, qualifiers; snaktype value/somevalue/novalue; datavalues of every
common type). Each value carries its RDF form written by hand as Wikidata's RDF dump format
writes it (``+`` dropped from dates, year precision as January 1st, BCE years in XSD 1.1,
Julian dates converted, quantities as ``xsd:decimal``...), so the test compares the dump reader
against an RDF mapping it did not compute. The truthy triples follow the rule of the RDF dump
format page: per subject and property the best non-deprecated rank, value snaks only.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

WD = "http://www.wikidata.org/entity/"
XSD = "http://www.w3.org/2001/XMLSchema#"
GREGORIAN, JULIAN = WD + "Q1985727", WD + "Q1985786"
P = {"wdt": "http://www.wikidata.org/prop/direct/", "p": "http://www.wikidata.org/prop/",
     "ps": "http://www.wikidata.org/prop/statement/",
     "pq": "http://www.wikidata.org/prop/qualifier/",
     "wds": "http://www.wikidata.org/entity/statement/",
     "wdno": "http://www.wikidata.org/prop/novalue/",
     "wikibase": "http://wikiba.se/ontology#",
     "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
     "skos": "http://www.w3.org/2004/02/skos/core#",
     "schema": "http://schema.org/", "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}


def lit(text: str, lang: str | None = None, dtype: str | None = None) -> str:
    esc = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{esc}"' + (f"@{lang}" if lang else f"^^<{dtype}>" if dtype else "")


def date(value: str) -> str:
    return lit(value, dtype=XSD + "dateTime")


def dec(value: str) -> str:
    return lit(value, dtype=XSD + "decimal")


@dataclass
class Value:
    datatype: str
    datavalue: dict | None         # None: somevalue / novalue
    rdf: str | None                # the N-Triples term Wikidata writes for it
    snaktype: str = "value"


def item(qid: str) -> Value:
    kind = "property" if qid[0] == "P" else "lexeme" if qid[0] == "L" else "item"
    dt = {"item": "wikibase-item", "property": "wikibase-property", "lexeme": "wikibase-lexeme"}
    return Value(dt[kind], {"value": {"entity-type": kind, "numeric-id": int(qid[1:]),
                                      "id": qid}, "type": "wikibase-entityid"}, f"<{WD}{qid}>")


def time(t: str, precision: int, rdf: str, calendar: str = GREGORIAN) -> Value:
    return Value("time", {"value": {"time": t, "timezone": 0, "before": 0, "after": 0,
                                    "precision": precision, "calendarmodel": calendar},
                          "type": "time"}, rdf)


def quantity(amount: str, rdf: str) -> Value:
    return Value("quantity", {"value": {"amount": amount, "unit": "1"}, "type": "quantity"}, rdf)


def string(text: str, datatype: str = "string") -> Value:
    rdf = f"<{text}>" if datatype == "url" else lit(text)
    return Value(datatype, {"value": text, "type": "string"}, rdf)


def mono(text: str, lang: str) -> Value:
    return Value("monolingualtext", {"value": {"text": text, "language": lang},
                                     "type": "monolingualtext"}, lit(text, lang))


SOMEVALUE = Value("wikibase-item", None, None, "somevalue")
NOVALUE = Value("wikibase-item", None, None, "novalue")


@dataclass
class Claim:
    prop: str
    value: Value
    rank: str = "normal"
    qualifiers: list[tuple[str, Value]] = field(default_factory=list)
    referenced: bool = True


@dataclass
class Entity:
    id: str
    labels: dict[str, str]
    aliases: dict[str, list[str]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    datatype: str = "wikibase-item"         # properties only

    @property
    def is_property(self) -> bool:
        return self.id.startswith("P")


def _sha1(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()


def _snak(prop: str, v: Value) -> dict:
    # Wikibase's snak hash is a SHA-1 of the snak; any stable digest gives lines the entropy of
    # real ones (it matters to how fast bzip2 decompresses them).
    out = {"snaktype": v.snaktype, "property": prop, "hash": _sha1(prop, v.datavalue),
           "datatype": v.datatype}
    if v.datavalue is not None:
        out["datavalue"] = v.datavalue
    return out


def entity_json(e: Entity, modified: str = "2024-01-01T00:00:00Z") -> dict:
    claims: dict[str, list] = {}
    for i, c in enumerate(e.claims):
        guid = _sha1(e.id, i).upper()
        st = {"mainsnak": _snak(c.prop, c.value), "type": "statement",
              "id": f"{e.id}${guid[:8]}-{guid[8:12]}-{guid[12:16]}-{guid[16:20]}-{guid[20:32]}",
              "rank": c.rank}
        if c.qualifiers:
            st["qualifiers"] = {}
            for qp, qv in c.qualifiers:
                st["qualifiers"].setdefault(qp, []).append(_snak(qp, qv))
            st["qualifiers-order"] = list(st["qualifiers"])
        if c.referenced:
            st["references"] = [{"hash": _sha1(e.id, i, "ref"), "snaks": {"P248": [_snak("P248", item("Q328"))]},
                                 "snaks-order": ["P248"]}]
        claims.setdefault(c.prop, []).append(st)
    out = {"type": "property" if e.is_property else "item"}
    if e.is_property:
        out["datatype"] = e.datatype
    out.update({
        "id": e.id,
        "labels": {k: {"language": k, "value": v} for k, v in e.labels.items()},
        "descriptions": {k: {"language": k, "value": v} for k, v in e.descriptions.items()},
        "aliases": {k: [{"language": k, "value": a} for a in vs] for k, vs in e.aliases.items()},
        "claims": claims,
        "sitelinks": {} if e.is_property else {"enwiki": {"site": "enwiki", "title": e.id,
                                                           "badges": []}},
        "lastrevid": 1000, "modified": modified,
    })
    return out


def json_dump(entities: list[Entity], modified: dict[str, str] | None = None) -> bytes:
    """The JSON dump: ``[``, one entity a line ending in a comma (but the last), ``]``."""
    lines = [json.dumps(entity_json(e, (modified or {}).get(e.id, "2024-01-01T00:00:00Z")),
                        ensure_ascii=False, separators=(",", ":")) for e in entities]
    return ("[\n" + ",\n".join(lines) + "\n]\n").encode("utf-8")


def truthy_claims(e: Entity) -> list[Claim]:
    """The claims of the best rank per property (preferred, else normal; never deprecated),
    whatever their snak type: what Wikidata's truthy triples are made from."""
    out = []
    by_prop: dict[str, list[Claim]] = {}
    for c in e.claims:
        by_prop.setdefault(c.prop, []).append(c)
    for claims in by_prop.values():
        ranks = {c.rank for c in claims}
        best = "preferred" if "preferred" in ranks else "normal"
        out += [c for c in claims if c.rank == best]
    return out


def _names(e: Entity) -> list[str]:
    s = f"<{WD}{e.id}>"
    out = []
    for lang, text in e.labels.items():
        for pred in ("rdfs:label", "skos:prefLabel", "schema:name"):
            ns, local = pred.split(":")
            out.append(f"{s} <{P[ns]}{local}> {lit(text, lang)} .")
    for lang, text in e.descriptions.items():
        out.append(f"{s} <{P['schema']}description> {lit(text, lang)} .")
    for lang, names in e.aliases.items():
        out += [f"{s} <{P['skos']}altLabel> {lit(a, lang)} ." for a in names]
    return out


def truthy_nt(entities: list[Entity]) -> bytes:
    """The truthy N-Triples dump: the dump header with its date, then names and best-rank simple
    values (``unknown value`` as a skolem IRI, as current dumps write it). Property entities'
    statements are written too."""
    dump = "<http://wikiba.se/ontology#Dump>"
    lines = [f"{dump} <http://creativecommons.org/ns#license> "
             f"<http://creativecommons.org/publicdomain/zero/1.0/> .",
             f"{dump} <{P['schema']}softwareVersion> \"1.0.0\" .",
             f"{dump} <{P['schema']}dateModified> {date('2024-01-01T23:00:00Z')} ."]
    for e in entities:
        s = f"<{WD}{e.id}>"
        lines += _names(e)
        for i, c in enumerate(truthy_claims(e)):
            if c.value.snaktype == "somevalue":
                obj = f"<http://www.wikidata.org/.well-known/genid/{e.id.lower()}{i:04x}>"
            elif c.value.snaktype == "novalue":
                lines.append(f"{s} <{P['rdf']}type> <{P['wdno']}{c.prop}> .")
                continue
            else:
                obj = c.value.rdf
            lines.append(f"{s} <{P['wdt']}{c.prop}> {obj} .")
    return ("\n".join(lines) + "\n").encode("utf-8")


def full_rdf(entities: list[Entity]) -> bytes:
    """What a SPARQL store of this knowledge holds: names, truthy ``wdt:`` values of items (the
    facts), and every statement as a node with ``ps:``, rank and ``pq:`` qualifiers. Unknown
    values are blank nodes."""
    lines = []
    blank = 0
    for e in entities:
        s = f"<{WD}{e.id}>"
        lines += _names(e)
        if e.is_property:
            continue                  # the dump source reads no facts about properties
        for c in truthy_claims(e):
            if c.value.snaktype == "value":
                lines.append(f"{s} <{P['wdt']}{c.prop}> {c.value.rdf} .")
            elif c.value.snaktype == "somevalue":
                blank += 1
                lines.append(f"{s} <{P['wdt']}{c.prop}> _:b{blank} .")
            else:
                lines.append(f"{s} <{P['rdf']}type> <{P['wdno']}{c.prop}> .")
        for i, c in enumerate(e.claims):
            node = f"<{P['wds']}{e.id}-{i}>"
            lines.append(f"{s} <{P['p']}{c.prop}> {node} .")
            rank = {"preferred": "PreferredRank", "normal": "NormalRank",
                    "deprecated": "DeprecatedRank"}[c.rank]
            lines.append(f"{node} <{P['wikibase']}rank> <{P['wikibase']}{rank}> .")
            if c.value.snaktype == "value":
                lines.append(f"{node} <{P['ps']}{c.prop}> {c.value.rdf} .")
            elif c.value.snaktype == "somevalue":
                blank += 1
                lines.append(f"{node} <{P['ps']}{c.prop}> _:b{blank} .")
            for qp, qv in c.qualifiers:
                if qv.snaktype == "value":
                    lines.append(f"{node} <{P['pq']}{qp}> {qv.rdf} .")
    return ("\n".join(lines) + "\n").encode("utf-8")


def write(folder: Path, entities: list[Entity], **kw) -> dict[str, Path]:
    """Every form of the knowledge, named as Wikidata names its dump files."""
    folder.mkdir(parents=True, exist_ok=True)
    data, nt = json_dump(entities, **kw), truthy_nt(entities)
    out = {"json": folder / "latest-all.json", "json.bz2": folder / "latest-all.json.bz2",
           "json.gz": folder / "latest-all.json.gz", "nt": folder / "latest-truthy.nt",
           "nt.bz2": folder / "latest-truthy.nt.bz2", "nt.gz": folder / "latest-truthy.nt.gz",
           "rdf": folder / "knowledge.nt"}
    out["json"].write_bytes(data)
    out["json.bz2"].write_bytes(bz2.compress(data))
    out["json.gz"].write_bytes(gzip.compress(data, mtime=0))
    out["nt"].write_bytes(nt)
    out["nt.bz2"].write_bytes(bz2.compress(nt))
    out["nt.gz"].write_bytes(gzip.compress(nt, mtime=0))
    out["rdf"].write_bytes(full_rdf(entities))
    return out


# --- the knowledge ---------------------------------------------------------------------------

def _prop(pid: str, en: str, desc: str = "", datatype: str = "wikibase-item",
          **labels) -> Entity:
    return Entity(pid, {"en": en, **labels}, descriptions={"en": desc} if desc else {},
                  claims=[Claim("P31", item("Q18616576"))], datatype=datatype)


def _city(qid: str, en: str, aliases: list[str] | None = None, **labels) -> Entity:
    return Entity(qid, {"en": en, **labels}, aliases={"en": aliases} if aliases else {},
                  claims=[Claim("P31", item("Q515"))])


def award(prize: str, year: str | None, rank: str = "normal") -> Claim:
    quals = [("P585", time(f"+{year}-00-00T00:00:00Z", 9, date(f"{year}-01-01T00:00:00Z")))] \
        if year else []
    return Claim("P166", item(prize), rank, quals)


def born(t: str, precision: int, rdf: str, rank: str = "normal",
         calendar: str = GREGORIAN) -> Claim:
    return Claim("P569", time(t, precision, date(rdf), calendar), rank)


ENTITIES: list[Entity] = [
    _prop("P36", "capital", "seat of government of a country", fr="capitale"),
    _prop("P37", "official language", "language designated as official"),
    _prop("P19", "place of birth", "most specific known birth location"),
    _prop("P569", "date of birth", "date on which the subject was born", "time"),
    _prop("P166", "award received"), _prop("P585", "point in time", datatype="time"),
    _prop("P31", "instance of"), _prop("P279", "subclass of"), _prop("P21", "sex or gender"),
    _prop("P1082", "population", datatype="quantity"),
    _prop("P1448", "official name", datatype="monolingualtext"),
    _prop("P856", "official website", datatype="url"),
    _prop("P214", "VIAF ID", datatype="external-id"),
    _prop("P6254", "subject lexeme", datatype="wikibase-lexeme"),
    Entity("Q142", {"en": "France", "fr": "France", "de": "Frankreich"},
           aliases={"en": ["French Republic", "FR"], "fr": ["République française"]},
           descriptions={"en": "country in Western Europe"},
           claims=[Claim("P36", item("Q90")),
                   Claim("P36", item("Q6602"), "deprecated"),     # Versailles, long ago
                   Claim("P37", item("Q150"), "preferred"), Claim("P37", item("Q12107")),
                   Claim("P1082", quantity("+67750000", dec("+67750000"))),
                   Claim("P1448", mono("République française", "fr")),
                   Claim("P1448", mono("French Republic", "en")),
                   Claim("P856", string("https://www.elysee.fr/", "url")),
                   Claim("P214", string("124439313", "external-id"))]),
    Entity("Q183", {"en": "Germany", "de": "Deutschland"},
           aliases={"en": ["Federal Republic of Germany", "FRG"]},
           claims=[Claim("P36", item("Q64")), Claim("P37", item("Q188")),
                   Claim("P1082", quantity("+83200000.50", dec("+83200000.50")))]),
    Entity("Q38", {"en": "Italy", "it": "Italia"},
           claims=[Claim("P36", item("Q220")), Claim("P37", item("Q652"))]),
    # an unknown official language beside a known one: only the known one is a fact
    Entity("Q29", {"en": "Spain"}, aliases={"en": ["Kingdom of Spain"]},
           claims=[Claim("P36", item("Q2807")), Claim("P37", SOMEVALUE),
                   Claim("P37", item("Q1321"))]),
    # a preferred "no value" hides the normal statement: Japan gets no official language
    Entity("Q17", {"en": "Japan", "ja": "日本"}, aliases={"en": ["Nippon"]},
           claims=[Claim("P36", item("Q1490"), "preferred"), Claim("P36", SOMEVALUE),
                   Claim("P37", NOVALUE, "preferred"), Claim("P37", item("Q5287"))]),
    Entity("Q39", {"en": "Switzerland"}, aliases={"en": ["Swiss Confederation"]},
           claims=[Claim("P36", item("Q70")), *[Claim("P37", item(q)) for q in
                                                ("Q150", "Q188", "Q652", "Q13199")]]),
    # the capital has no English label: dropped and counted
    Entity("Q854", {"en": "Sri Lanka"}, claims=[Claim("P36", item("Q41963"))]),
    Entity("Q41963", {"fr": "Sri Jayawardenepura Kotte"}),
    _city("Q90", "Paris", ["City of Light"], fr="Paris"), _city("Q64", "Berlin"),
    _city("Q220", "Rome", ["Eternal City"], it="Roma"), _city("Q2807", "Madrid"),
    _city("Q1490", "Tokyo", ["Tokyo Metropolis"]), _city("Q70", "Bern", ["Berne"]),
    _city("Q6602", "Versailles"), _city("Q3012", "Ulm"), _city("Q350", "Cambridge"),
    _city("Q1726", "Munich", ["München"], de="München"),
    Entity("Q150", {"en": "French"}, aliases={"en": ["French language"]}),
    Entity("Q188", {"en": "German"}, aliases={"en": ["German language"]}),
    Entity("Q652", {"en": "Italian"}), Entity("Q1321", {"en": "Spanish"},
                                              aliases={"en": ["Castilian"]}),
    Entity("Q5287", {"en": "Japanese"}), Entity("Q13199", {"en": "Romansh"}),
    Entity("Q12107", {"en": "Breton"}),
    # Nobel model: the prize classes
    Entity("Q7191", {"en": "Nobel Prize"}, claims=[Claim("P31", item("Q1407225"))]),
    Entity("Q38104", {"en": "Nobel Prize in Physics"}, claims=[Claim("P31", item("Q7191"))]),
    Entity("Q44585", {"en": "Nobel Prize in Chemistry"}, claims=[Claim("P31", item("Q7191"))]),
    Entity("Q35637", {"en": "Nobel Peace Prize"}, claims=[Claim("P279", item("Q7191"))]),
    Entity("Q28835", {"en": "Fields Medal"}, claims=[Claim("P31", item("Q1364556"))]),
    Entity("Q6581097", {"en": "male"}), Entity("Q6581072", {"en": "female"}),
    Entity("Q937", {"en": "Albert Einstein", "de": "Albert Einstein"},
           aliases={"en": ["Einstein"]},
           claims=[born("+1879-03-14T00:00:00Z", 11, "1879-03-14T00:00:00Z"),
                   Claim("P19", item("Q3012")), Claim("P21", item("Q6581097")),
                   award("Q38104", "1921")]),
    Entity("Q7186", {"en": "Marie Curie", "pl": "Maria Skłodowska-Curie"},
           aliases={"en": ["Maria Salomea Skłodowska"]},
           claims=[born("+1867-11-07T00:00:00Z", 11, "1867-11-07T00:00:00Z"),
                   born("+1867-11-06T00:00:00Z", 11, "1867-11-06T00:00:00Z", "deprecated"),
                   Claim("P21", item("Q6581072")), award("Q38104", "1903"),
                   award("Q44585", "1911")]),
    # two birth dates of equal rank: the earliest year is kept and the conflict counted
    Entity("Q46830", {"en": "Linus Pauling"},
           claims=[born("+1901-02-28T00:00:00Z", 11, "1901-02-28T00:00:00Z"),
                   born("+1902-00-00T00:00:00Z", 9, "1902-01-01T00:00:00Z"),
                   Claim("P21", item("Q6581097")), award("Q44585", "1954"),
                   award("Q35637", "1962")]),
    Entity("Q42970", {"en": "International Committee of the Red Cross"},
           claims=[award("Q35637", "1917"), award("Q35637", None)]),
    Entity("Q220913", {"en": "Terence Tao"},
           claims=[born("+1975-07-17T00:00:00Z", 11, "1975-07-17T00:00:00Z"),
                   award("Q28835", "2006")]),
    Entity("Q5000001", {"en": "Future Laureate"},
           claims=[born("+1980-00-00T00:00:00Z", 9, "1980-01-01T00:00:00Z"),
                   award("Q38104", "2031")]),
    # Julian calendar: 25 December 1642 (Julian) is 4 January 1643 (Gregorian); both
    # statements are the same RDF value
    Entity("Q935", {"en": "Isaac Newton"},
           claims=[born("+1642-12-25T00:00:00Z", 11, "1643-01-04T00:00:00Z",
                        calendar=JULIAN),
                   born("+1643-01-04T00:00:00Z", 11, "1643-01-04T00:00:00Z"),
                   Claim("P19", item("Q1726"), "deprecated")]),
    # BCE, year precision: 428 BCE is year -0427 in XSD 1.1
    Entity("Q859", {"en": "Plato", "el": "Πλάτων"},
           claims=[born("-0428-00-00T00:00:00Z", 9, "-0427-01-01T00:00:00Z")]),
    # month precision
    Entity("Q5000003", {"en": "May Person"},
           claims=[born("+1950-05-00T00:00:00Z", 10, "1950-05-01T00:00:00Z"),
                   Claim("P19", item("Q1726"))]),
    Entity("Q42", {"en": "Douglas Adams", "fr": "Douglas Adams"},
           aliases={"en": ["Douglas Noël Adams", "DNA"]},
           claims=[Claim("P19", item("Q350")), Claim("P19", item("Q64"), "deprecated"),
                   born("+1952-03-11T00:00:00Z", 11, "1952-03-11T00:00:00Z"),
                   Claim("P6254", item("L7"))]),
    # no English label: its facts are dropped and counted
    Entity("Q5000002", {"de": "Nur Deutsch"}, claims=[Claim("P19", item("Q64"))]),
]
