"""Entities of Wikidata's JSON dump -> truthy statements, qualified statements and names.

The dump is one JSON array with one entity per line (each line but the last ends in a comma).
Each line is decoded by msgspec into typed structs built for what is wanted: the label, aliases
and description in one language, and only the claims of the wanted properties. msgspec skips
every other language and claim inside its C parser without building a Python object for it,
which is what makes parsing cheap next to decompression (about 9 us for a 3.6 KB line, all of
this reader's work included, against some 75 us of bzip2 decompression). Testing the raw line
for the wanted property ids first, and decoding lines without one for their names only, cost
1.7x as much (benchmarks/bench_dump.py measures both): the typed skip is that test, in C.

Truthy statements follow Wikidata's definition: per subject and property, the statements of
the best rank among the non-deprecated ones (preferred if any, else normal), and of those the
ones with a value (``somevalue`` and ``novalue`` are no facts). Property entities are no
subjects, but their names are read (properties are objects of some statements, and the
relation table's label and description come from them).
"""
from __future__ import annotations

from typing import Any

import msgspec

from factprobe.builders.sources.wikidata_dump.rows import DumpLineError, PieceStats, Rows
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.values import entity_id, rdf_value


# gc=False: decoded entities hold no cycles, and untracked structs spare the collector a walk
# over every statement of a dense batch.
class _Term(msgspec.Struct, gc=False):
    value: str = ""


class _DataValue(msgspec.Struct, gc=False):
    type: str = ""
    value: Any = None


class _Snak(msgspec.Struct, gc=False):
    snaktype: str = ""
    datatype: str = ""
    datavalue: _DataValue | None = None


def _one_lang(name: str, lang: str, typ, default):
    # JSON keys like "pt-br" are no Python names: the field is f0, renamed to the key.
    return msgspec.defstruct(name, [("f0", typ, default)], rename={"f0": lang}, gc=False)


def _keyed(name: str, keys: list[str], typ) -> type:
    return msgspec.defstruct(name, [(f"f{i}", typ, []) for i in range(len(keys))],
                             rename={f"f{i}": k for i, k in enumerate(keys)}, gc=False)


class EntityReader:
    """Decodes entity lines for one :class:`ExtractSpec` and appends what they hold."""

    def __init__(self, spec: ExtractSpec):
        self.spec = spec
        lang = spec.lang
        labels = _one_lang("Labels", lang, _Term | None, None)
        aliases = _one_lang("Aliases", lang, list[_Term], [])
        self.qualifiers = dict(spec.qualified)
        statement = msgspec.defstruct("Statement", [
            ("mainsnak", _Snak), ("rank", str, "normal"), ("id", str, "")], gc=False)
        by_prop: dict[str, type] = {}
        for pid, quals in spec.qualified:
            qual_struct = _keyed(f"Qualifiers{pid}", list(quals), list[_Snak])
            by_prop[pid] = msgspec.defstruct(f"QualifiedStatement{pid}", [
                ("mainsnak", _Snak), ("rank", str, "normal"), ("id", str, ""),
                ("qualifiers", qual_struct | list, msgspec.field(default_factory=list))],
                gc=False)
        self.truthy = None if spec.relations is None else set(spec.relations)
        if spec.relations is None:
            if by_prop:
                raise ValueError("qualified statements need named relations")
            claims = dict[str, list[statement]]
            self.claim_keys = None
        else:
            keys = list(dict.fromkeys([*spec.relations, *by_prop]))
            self.claim_keys = keys
            fields = [(f"f{i}", list[by_prop.get(k, statement)], []) for i, k in enumerate(keys)]
            claims = msgspec.defstruct("Claims", fields,
                                       rename={f"f{i}": k for i, k in enumerate(keys)}, gc=False)
        entity = msgspec.defstruct("Entity", [
            ("id", str), ("type", str, ""),
            ("labels", labels | list, msgspec.field(default_factory=list)),
            ("aliases", aliases | list, msgspec.field(default_factory=list)),
            ("descriptions", labels | list, msgspec.field(default_factory=list)),
            ("claims", claims | list, msgspec.field(default_factory=list)),
            ("modified", str, "")], gc=False)
        self.decoder = msgspec.json.Decoder(entity)

    def read(self, batch: bytes, rows: Rows, stats: PieceStats) -> None:
        """Read the whole lines of ``batch``; line numbers in errors count from 1 at its start."""
        lines = batch.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()        # the newline ending the last line starts no line
        stats.lines += len(lines)
        self._lines(lines, stats, rows, _appenders(rows.statements, _FACT_COLUMNS),
                    _appenders(rows.names, ("entity_id", "kind", "value")))

    def _lines(self, lines: list, stats: PieceStats, rows: Rows, facts: tuple, names: tuple
               ) -> None:
        decode = self.decoder.decode
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line == b"[":
                continue
            if line == b"]":
                stats.closed = True
                continue
            stats.closed = False
            if line.endswith(b","):
                line = line[:-1]
            if line.startswith(b"[{"):
                line = line[1:]
            if line.endswith(b"}]"):
                line, stats.closed = line[:-1], True
            try:
                ent = decode(line)
            except msgspec.ValidationError as exc:
                reason = str(exc)
                reason = ("an entity without 'id'" if "missing required field `id`" in reason
                          else f"not a Wikidata entity ({reason})")
                self._bad(number, reason, stats)
                continue
            except msgspec.DecodeError as exc:
                self._bad(number, f"not JSON ({exc})", stats)
                continue
            except RecursionError:  # msgspec recurses even through the fields it skips
                self._bad(number, "JSON nested too deeply to be a Wikidata entity", stats)
                continue
            if not ent.id:
                self._bad(number, "an entity without 'id'", stats)
                continue
            stats.entities += 1
            if ent.modified > stats.modified:
                stats.modified = ent.modified
            self._entity(ent, rows, facts, names)

    def _bad(self, number: int, reason: str, stats: PieceStats) -> None:
        if not self.spec.skip_bad:
            raise DumpLineError(number, reason)
        stats.bad_lines += 1

    def _entity(self, ent, rows: Rows, facts: tuple, names: tuple) -> None:
        eid = entity_id(ent.id)
        name_id, name_kind, name_value = names
        label = ent.labels.f0 if not isinstance(ent.labels, list) else None
        if label is not None and label.value:
            name_id(eid), name_kind("label"), name_value(label.value)
        if not isinstance(ent.aliases, list):
            for alias in ent.aliases.f0:
                if alias.value:
                    name_id(eid), name_kind("alt"), name_value(alias.value)
        is_property = ent.type == "property"
        if is_property and not isinstance(ent.descriptions, list):
            desc = ent.descriptions.f0
            if desc is not None and desc.value:
                name_id(eid), name_kind("description"), name_value(desc.value)
        if is_property or isinstance(ent.claims, list):
            return
        if self.claim_keys is None:
            claims = ent.claims.items()
        else:
            # astuple reads the struct's fields in C, in the order of claim_keys.
            claims = zip(self.claim_keys, msgspec.structs.astuple(ent.claims))
        for pid, statements in claims:
            if not statements:
                continue
            if self.truthy is None or pid in self.truthy:
                _truthy(eid, pid, statements, facts)
            if pid in self.qualifiers:
                self._qualified(eid, pid, statements, rows.qualified)

    def _qualified(self, eid: str, pid: str, statements, out: dict) -> None:
        # Every rank: a statement node (p:/ps:) exists for deprecated statements too.
        wanted = self.qualifiers[pid]
        for s in statements:
            snak = s.mainsnak
            if snak.snaktype != "value" or snak.datavalue is None:
                continue
            term = rdf_value(snak.datatype, snak.datavalue.type, snak.datavalue.value)
            if term is None:
                continue
            quals = []
            if not isinstance(s.qualifiers, list):
                for i, qpid in enumerate(wanted):
                    for q in getattr(s.qualifiers, f"f{i}"):
                        qterm = (rdf_value(q.datatype, q.datavalue.type, q.datavalue.value)
                                 if q.snaktype == "value" and q.datavalue is not None else None)
                        # An unknown qualifier value is still a binding for the statement.
                        quals.append((qpid, qterm[1] if qterm else None,
                                      qterm[0] if qterm else "somevalue",
                                      qterm[2] if qterm else None)
                                     if q.snaktype != "novalue" else None)
            quals = [q for q in quals if q is not None] or [(None, None, None, None)]
            for qid, qvalue, qkind, qtype in quals:
                out["relation_id"].append(pid)
                out["subject_id"].append(eid)
                out["statement_id"].append(s.id)
                out["rank"].append(s.rank)
                out["object_id"].append(term[1])
                out["object_kind"].append(term[0])
                out["datatype"].append(term[2])
                out["lang"].append(term[3])
                out["qualifier_id"].append(qid)
                out["qualifier_value"].append(qvalue)
                out["qualifier_kind"].append(qkind)
                out["qualifier_datatype"].append(qtype)


_FACT_COLUMNS = ("relation_id", "subject_id", "object_kind", "object_id", "datatype", "lang")


def _appenders(columns: dict, names: tuple[str, ...]) -> tuple:
    # Bound appends, looked up once a batch rather than once a value: on dense lines the
    # per-fact Python work costs more than msgspec's parse of the line.
    return tuple(columns[n].append for n in names)


def _truthy(eid: str, pid: str, statements, facts: tuple) -> None:
    # Best rank over every non-deprecated statement, whatever its snak type: a preferred
    # "unknown value" hides the normal values, as in Wikidata's own truthy triples.
    best = "normal"
    for s in statements:
        if s.rank == "preferred":
            best = "preferred"
            break
    rel, subj, kind, obj, dtype, lang = facts
    for s in statements:
        snak = s.mainsnak
        dv = snak.datavalue
        if s.rank != best or snak.snaktype != "value" or dv is None:
            continue
        term = rdf_value(snak.datatype, dv.type, dv.value)
        if term is not None:
            rel(pid), subj(eid), kind(term[0]), obj(term[1]), dtype(term[2]), lang(term[3])
