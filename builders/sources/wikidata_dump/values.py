"""Wikibase data values as RDF terms, the way Wikidata's RDF mapping writes a statement's simple
value (``wdt:``, ``ps:``, ``pq:``), then as a SPARQL store hands them back.

The JSON dump holds values in the Wikibase data model (``+1879-03-14T00:00:00Z`` with a
precision and a calendar, ``+12`` as a quantity...). A fact read from the dump must equal the fact
the SPARQL source reads from the same knowledge, so each value goes through the two steps a value
takes on its way to a SPARQL answer:

1. Wikibase's RDF mapping ("RDF Dump Format" on mediawiki.org): items and properties become
   ``wd:`` IRIs, URLs and Commons files IRIs, times ``xsd:dateTime`` cleaned as Wikibase's
   ``DateTimeValueCleaner`` does (``+`` dropped, zero month and day set to 1 below day precision,
   days clamped to the month, BCE years shifted to XSD 1.1, Julian dates of day precision converted
   to the Gregorian calendar), quantities their amount as ``xsd:decimal``, coordinates a WKT point.
2. The store's canonical form of the literal: ``"+12"^^xsd:decimal`` answers ``12``, and
   ``"1.50"`` answers ``1.5`` (what Oxigraph, and SPARQL stores generally, return for typed
   numbers). The truthy N-Triples dump goes through step 2 only.

Terms are plain tuples ``(kind, value, datatype, lang)`` so that millions of them stay cheap.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from urllib.parse import quote

from factprobe.builders.sources.iris import RDF, WD, XSD, is_wikidata_id

IRI, LITERAL = "iri", "literal"
XSD_DATETIME = XSD + "dateTime"
XSD_DECIMAL = XSD + "decimal"
LANG_STRING = RDF + "langString"
WKT = "http://www.opengis.net/ont/geosparql#wktLiteral"
MATHML = "http://www.w3.org/1998/Math/MathML"
MEDIA = "http://commons.wikimedia.org/wiki/Special:FilePath/"
COMMONS_DATA = "http://commons.wikimedia.org/data/main/"
GREGORIAN = WD + "Q1985727"
JULIAN = WD + "Q1985786"
EARTH = WD + "Q2"
PRECISION_MONTH, PRECISION_DAY, PRECISION_YEAR = 10, 11, 9

Term = tuple  # (kind, value, datatype or None, lang or None)


def entity_id(eid: str) -> str:
    """The id the SPARQL source gives an entity: ``Q42`` / ``P31`` bare, anything else (lexemes,
    forms, senses, entity schemas) as its full ``wd:`` IRI, as :func:`factprobe.builders.sources.iris.compact` does.

    >>> entity_id("Q42"), entity_id("L7")
    ('Q42', 'http://www.wikidata.org/entity/L7')
    """
    return eid if is_wikidata_id(eid) else WD + eid


def iri_id(iri: str) -> str:
    """Short id of an IRI object (``wd:Q42`` -> ``Q42``; other IRIs stay whole)."""
    if iri.startswith(WD) and is_wikidata_id(iri[len(WD):]):
        return iri[len(WD):]
    return iri


def rdf_value(datatype: str, value_type: str, value) -> Term | None:
    """The simple RDF value of a value snak, canonical as a store returns it; ``None`` for a
    value this mapping cannot read (a malformed data value is skipped like a non-value).

    >>> rdf_value("wikibase-item", "wikibase-entityid", {"id": "Q90"})
    ('iri', 'Q90', None, None)
    >>> rdf_value("time", "time", {"time": "+1921-00-00T00:00:00Z", "precision": 9,
    ...                            "calendarmodel": GREGORIAN})
    ('literal', '1921-01-01T00:00:00Z', 'http://www.w3.org/2001/XMLSchema#dateTime', None)
    >>> rdf_value("quantity", "quantity", {"amount": "+1.50", "unit": "1"})[1]
    '1.5'
    >>> rdf_value("monolingualtext", "monolingualtext", {"text": "Paris", "language": "FR"})
    ('literal', 'Paris', None, 'fr')
    """
    try:
        if value_type == "wikibase-entityid":
            eid = value.get("id") or _numeric_id(value)
            return (IRI, entity_id(eid), None, None) if eid else None
        if value_type == "string":
            if datatype in ("url",):
                return (IRI, value, None, None)
            if datatype == "commonsMedia":
                return (IRI, MEDIA + quote(value, safe="-_.~"), None, None)
            if datatype in ("geo-shape", "tabular-data"):
                return (IRI, COMMONS_DATA + quote(value.replace(" ", "_"), safe="-_.~/:"), None,
                        None)
            if datatype == "math":
                return (LITERAL, value, MATHML, None)
            return (LITERAL, value, None, None)
        if value_type == "time":
            return time_term(value["time"], int(value.get("precision", PRECISION_DAY)),
                             value.get("calendarmodel", GREGORIAN))
        if value_type == "quantity":
            return (LITERAL, canonical_decimal(value["amount"]), XSD_DECIMAL, None)
        if value_type == "monolingualtext":
            return (LITERAL, value["text"], None, str(value["language"]).lower())
        if value_type == "globecoordinate":
            point = f"Point({php_float(value['longitude'])} {php_float(value['latitude'])})"
            globe = value.get("globe") or EARTH
            return (LITERAL, point if globe == EARTH else f"<{globe}> {point}", WKT, None)
    except (KeyError, TypeError, AttributeError, ValueError):
        return None
    return None


def _numeric_id(value: dict) -> str | None:
    # Old dumps give only entity-type and numeric-id.
    prefix = {"item": "Q", "property": "P"}.get(value.get("entity-type"))
    num = value.get("numeric-id")
    return f"{prefix}{num}" if prefix and num is not None else None


def literal_term(value: str, datatype: str | None, lang: str | None) -> Term:
    """A literal read from N-Triples, in the canonical form a store answers with."""
    if datatype == XSD_DECIMAL:
        return (LITERAL, canonical_decimal(value), datatype, None)
    if datatype == XSD + "string":
        datatype = None
    if datatype == LANG_STRING:
        datatype = None
    return (LITERAL, value, datatype, lang.lower() if lang else None)


def canonical_decimal(text: str) -> str:
    """The canonical lexical form of an ``xsd:decimal`` (what a SPARQL store answers).

    >>> [canonical_decimal(x) for x in ("+12", "1.50", "-0.0", "+0.250", "-3")]
    ['12', '1.5', '0', '0.25', '-3']
    """
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        return text
    if not d.is_finite():
        return text
    if d == d.to_integral_value():
        return str(int(d))
    s = format(d.normalize(), "f")
    return s


def php_float(x) -> str:
    """A float as PHP prints it (14 significant digits), which is how Wikibase writes the
    numbers of a WKT point.

    >>> php_float(2.3522222222222223), php_float(48.8567), php_float(48), php_float(1e-05)
    ('2.3522222222222', '48.8567', '48', '1.0E-5')
    """
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return "NAN" if math.isnan(x) else ("-INF" if x < 0 else "INF")
    text = "%.14G" % x
    if "E" not in text:
        return text
    mantissa, exp = text.split("E")
    if "." not in mantissa:
        mantissa += ".0"
    sign = "-" if exp.startswith("-") else "+"
    return f"{mantissa}E{sign}{int(exp.lstrip('+-'))}"


# --- time values: Wikibase's DateTimeValueCleaner, XSD 1.1 (year 0 is 1 BCE) ----------------

_LEADING_INT = re.compile(r"^\s*[+-]?\d+")


def _php_int(text: str) -> int:
    m = _LEADING_INT.match(text)
    return int(m.group()) if m else 0


def time_term(time: str, precision: int, calendar: str) -> Term:
    """The RDF literal of a Wikibase time value; a value the cleaner refuses (year 0, unknown
    calendar at day precision) stays a plain string, as Wikibase writes it.

    >>> time_term("+00000002014-01-05T12:34:56Z", 14, JULIAN)[1]
    '2014-01-18T12:34:56Z'
    >>> time_term("-00000000200-00-00T00:00:00Z", 14, GREGORIAN)[1]
    '-0199-01-01T00:00:00Z'
    >>> time_term("+0000-01-01T00:00:00Z", 11, GREGORIAN)
    ('literal', '+0000-01-01T00:00:00Z', None, None)
    """
    value = standard_datetime(time, precision, calendar)
    if value is None:
        return (LITERAL, time, None, None)
    return (LITERAL, value, XSD_DATETIME, None)


def standard_datetime(time: str, precision: int, calendar: str) -> str | None:
    """``xsd:dateTime`` lexical form of a Wikibase time, or ``None`` when it has none.

    >>> standard_datetime("-0100-07-12T00:00:00Z", 11, JULIAN)
    '-0099-07-10T00:00:00Z'
    >>> standard_datetime("+00000000204-02-31T00:00:00Z", 14, GREGORIAN)
    '0204-02-29T00:00:00Z'
    >>> standard_datetime("-4713-01-02T00:00:00Z", 14, JULIAN)
    '-4713-11-25T00:00:00Z'
    >>> standard_datetime("+00000002014-01-05T12:34:56Z", 14, WD + "Q42") is None
    True
    """
    parsed = _parse_time(time)
    if parsed is None:
        return None
    if calendar == JULIAN and precision >= PRECISION_DAY:
        return _julian_value(*parsed) or _gregorian_value(*parsed, precision)
    if calendar == GREGORIAN or precision < PRECISION_DAY:
        return _gregorian_value(*parsed, precision)
    return None


def _parse_time(time: str):
    date, sep, clock = time.partition("T")
    if not sep or not date:
        return None
    minus = date[0] == "-"
    parts = date[1:].split("-", 2)
    if len(parts) != 3:
        return None
    y, m, d = parts[0].lstrip("0"), _php_int(parts[1]), _php_int(parts[2])
    m = 1 if m <= 0 else min(m, 12)
    d = max(d, 1)
    if y == "" or not y.isdigit():
        return None  # year 0 has no xsd:dateTime in Wikibase's mapping
    return minus, int(y), m, d, clock


def _days_in_month(year: int, month: int) -> int:
    # ``year`` counts BCE years negatively without a year 0 (as PHP's calendar functions do).
    astro = year + 1 if year < 0 else year
    leap = astro % 4 == 0 and (astro % 100 != 0 or astro % 400 == 0)
    if month == 2:
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _gregorian_value(minus: bool, y: int, m: int, d: int, clock: str, precision: int) -> str:
    if precision <= PRECISION_YEAR:
        m = d = 1
    elif precision == PRECISION_MONTH:
        d = 1
    if not (d <= 28 or (m != 2 and d <= 30)):
        safe_year = -4713 if minus and y >= 4714 else (-y if minus else y)
        d = min(d, _days_in_month(safe_year, m))
    sign = "-" if minus else ""
    if precision >= PRECISION_YEAR and minus:
        y -= 1            # XSD 1.1: year 0 is 1 BCE
        if y == 0:
            sign = ""
    return f"{sign}{y:04d}-{m:02d}-{d:02d}T{clock}"


def _julian_value(minus: bool, y: int, m: int, d: int, clock: str) -> str | None:
    year = -y if minus else y
    if year < -4713 or year > 1465072:
        return None
    jdn = _julian_to_jdn(year, m, d)
    if jdn <= 0:
        return None
    gy, gm, gd = _jdn_to_gregorian(jdn)
    if gy < 0:
        gy += 1           # XSD 1.1
    return f"{'-' if gy < 0 else ''}{abs(gy):04d}-{gm:02d}-{gd:02d}T{clock}"


def _julian_to_jdn(year: int, month: int, day: int) -> int:
    """Julian day number of a Julian-calendar date (BCE years negative, no year 0)."""
    astro = year + 1 if year < 0 else year
    a = (14 - month) // 12
    yy = astro + 4800 - a
    mm = month + 12 * a - 3
    return day + (153 * mm + 2) // 5 + 365 * yy + yy // 4 - 32083


def _jdn_to_gregorian(jdn: int) -> tuple[int, int, int]:
    """Gregorian (year, month, day) of a Julian day number, BCE years negative, no year 0."""
    a = jdn + 32044
    b = (4 * a + 3) // 146097
    c = a - 146097 * b // 4
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = 100 * b + d - 4800 + m // 10
    return (year - 1 if year <= 0 else year), month, day
