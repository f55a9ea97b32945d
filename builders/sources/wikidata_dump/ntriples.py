"""Lines of Wikidata's truthy N-Triples dump -> truthy statements and names.

The truthy dump already holds only best-rank values (``wdt:``), labels (``rdfs:label``,
``skos:prefLabel``, ``schema:name``), aliases (``skos:altLabel``) and descriptions, one triple a
line, billions of lines. Most lines are of no interest, so each is tested on its raw bytes
first: its predicate (the text between the subject's ``> <`` and the next ``> ``) must be one of
the wanted ones, and a name must be in the wanted language. Only the lines that pass are parsed,
by pyoxigraph's N-Triples parser (escapes, IRIs and literals exactly as the format says), all
of a batch in one call.
"""
from __future__ import annotations

import pyoxigraph as ox

from factprobe.builders.sources.iris import RDFS, SCHEMA, SKOS, WD, WDT, is_wikidata_id
from factprobe.builders.sources.wikidata_dump.rows import DumpLineError, PieceStats, Rows
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.values import IRI, iri_id, literal_term

GENID = "http://www.wikidata.org/.well-known/genid/"   # "unknown value" in current dumps
# The dump's header names its date: wikibase:Dump schema:dateModified "..."^^xsd:dateTime.
DUMP_NODE = "http://wikiba.se/ontology#Dump"
DATE_MODIFIED = SCHEMA + "dateModified"
_HEADER = f"<{DUMP_NODE}> <{DATE_MODIFIED}> ".encode()
_NAME_KINDS = {RDFS + "label": "label", SKOS + "prefLabel": "pref", SKOS + "altLabel": "alt"}
_DESCRIPTION_KINDS = {SCHEMA + "description": "description", RDFS + "comment": "comment",
                      SKOS + "definition": "definition"}


class TriplesReader:
    def __init__(self, spec: ExtractSpec):
        self.spec = spec
        self.lang_str = spec.lang.lower()
        self.lang = self.lang_str.encode()
        self.all_relations = spec.relations is None
        self.wanted = {(WDT + pid).encode(): pid for pid in (spec.relations or ())}
        self.names = {k.encode(): v for k, v in {**_NAME_KINDS, **_DESCRIPTION_KINDS}.items()}
        self.wdt = WDT.encode()

    def read(self, batch: bytes, rows: Rows, stats: PieceStats) -> None:
        lines = batch.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        stats.lines += len(lines)
        picked: list[bytes] = []
        numbers: list[int] = []
        wanted, names, lang, wdt = self.wanted, self.names, self.lang, self.wdt
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line[0] == 35:          # '#': a comment
                continue
            start = line.find(b"> <")
            end = line.find(b"> ", start + 3) if start > 0 else -1
            if end < 0 or line[0] != 60 or not line.endswith(b"."):
                # Not in the dump's usual shape (tabs, a blank subject, a damaged line): the
                # parser decides, and reports it if it is no triple.
                picked.append(line)
                numbers.append(number)
                continue
            pred = line[start + 3:end]
            if line.startswith(_HEADER):
                picked.append(line)
                numbers.append(number)
            elif pred in wanted or (self.all_relations and pred.startswith(wdt)):
                picked.append(line)
                numbers.append(number)
            elif pred in names:
                at = line.rfind(b'"@')
                if at > 0 and line[at + 2:].rstrip(b" .\t").lower() == lang:
                    picked.append(line)
                    numbers.append(number)
        if picked:
            self._parse(picked, numbers, rows, stats)

    def _bad(self, number: int, reason: str, stats: PieceStats) -> None:
        if not self.spec.skip_bad:
            raise DumpLineError(number, reason)
        stats.bad_lines += 1

    def _parse(self, picked: list[bytes], numbers: list[int], rows: Rows,
               stats: PieceStats) -> None:
        try:
            triples = list(ox.parse(input=b"\n".join(picked) + b"\n",
                                    format=ox.RdfFormat.N_TRIPLES))
        except SyntaxError:
            # Find the bad line(s) one by one; rare, so the slow way is fine.
            triples = []
            for line, number in zip(picked, numbers):
                try:
                    triples.extend(ox.parse(input=line + b"\n", format=ox.RdfFormat.N_TRIPLES))
                except SyntaxError as exc:
                    self._bad(number, f"not valid N-Triples ({str(exc).splitlines()[0]})",
                              stats)
        st, nm = rows.statements, rows.names
        for t in triples:
            subj = t.subject
            if not isinstance(subj, ox.NamedNode):
                continue
            pred = t.predicate.value
            if subj.value == DUMP_NODE:
                if pred == DATE_MODIFIED and t.object.value > stats.modified:
                    stats.modified = t.object.value
                continue
            if pred.startswith(WDT):
                if not self.all_relations and pred.encode() not in self.wanted:
                    continue
            elif pred not in _NAME_KINDS and pred not in _DESCRIPTION_KINDS:
                continue
            elif not isinstance(t.object, ox.Literal) or (t.object.language or "") != self.lang_str:
                continue
            sid = iri_id(subj.value)
            is_property = subj.value.startswith(WD) and sid[:1] == "P" and is_wikidata_id(sid)
            obj = t.object
            if pred.startswith(WDT):
                if is_property:
                    continue                        # property entities are no subjects
                if isinstance(obj, ox.NamedNode):
                    if obj.value.startswith(GENID):
                        continue                    # "unknown value" is no fact
                    term = (IRI, iri_id(obj.value), None, None)
                elif isinstance(obj, ox.Literal):
                    term = literal_term(obj.value, obj.datatype.value, obj.language)
                else:
                    continue                        # a blank node: "unknown value"
                st["relation_id"].append(pred[len(WDT):])
                st["subject_id"].append(sid)
                st["object_id"].append(term[1])
                st["object_kind"].append(term[0])
                st["datatype"].append(term[2])
                st["lang"].append(term[3])
                continue
            kind = _NAME_KINDS.get(pred) or (_DESCRIPTION_KINDS.get(pred) if is_property else None)
            if kind and isinstance(obj, ox.Literal) and obj.value:
                nm["entity_id"].append(sid)
                nm["kind"].append(kind)
                nm["value"].append(obj.value)
