"""``build refresh`` of a dataset whose subjects are labels, not ids (ParaRel's and
EntityQuestions' releases have none): each (relation, subject label) is resolved to the one
entity of the snapshot that holds the relation and bears that name, then refreshed by id.

A label resolves when exactly one subject of the relation has it as its preferred label
(``rdfs:label`` / ``skos:prefLabel`` in the dataset's language), or, when none has, exactly one
has it as an alias (``skos:altLabel``). Several at the same level is *ambiguous*: never a guess,
counted and listed with the candidates. None is *unresolved*; a label that is no name at all
(empty, over :data:`MAX_LABEL` characters, a lone surrogate) is *malformed* and never sent. The
relation narrows the candidates the way the fact itself does: a label is looked up among the
subjects the snapshot has the relation for, so a SPARQL endpoint and a dump of the same
snapshot resolve every label alike.

A SPARQL source is asked with the labels as escaped literals (:func:`sparql_literal`: a quote,
backslash or line break in a label is data, never query text), :data:`LABEL_BATCH` at a time; a
dump's facts are assembled for the relations and the rows whose subject bears a wanted name kept.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from factprobe.core.errors import UserError
from factprobe.core.provenance import facts_root
from factprobe.builders.sources.graph import PREFIXES, checked_lang
from factprobe.builders.sources.iris import RDFS, SKOS, WDT, checked_iri, compact, resolve

# the imports whose release names entities by label only (ParaRel, EntityQuestions, the
# MONITOR authors' FKTC files): their ids are labels
LABEL_ID_FORMATS = ("pararel", "entityquestions", "fktc-import")
LABEL_BATCH = 100      # labels per query: a few kB of query, well under any request limit
MAX_LABEL = 400        # Wikidata's labels stop at 250 characters; a longer one is no name
LISTED = 100           # unresolved / ambiguous labels named in the manifest (the table has all)
STATUSES = ("resolved", "unresolved", "ambiguous", "malformed")
RESOLVED_SCHEMA = pa.schema([
    ("relation_id", pa.string()), ("subject", pa.string()), ("status", pa.string()),
    ("subject_id", pa.string()), ("matched", pa.string()), ("candidates", pa.list_(pa.string())),
])
_PREFERRED = (RDFS + "label", SKOS + "prefLabel")


def labels_are_ids(manifest: dict) -> bool:
    """Whether the dataset's facts come from an import whose ids are its labels.

    >>> labels_are_ids({"provenance": {"source": {"type": "pararel"}}})
    True
    >>> labels_are_ids({"provenance": {"source": {"type": "sparql:http://x/q"}}})
    False
    """
    prov = manifest.get("provenance") if isinstance(manifest.get("provenance"), dict) else {}
    root = facts_root(prov) or dict(manifest.get("source") or {})
    return str(root.get("type") or "").split(":", 1)[0] in LABEL_ID_FORMATS


def label_problem(label: object) -> str | None:
    """Why ``label`` cannot be looked up, or None.

    >>> label_problem("Paul Mounsey") is None, label_problem(" "), label_problem("a" * 401)
    (True, 'empty', 'longer than 400 characters')
    >>> label_problem("bad \\ud800 half")
    'not valid Unicode (a lone surrogate)'
    """
    if not isinstance(label, str) or not label.strip():
        return "empty"
    if len(label) > MAX_LABEL:
        return f"longer than {MAX_LABEL} characters"
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid Unicode (a lone surrogate)"
    return None


def sparql_literal(text: str, lang: str) -> str:
    r"""``text`` as a SPARQL string literal in ``lang``: every character that could end the
    literal or break the line escaped, control characters as ``\uXXXX``.

    >>> print(sparql_literal('Evil" } ?s ?p ?o . #\\', "en"))
    "Evil\" } ?s ?p ?o . #\\"@en
    >>> print(sparql_literal("two\nlines\t\x00", "en"))
    "two\nlines\t\u0000"@en
    """
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\r\t\b\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}[ch])
        elif ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0 or ch in "\u2028\u2029":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"@' + checked_lang(lang)


def resolve_query(pred: str, labels: list[str], lang: str) -> str:
    """The subjects of ``pred`` named one of ``labels`` in ``lang``, and by which property.

    >>> print(resolve_query("http://x/p", ["A", 'B"'], "en").split("\\n", 3)[3])
    SELECT DISTINCT ?l ?s ?p WHERE {
      VALUES ?l { "A"@en "B\\""@en }
      VALUES ?p { rdfs:label skos:prefLabel skos:altLabel }
      ?s ?p ?l .
      FILTER EXISTS { ?s <http://x/p> ?o }
    }
    ORDER BY ?l ?s ?p
    """
    values = " ".join(sparql_literal(label, lang) for label in labels)
    return (PREFIXES + "SELECT DISTINCT ?l ?s ?p WHERE {\n"
            f"  VALUES ?l {{ {values} }}\n"
            "  VALUES ?p { rdfs:label skos:prefLabel skos:altLabel }\n"
            "  ?s ?p ?l .\n"
            f"  FILTER EXISTS {{ ?s <{checked_iri(pred)}> ?o }}\n"
            "}\nORDER BY ?l ?s ?p")


@dataclass
class Resolution:
    """Per (relation, label): the names each candidate subject bears it as."""
    labels: dict[tuple[str, str], str | None]          # (relation, label) -> problem or None
    preferred: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    alias: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))

    def outcome(self, key: tuple[str, str]) -> tuple[str, str, str, list[str]]:
        """(status, subject id, matched as, candidates) of one (relation, label)."""
        if self.labels[key]:
            return "malformed", "", "", []
        for level, found in (("label", self.preferred.get(key)), ("alias", self.alias.get(key))):
            if found:
                ids = sorted(found)
                return ("resolved", ids[0], level, ids) if len(ids) == 1 else \
                    ("ambiguous", "", level, ids)
        return "unresolved", "", "", []

    def table(self) -> pa.Table:
        rows = [(rel, label, *self.outcome((rel, label))) for rel, label in sorted(self.labels)]
        cols = list(zip(*rows)) if rows else [[]] * 6
        return pa.table({f.name: pa.array(list(c), f.type)
                         for f, c in zip(RESOLVED_SCHEMA, cols)}, schema=RESOLVED_SCHEMA)


def summary(table: pa.Table) -> dict:
    """What the manifest records: counts of each status, the first unresolved, ambiguous (with
    their candidates) and malformed labels as ``"P19 Paul Mounsey"``."""
    rows = table.to_pylist()
    out: dict = {"labels": len(rows), **{s: sum(r["status"] == s for r in rows)
                                         for s in STATUSES}}
    out["by_alias"] = sum(r["status"] == "resolved" and r["matched"] == "alias" for r in rows)
    for status in ("unresolved", "malformed"):
        out[f"{status}_labels"] = [f"{r['relation_id']} {r['subject']}" for r in rows
                                   if r["status"] == status][:LISTED]
    out["ambiguous_labels"] = {f"{r['relation_id']} {r['subject']}": r["candidates"]
                               for r in rows if r["status"] == "ambiguous"}
    out["ambiguous_labels"] = dict(list(out["ambiguous_labels"].items())[:LISTED])
    return out


def dataset_labels(folder, spec: str) -> dict[tuple[str, str], str | None]:
    """Every distinct (relation, subject label) of the dataset, with what is wrong with it."""
    from factprobe.core.tables import read_table
    facts = read_table(folder, "facts", ["relation_id", "subject_id"])
    pairs = facts.group_by(["relation_id", "subject_id"]).aggregate([])
    if pairs.num_rows == 0:
        raise UserError(f"--dataset {spec} holds no facts; there is nothing to refresh")
    return {(r, s): label_problem(s) for r, s in zip(pairs["relation_id"].to_pylist(),
                                                     pairs["subject_id"].to_pylist())}


def resolve_sparql(endpoint, labels: dict[tuple[str, str], str | None], lang: str,
                   prefixes: dict[str, str]) -> Resolution:
    """Each well-formed label looked up among the relation's subjects, a batch per query."""
    res = Resolution(labels)
    by_rel: dict[str, list[str]] = defaultdict(list)
    for (rel, label), problem in sorted(labels.items()):
        if not problem:
            by_rel[rel].append(label)
    for rel, names in by_rel.items():
        pred = resolve(rel, prefixes, bare_ns=WDT)
        for i in range(0, len(names), LABEL_BATCH):
            answer = endpoint.select(resolve_query(pred, names[i:i + LABEL_BATCH], lang),
                                     ("l", "s", "p"))
            for b in answer["results"]["bindings"]:
                if b["s"].get("type") != "uri":
                    continue
                key = (rel, b["l"]["value"])
                if key not in labels:        # an endpoint that answers what was not asked
                    continue
                sid = compact(b["s"]["value"], prefixes)
                (res.preferred if b["p"]["value"] in _PREFERRED else res.alias)[key].add(sid)
    return res


def _key(a: pa.Array, b: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(a.cast(pa.string()), b.cast(pa.string()), "\x1f")


def named_rows(group: pa.Table, wanted: pa.Array) -> pa.Table:
    """The rows of an assembled row group whose subject bears a wanted (relation, name) as its
    label or one of its aliases (``wanted``: ``relation\\x1fname`` keys)."""
    hit = pc.is_in(_key(group["relation_id"], group["subject"]), value_set=wanted)
    aliases = group["subject_aliases"].combine_chunks() \
        if isinstance(group["subject_aliases"], pa.ChunkedArray) else group["subject_aliases"]
    parents = pc.list_parent_indices(aliases)
    names = pc.list_flatten(aliases)
    by_alias = pc.is_in(_key(pc.take(group["relation_id"], parents), names), value_set=wanted)
    rows = pc.unique(pc.filter(parents, by_alias))
    hit = pc.or_(hit, pc.is_in(pa.array(range(group.num_rows), pa.int64()),
                               value_set=rows.cast(pa.int64())))
    return group.filter(hit)


def wanted_keys(labels: dict[tuple[str, str], str | None]) -> pa.Array:
    rels = [r for (r, _), p in sorted(labels.items()) if not p]
    names = [n for (_, n), p in sorted(labels.items()) if not p]
    return _key(pa.array(rels, pa.string()), pa.array(names, pa.string()))


def resolve_facts(facts: pa.Table, labels: dict[tuple[str, str], str | None]) -> Resolution:
    """The same lookup on facts assembled from a dump: a subject's label, else its aliases."""
    res = Resolution(labels)
    for row in facts.select(["relation_id", "subject_id", "subject", "subject_aliases"]
                            ).to_pylist():
        rel = row["relation_id"]
        if labels.get((rel, row["subject"]), "x") is None:
            res.preferred[(rel, row["subject"])].add(row["subject_id"])
        for name in row["subject_aliases"] or ():
            if name != row["subject"] and labels.get((rel, name), "x") is None:
                res.alias[(rel, name)].add(row["subject_id"])
    return res


def resolved_pairs(table: pa.Table) -> pa.Table:
    """The distinct (relation_id, subject_id) pairs the labels resolved to, sorted."""
    ok = table.filter(pc.equal(table["status"], "resolved"))
    pairs = ok.select(["relation_id", "subject_id"]).group_by(
        ["relation_id", "subject_id"]).aggregate([])
    return pairs.sort_by([("relation_id", "ascending"), ("subject_id", "ascending")])


def none_resolved(spec: str, table: pa.Table) -> UserError:
    counts = summary(table)
    shown = ", ".join(repr(x) for x in (counts["unresolved_labels"] +
                                         list(counts["ambiguous_labels"]))[:3])
    return UserError(
        f"--dataset {spec} names its subjects by label, and none of its {counts['labels']} "
        f"(relation, label) pairs names exactly one subject of the relation in the snapshot "
        f"({counts['unresolved']} unresolved, {counts['ambiguous']} ambiguous, "
        f"{counts['malformed']} malformed{': ' + shown if shown else ''}); check --lang and "
        f"that the source is the graph the benchmark was drawn from")
