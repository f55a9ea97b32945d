"""RDF files that would take the machine, refused before the RDF engine reads them.

pyoxigraph expands XML entities in RDF/XML without limit (a file of a few hundred bytes whose
entities nest ten deep expands to gigabytes: the "billion laughs"), and its RDF/XML parser
slows down with the cube of the element nesting (20,000 levels: 20 s; 200,000: hours). Other
syntaxes it reads have no expansion (Turtle, N-Triples, N-Quads, TriG, N3), or bound their own
nesting (JSON-LD: a 65,536-deep stack, remote contexts never fetched).

So an RDF/XML file is first read once by expat, streaming and without expanding anything:

- entities that refer to other entities, parameter entities and external entities (``SYSTEM``
  / ``PUBLIC``) are refused; plain ``<!ENTITY owl "http://...#">`` abbreviations, which
  ontology editors write, are kept;
- the bytes the remaining entities would add are counted and capped (:data:`MAX_EXPANSION`);
- elements nested deeper than :data:`MAX_DEPTH` are refused.

- text longer than :data:`MAX_LITERAL` in one element or attribute is refused: pyoxigraph's
  other parsers refuse a token past the same 16 MB, but its RDF/XML parser takes a 300 MB
  literal into 1.2 GB.
"""
from __future__ import annotations

import re
from pathlib import Path
from xml.parsers import expat

from factprobe.core.errors import UserError

MB = 1 << 20
MAX_DEPTH = 1000            # RDF/XML written by tools nests a few levels per resource
MAX_EXPANSION = 64 * MB     # bytes entity references may add beyond the file's own
MAX_LITERAL = 16 * MB       # bytes of one literal (pyoxigraph's token limit in Turtle)
_READ = 1 << 20
_REFERENCE = re.compile(rb"&([A-Za-z_:][\w.:-]*);")


_LONG = "a label or value that long is not a fact: remove it from the file"
_EXPAND = "expand the entities with an XML tool, or convert the file to Turtle or N-Triples"


class _Refused(Exception):
    def __init__(self, why: str, todo: str = _EXPAND):
        super().__init__(why)
        self.todo = todo


def check_rdf_xml(path: Path) -> None:
    """Raise :class:`UserError` when the RDF/XML file ``path`` declares entities that expand
    without bound, or nests elements deeper than :data:`MAX_DEPTH`."""
    entities: dict[str, int] = {}
    depth = text = 0

    def declared(name, is_parameter, value, base, system_id, public_id, notation):
        if is_parameter:
            raise _Refused(f"declares a parameter entity (%{name})")
        if value is None or system_id or public_id or notation:
            raise _Refused(f"declares an external entity ({name})")
        if "&" in value or "%" in value or "<" in value:
            raise _Refused(f"declares an entity ({name}) that refers to other entities or "
                           f"holds markup")
        entities[name] = len(value.encode("utf-8"))

    def opened(name, attrs):
        nonlocal depth, text
        depth, text = depth + 1, 0
        if depth > MAX_DEPTH:
            raise _Refused(f"nests elements more than {MAX_DEPTH} deep",
                           "flatten it (or convert it to Turtle or N-Triples)")
        if any(len(v) > MAX_LITERAL for v in attrs.values()):
            raise _Refused(f"has an attribute value longer than {MAX_LITERAL // MB} MB", _LONG)

    def closed(name):
        nonlocal depth, text
        depth, text = depth - 1, 0

    def characters(data):
        nonlocal text
        text += len(data)
        if text > MAX_LITERAL:
            raise _Refused(f"has a text (a literal) longer than {MAX_LITERAL // MB} MB", _LONG)

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = declared
    parser.StartElementHandler = opened
    parser.EndElementHandler = closed
    parser.CharacterDataHandler = characters
    # With a default handler, expat hands entity references in text over instead of expanding
    # them: this pass stays as small as the file whatever the entities say.
    parser.DefaultHandler = lambda data: None
    added, carry = 0, b""
    try:
        with open(path, "rb") as fh:
            while True:
                block = fh.read(_READ)
                parser.Parse(block, not block)  # first: a block may declare the entities
                if entities:
                    # references split across two blocks are counted once, in the second
                    text = carry + block
                    cut = text.rfind(b"&") if block else -1
                    if cut >= 0 and b";" not in text[cut:] and len(text) - cut < 256:
                        text, carry = text[:cut], text[cut:]
                    else:
                        carry = b""
                    for m in _REFERENCE.finditer(text):
                        added += entities.get(m.group(1).decode("ascii", "replace"), 0)
                    if added > MAX_EXPANSION:
                        raise _Refused(f"has entity references that expand to more than "
                                       f"{MAX_EXPANSION // MB} MB")
                if not block:
                    break
    except _Refused as exc:
        raise UserError(f"{path}: refused: the RDF/XML {exc}, which could exhaust memory or "
                        f"time; {exc.todo}") from None
    except expat.ExpatError as exc:
        raise UserError(f"{path}: not well-formed XML ({expat.ErrorString(exc.code)}, line "
                        f"{exc.lineno}); fix the file") from None
