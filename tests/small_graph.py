"""A small graph of facts with aliases, multi-answer pairs and types, written as a facts dataset."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from factprobe.core.tables import base_manifest, write_dataset
from factprobe.builders.datasets.facts import SourceResult, assemble_facts

LABELS = {"france": "France", "germany": "Germany", "italy": "Italy",
          "switzerland": "Switzerland", "turkey": "Turkey", "paris": "Paris", "berlin": "Berlin",
          "rome": "Rome", "german": "German", "french": "French", "italian": "Italian",
          "europe": "Europe", "asia": "Asia", "lyon": "Lyon", "city": "city",
          "capital_city": "capital city", "continent": "continent", "language": "language"}
FACTS = [
    ("capital", "france", "paris"), ("capital", "germany", "berlin"), ("capital", "italy", "rome"),
    ("language", "switzerland", "german"), ("language", "switzerland", "french"),
    ("language", "switzerland", "italian"), ("language", "france", "french"),
    ("language", "germany", "german"),
    ("continent", "turkey", "europe"), ("continent", "turkey", "asia"),
    ("continent", "france", "europe"),
]
# instance-of facts, for negatives of the gold object's type
TYPES = [("instanceOf", "paris", "capital_city"), ("instanceOf", "berlin", "capital_city"),
         ("instanceOf", "rome", "capital_city"), ("instanceOf", "lyon", "city"),
         # objects of two types in one relation
         ("twinTown", "berlin", "paris"), ("twinTown", "paris", "rome"),
         ("twinTown", "paris", "lyon"), ("twinTown", "rome", "berlin")]
ALIASES = {"france": ["French Republic"], "germany": ["Deutschland", "FRG"],
           "switzerland": ["Swiss Confederation"], "turkey": ["Türkiye"],
           "paris": ["City of Light"], "rome": ["Eternal City"]}


def write_small_graph(folder: Path, with_types: bool = False) -> Path:
    rows = FACTS + (TYPES if with_types else [])
    df = pd.DataFrame([(r, s, o, LABELS[s], LABELS[o]) for r, s, o in rows],
                      columns=["relation_id", "subject_id", "object_id", "subject", "object"])
    aliases = pd.DataFrame([(e, a) for e, names in ALIASES.items() for a in names],
                           columns=["entity_id", "alias"])
    facts, relations, counts = assemble_facts(SourceResult(triples=df, aliases=aliases,
                                                           source_tag="test"))
    return write_dataset(folder, {"facts": facts, "relations": relations},
                         base_manifest(folder.name, "facts", {"type": "test"}, {}, counts))


TEMPLATES = {
    "capital": ["The capital of [X] is [Y].", "What is the capital of [X]? [Y]."],
    "language": ["[X] speaks [Y].", "People in [X] speak [Y].", "What language is spoken in [X]? [Y]."],
    "continent": ["[X] lies in [Y]."],
    "river": ["[X] flows into [Y]."],  # a relation without facts: ignored
}


def write_templates(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rid, texts in TEMPLATES.items():
        lines = [f'relation: "{rid}"', "templates:"]
        for i, text in enumerate(texts, 1):
            style = "question" if "?" in text else "statement"
            lines.append(f'  - {{id: m{i}, style: {style}, text: "{text}"}}')
        (folder / f"{rid}.yaml").write_text("\n".join(lines) + "\n")
    return folder
