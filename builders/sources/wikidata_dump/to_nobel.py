"""``build nobel --source wikidata-dump``: the Nobel laureates from the JSON dump.

The same model as the SPARQL builder (:mod:`factprobe.builders.datasets.nobel`): a laureate holds an award
statement (``p:P166`` / ``ps:P166``, any rank, as ``p:`` links every statement) whose value is
an instance or subclass of a subclass* of Nobel Prize (``wd:Q7191``), dated by the statement's
``pq:P585`` qualifier; birth (``wdt:P569``) and gender (``wdt:P21``) are truthy values. The
subclass closure runs in DuckDB over the dump's ``P279`` statements. Only the JSON dump has
qualifiers; the truthy N-Triples dump cannot date an award.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from factprobe.core.errors import UserError
from factprobe.builders.datasets.nobel import NobelConfig, write_nobel, year_of
from factprobe.builders.sources.graph import checked_lang
from factprobe.builders.sources.iris import PQ, PS, WD, WDT, WELL_KNOWN, P, is_wikidata_id, resolve
from factprobe.builders.sources.wikidata_dump import join
from factprobe.builders.sources.wikidata_dump.options import DumpOptions, cores
from factprobe.builders.sources.wikidata_dump.run import extracted
from factprobe.builders.sources.wikidata_dump.spec import ExtractSpec
from factprobe.builders.sources.wikidata_dump.stream import detect

TAG = "wikidata-dump"
_NS = {"award_statement": (P, "p:P166"), "award_value": (PS, "ps:P166"),
       "award_time": (PQ, "pq:P585"), "birth": (WDT, "wdt:P569"), "gender": (WDT, "wdt:P21"),
       "nobel_class": (WD, "wd:Q7191"), "instance_of": (WDT, "wdt:P31"),
       "subclass_of": (WDT, "wdt:P279")}
_NAMES = ("label", "pref")


def wikidata_model(cfg: NobelConfig, prefixes: dict[str, str]) -> tuple[dict, dict]:
    """(full IRIs, bare Wikidata ids) of the model; a model outside Wikidata's namespaces
    cannot be read from a Wikidata dump."""
    iri, ids = {}, {}
    for key, value in asdict(cfg.model).items():
        full = resolve(value, prefixes)
        ns, example = _NS[key]
        local = full[len(ns):] if full.startswith(ns) else ""
        if not is_wikidata_id(local) or (local[0] == "Q") != (key == "nobel_class"):
            flag = "--" + {"birth": "birth-property", "gender": "gender-property"}.get(
                key, key.replace("_", "-"))
            raise UserError(f"{flag} {value!r}: a Wikidata dump holds Wikidata's model; give "
                            f"a term like {example} (the default)")
        iri[key], ids[key] = full, local
    if ids["award_statement"] != ids["award_value"]:
        raise UserError("--award-statement and --award-value must name the same property "
                        f"(got {ids['award_statement']} and {ids['award_value']})")
    return iri, ids


def nobel_from_dump(path: str, cfg: NobelConfig, options: DumpOptions = DumpOptions(),
                    skip_bad: bool = False) -> Path:
    lang = checked_lang(cfg.lang)
    prefixes = dict(WELL_KNOWN)
    iri, ids = wikidata_model(cfg, prefixes)
    dump = detect(path)
    if dump.syntax != "json":
        raise UserError(f"{dump.path} is the truthy N-Triples dump, which has no qualifiers to "
                        f"date an award; build nobel from the JSON dump (latest-all.json.bz2)")
    award, when = ids["award_statement"], ids["award_time"]
    spec = ExtractSpec("json", lang, tuple(dict.fromkeys(
        (ids["birth"], ids["gender"], ids["instance_of"], ids["subclass_of"]))),
        ((award, (when,)),), skip_bad)
    with join.memory_errors(options.memory_limit), extracted(dump, spec, options,
                                                             cfg.progress) as ex:
        con = join.connect(ex.work.path, cores(),
                           options.memory_limit or join.default_memory_limit())
        try:
            people = _people(con, ex, ids)
        finally:
            con.close()
        if not people:
            raise UserError(f"no award statement in {dump.path} is of a subclass of "
                            f"{ids['nobel_class']} by {ids['instance_of']}/{ids['subclass_of']}; "
                            f"check --nobel-class and --award-statement")
        provenance = {**ex.provenance(), "model": iri, "lang": lang}
        return write_nobel(people, cfg, iri, prefixes, provenance, TAG)


def _people(con, ex, ids: dict) -> dict[str, dict]:
    join.load_statements(con, ex.files("statements"), [ids["birth"], ids["gender"],
                                                        ids["instance_of"], ids["subclass_of"]],
                         None)
    con.execute(f"CREATE TEMP TABLE q AS SELECT * FROM read_parquet("
                f"{join.files_sql(ex.files('qualified'))}) WHERE relation_id = ?",
                [ids["award_statement"]])
    # Classes under the Nobel class by subclass-of*, then the awards that are an instance or
    # subclass of one of them: the SPARQL path (P31|P279)/P279* Q7191.
    con.execute("CREATE TEMP TABLE cls AS WITH RECURSIVE c(id) AS (SELECT ?::VARCHAR UNION "
                "SELECT st.subject_id FROM st JOIN c ON st.object_id = c.id "
                "WHERE st.relation_id = ?) SELECT id FROM c",
                [ids["nobel_class"], ids["subclass_of"]])
    con.execute("CREATE TEMP TABLE awards AS SELECT DISTINCT subject_id AS id FROM st "
                "WHERE relation_id IN (?, ?) AND object_id IN (SELECT id FROM cls)",
                [ids["instance_of"], ids["subclass_of"]])
    statements = con.execute(
        "SELECT subject_id, statement_id, object_id, qualifier_value FROM q "
        "WHERE object_kind = 'iri' AND object_id IN (SELECT id FROM awards) "
        "ORDER BY subject_id, statement_id, qualifier_value NULLS FIRST").fetchall()
    persons = sorted({s for s, *_ in statements})
    facts = con.execute(
        "SELECT relation_id, subject_id, object_id FROM st WHERE relation_id IN (?, ?) AND "
        "subject_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY ALL",
        [ids["birth"], ids["gender"], persons]).fetchall()
    wanted = sorted(set(persons) | {o for _, _, o, _ in statements}
                    | {o for r, _, o in facts if r == ids["gender"]})
    names: dict[str, set] = {}
    for eid, value in con.execute(
            f"SELECT entity_id, value FROM read_parquet({join.files_sql(ex.files('names'))}) "
            "WHERE kind IN ('label', 'pref') AND entity_id IN (SELECT unnest(?::VARCHAR[]))",
            [wanted]).fetchall():
        names.setdefault(eid, set()).add(value)

    people: dict[str, dict] = {}
    dated: dict[tuple, set] = {}
    for person, st_id, prize, qvalue in statements:
        year = year_of(qvalue) if qvalue is not None else None
        dated.setdefault((person, st_id, prize), set()).add(year)
    for (person, _, prize), years in dated.items():
        p = people.setdefault(person, {"names": set(names.get(person, ())), "awards": {},
                                       "births": set(), "genders": set(), "undated": 0})
        known = {y for y in years if y is not None}
        if not known:
            p["undated"] += 1
        for label in names.get(prize) or {prize}:
            p["awards"].setdefault((prize, label), set()).update(known or {None})
    for rel, person, value in facts:
        p = people[person]
        if rel == ids["birth"]:
            if year_of(value) is not None:
                p["births"].add(year_of(value))
        else:
            p["genders"].update(names.get(value) or {value})
    return people
