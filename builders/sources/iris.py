"""IRIs in and out: resolving what a user types (``P36``, ``ex:capital``, a full IRI) and
compacting what a graph returns (``Q90``, ``ex:paris``) into stable ids.

Every IRI that goes into a query passes :func:`checked_iri` first: queries are built by string
formatting, so an unchecked ``>`` or space would let a relation name rewrite the query.
"""
from __future__ import annotations

import re

from factprobe.core.errors import UserError

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PS = "http://www.wikidata.org/prop/statement/"
PQ = "http://www.wikidata.org/prop/qualifier/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
SCHEMA = "http://schema.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
OWL = "http://www.w3.org/2002/07/owl#"

WELL_KNOWN = {"wd": WD, "wdt": WDT, "p": P, "ps": PS, "pq": PQ, "rdf": RDF, "rdfs": RDFS,
              "skos": SKOS, "schema": SCHEMA, "xsd": XSD, "owl": OWL}

_WIKIDATA_ID = re.compile(r"^[PQ][1-9][0-9]*$")
_BAD_IRI_CHARS = re.compile(r'[\s<>"{}|\\^`]')
_PREFIXED = re.compile(r"^([A-Za-z][\w.-]*)?:([\w.-]*)$")
_LOCAL_OK = re.compile(r"^[A-Za-z0-9_][\w-]*$")


def checked_iri(iri: str) -> str:
    """Return ``iri`` if it is an absolute IRI safe to put between ``<>`` in a query.

    >>> checked_iri("http://www.wikidata.org/prop/direct/P36")
    'http://www.wikidata.org/prop/direct/P36'
    >>> checked_iri("http://x.org/a> } DROP ALL { <b")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: 'http://x.org/a> } DROP ALL { <b' is not a usable IRI (it has a space, quote or bracket)
    """
    if _BAD_IRI_CHARS.search(iri) or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", iri):
        raise UserError(f"{iri!r} is not a usable IRI (it has a space, quote or bracket)"
                        if _BAD_IRI_CHARS.search(iri) else
                        f"{iri!r} is not an absolute IRI; write it in full or as prefix:name")
    return iri


def is_wikidata_id(name: str) -> bool:
    return bool(_WIKIDATA_ID.match(name))


def resolve(name: str, prefixes: dict[str, str], *, bare_ns: str = WDT) -> str:
    """Full IRI for a user-typed term.

    A bare Wikidata id goes into ``bare_ns`` for properties (``wdt:``) and ``wd:`` for items.

    >>> resolve("P36", {})
    'http://www.wikidata.org/prop/direct/P36'
    >>> resolve("Q7191", {})
    'http://www.wikidata.org/entity/Q7191'
    >>> resolve("ex:capital", {"ex": "http://example.org/"})
    'http://example.org/capital'
    >>> resolve("<http://example.org/capital>", {})
    'http://example.org/capital'
    """
    name = name.strip()
    if name.startswith("<") and name.endswith(">"):
        return checked_iri(name[1:-1])
    if is_wikidata_id(name):
        return checked_iri((bare_ns if name[0] == "P" else WD) + name)
    m = _PREFIXED.match(name)
    if m and not name.startswith(("http:", "https:", "urn:")):
        prefix = m.group(1) or ""
        ns = prefixes.get(prefix, WELL_KNOWN.get(prefix))
        if ns is None:
            known = ", ".join(sorted(set(prefixes) | set(WELL_KNOWN)))
            raise UserError(f"unknown prefix {prefix!r} in {name!r}; known prefixes: {known}. "
                            f"Declare it with --prefix {prefix}=IRI or write the full IRI.")
        return checked_iri(ns + m.group(2))
    return checked_iri(name)


def compact(iri: str, prefixes: dict[str, str]) -> str:
    """Stable short id for an IRI: bare Wikidata ids, else ``prefix:local``, else the IRI.

    >>> compact("http://www.wikidata.org/entity/Q90", {})
    'Q90'
    >>> compact("http://example.org/kg/paris", {"ex": "http://example.org/kg/"})
    'ex:paris'
    >>> compact("http://other.org/x/y", {"ex": "http://example.org/kg/"})
    'http://other.org/x/y'
    """
    for ns in (WD, WDT):
        if iri.startswith(ns) and is_wikidata_id(iri[len(ns):]):
            return iri[len(ns):]
    best = None
    for prefix, ns in prefixes.items():
        if ns and iri.startswith(ns) and _LOCAL_OK.match(iri[len(ns):]):
            if best is None or len(ns) > len(best[1]) or (len(ns) == len(best[1]) and prefix < best[0]):
                best = (prefix, ns)
    if best is not None:
        return f"{best[0]}:{iri[len(best[1]):]}"
    return iri


def parse_prefix_args(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values or []:
        name, sep, iri = value.partition("=")
        if not sep or not name:
            raise UserError(f"--prefix {value!r} should look like ex=http://example.org/")
        out[name] = checked_iri(iri)
    return out
