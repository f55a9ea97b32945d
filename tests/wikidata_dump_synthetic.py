"""Synthetic JSON dumps of any size in Wikidata's format, for the tests of shards and resume and
for benchmarks/bench_dump.py: entities shaped like real lines, written one line at a time, with
the best-rank facts they hold computed beside them."""
from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

from tests.wikidata_dump_fixture import (NOVALUE, SOMEVALUE, Claim, Entity, entity_json, item,
                                         time, truthy_claims)

_SYLLABLES = ["ka", "lo", "mer", "vin", "dra", "sel", "tor", "ba", "qui", "nes", "ro", "zel",
              "fa", "du", "ren", "mo", "li", "ska", "vor", "tan", "pe", "gru", "ost", "hal"]
_LANGS = ["en", "de", "fr", "es", "it", "nl", "pl", "ru", "ja", "zh", "pt", "sv", "fi", "cs"]
# Statements of other properties, drawn with weights; people hold P19/P20/P27/P106 and countries
# P36/P37, in about the shares Wikidata has them (a few percent of items are people with a
# place of birth, well under one percent are countries), so that a build asking for those
# relations writes a realistic few facts per hundred entities.
_COMMON_PROPS = ["P17", "P131", "P361", "P527", "P1343", "P463", "P279", "P155", "P156",
                 "P1889", "P921", "P50", "P495", "P407", "P136"]
_PERSON_PROPS = ["P19", "P20", "P27", "P106", "P69", "P108", "P1412", "P166"]
# The dense shape: the twenty relations probing datasets ask for most, each entity holding
# several of them, and one entity in two hundred holding hundreds of statements (as Wikidata's
# largest items do: countries' P47/P150/P530, people with long P106/P166 lists).
DENSE_RELATIONS = ("P31", "P17", "P27", "P106", "P131", "P19", "P20", "P69", "P108", "P1412",
                   "P166", "P463", "P361", "P527", "P150", "P47", "P530", "P36", "P37", "P495")


def synthetic_entity(i: int, n: int, rng, dense: bool = False) -> Entity:
    """Entity ``Q<i>`` of a synthetic dump of ``n`` items, shaped like real lines: labels in
    several languages (an English one for 95%), descriptions, aliases, four to twelve
    statements (some with references, a few preferred, deprecated or unknown, some dated by a
    qualifier): 2-5 KB a line."""
    def word() -> str:
        return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))).title()

    name = f"{word()} {word()}"
    langs = rng.sample(_LANGS, rng.randint(3, 8))
    if rng.random() < 0.95 and "en" not in langs:
        langs[0] = "en"
    elif rng.random() >= 0.95 and "en" in langs and len(langs) > 1:
        langs.remove("en")
    labels = {lang: f"{name} ({lang})" if lang != "en" else name for lang in langs}
    descriptions = {lang: f"synthetic entity {i} of {n}" for lang in langs[:4]}
    aliases = {"en": [f"{name} {word()}" for _ in range(rng.randint(0, 3))]} if "en" in labels \
        else {}
    kind = rng.random()
    props = [("P31", 1)]
    if kind < 0.08:                                        # a person
        props += [(p, 1) for p in _PERSON_PROPS if rng.random() < 0.6]
    elif kind < 0.083:                                     # a country
        props += [("P36", 1), ("P37", rng.randint(1, 3))]
    props += [(rng.choice(_COMMON_PROPS), 1) for _ in range(rng.randint(3, 8))]
    if dense:
        props += [(rng.choice(DENSE_RELATIONS), 1) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.005:
            props += [(rng.choice(DENSE_RELATIONS), rng.randint(50, 150)) for _ in range(3)]
    claims = []
    for prop in [p for p, k in props for _ in range(k)]:
        roll = rng.random()
        value = SOMEVALUE if roll < 0.02 else NOVALUE if roll < 0.03 else \
            item(f"Q{rng.randint(1, int(n * 1.02))}")
        rank = "preferred" if roll > 0.95 else "deprecated" if roll > 0.92 else "normal"
        quals = [("P585", time(f"+{rng.randint(1800, 2020)}-00-00T00:00:00Z", 9, ""))] \
            if rng.random() < 0.2 else []
        claims.append(Claim(prop, value, rank, quals, referenced=rng.random() < 0.1))
    if kind < 0.08:
        claims.append(Claim("P569", time(f"+{rng.randint(1700, 2000)}-{rng.randint(1, 12):02d}-"
                                         f"{rng.randint(1, 28):02d}T00:00:00Z", 11, "")))
    return Entity(f"Q{i}", labels, aliases, descriptions, claims)


def truthy_facts(entities, relations) -> set[tuple[str, str, str]]:
    """(relation, subject, object id) of every best-rank value statement of ``relations``."""
    out = set()
    for e in entities:
        if e.is_property:
            continue
        for c in truthy_claims(e):
            if c.prop in relations and c.value.snaktype == "value" and c.value.datatype \
                    == "wikibase-item":
                out.add((c.prop, e.id, c.value.datavalue["value"]["id"]))
    return out


def write_synthetic(path: Path, n: int, seed: int = 0, relations=(), dense: bool = False
                    ) -> tuple[set, set]:
    """Write a JSON dump of ``n`` synthetic items to ``path`` (``.bz2``, ``.gz`` or plain),
    one line at a time; return the truthy item facts of ``relations`` it holds, and the ids
    of the items with an English label. ``dense``: the dense shape (:data:`DENSE_RELATIONS`)."""
    import random
    rng = random.Random(seed)
    opener = {".bz2": lambda p: bz2.open(p, "wb"), ".gz": lambda p: gzip.GzipFile(
        p, "wb", mtime=0)}.get(path.suffix, lambda p: open(p, "wb"))
    facts: set = set()
    labelled: set = set()
    tmp = path.with_name(path.name + ".tmp")
    with opener(tmp) as fh:
        fh.write(b"[\n")
        for i in range(1, n + 1):
            e = synthetic_entity(i, n, rng, dense)
            facts |= truthy_facts([e], relations)
            if "en" in e.labels:
                labelled.add(e.id)
            line = json.dumps(entity_json(e), ensure_ascii=False, separators=(",", ":"))
            fh.write(line.encode() + (b",\n" if i < n else b"\n"))
        fh.write(b"]\n")
    tmp.rename(path)
    return facts, labelled
