"""Files that would take the machine: XML entity bombs, deep nesting and huge literals in every
RDF syntax pyoxigraph reads, and a Wikidata dump whose one line is a gigabyte.

Each must end in one line, exit 2, under 1.5 GB and 60 s (measured.py); files that only look
like them (entities used as namespace abbreviations) still build.
"""
from __future__ import annotations

import bz2
import shutil
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

from tests.contract.measured import check_refused, run_measured

DATA = Path(__file__).resolve().parents[1] / "data"
RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


def rdf_xml(body: str, dtd: str = "") -> str:
    doctype = f"<!DOCTYPE rdf:RDF [\n{dtd}\n]>\n" if dtd else ""
    return (f'<?xml version="1.0"?>\n{doctype}<rdf:RDF xmlns:rdf="{RDF_NS}" '
            f'xmlns:ex="http://example.org/">\n{body}\n</rdf:RDF>\n')


def laughs() -> str:
    """The 'billion laughs': ten levels of ten references, 10^10 bytes from under 1 KB."""
    dtd = ['<!ENTITY l0 "lollollol">'] + [
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)]
    return rdf_xml('<rdf:Description rdf:about="http://example.org/s">'
                   '<ex:p>&l9;</ex:p></rdf:Description>', "\n".join(dtd))


def flat_expansion() -> str:
    """No nesting, but 100,000 references to a 1 KB entity: 100 MB from 300 KB."""
    return rdf_xml('<rdf:Description rdf:about="http://example.org/s"><ex:p>'
                   + "&big;" * 100_000 + "</ex:p></rdf:Description>",
                   f'<!ENTITY big "{"y" * 1000}">')


def deep(n: int = 20_000) -> str:
    """Nesting that pyoxigraph's RDF/XML parser takes in cubic time (20,000: 20 s)."""
    return rdf_xml('<rdf:Description rdf:about="http://example.org/s">'
                   + "<ex:p><rdf:Description>" * n + "</rdf:Description></ex:p>" * n
                   + "</rdf:Description>")


BIG = "x" * (20 << 20)   # a literal past the 16 MB every parser is held to
HUGE_LITERAL = {
    "big.ttl": f'@prefix ex: <http://example.org/> .\nex:s ex:p "{BIG}" .\n',
    "big.nt": f'<http://example.org/s> <http://example.org/p> "{BIG}" .\n',
    "big.jsonld": '{"@id": "http://example.org/s", "http://example.org/p": "' + BIG + '"}',
    "big.rdf": rdf_xml(f'<rdf:Description rdf:about="http://example.org/s"><ex:p>{BIG}'
                       f'</ex:p></rdf:Description>'),
}

CASES: list[tuple[str, str, Callable[[], str], tuple[str, ...]]] = [
    ("billion-laughs", "lol.rdf", laughs, ("refers to other entities",)),
    ("flat-expansion", "flat.rdf", flat_expansion, ("expand to more than 64 MB",)),
    ("external-entity", "xxe.rdf", lambda: rdf_xml(
        '<rdf:Description rdf:about="http://example.org/s"><ex:p>&x;</ex:p>'
        '</rdf:Description>', '<!ENTITY x SYSTEM "file:///etc/passwd">'),
     ("external entity",)),
    ("parameter-entity", "pe.rdf", lambda: rdf_xml(
        '<rdf:Description rdf:about="http://example.org/s"/>',
        '<!ENTITY % p "<!ENTITY q \'x\'>"> %p;'), ("parameter entity",)),
    ("deep-nesting", "deep.rdf", deep, ("more than 1000 deep",)),
    ("deep-json-ld", "deep.jsonld", lambda: '{"@id": "http://example.org/s", '
     '"http://example.org/p": ' + "[" * 100_000 + "1" + "]" * 100_000 + "}", ("deep.jsonld",)),
    *[(f"huge-literal-{name.split('.')[1]}", name, (lambda t=text: t), ("longer than 16",))
      for name, text in HUGE_LITERAL.items()],
]


@pytest.mark.slow
@pytest.mark.parametrize("name, filename, content, needles", CASES, ids=[c[0] for c in CASES])
def test_hostile_rdf_file_is_refused(name, filename, content, needles, tmp_path: Path):
    (tmp_path / filename).write_text(content(), encoding="utf-8")
    m = run_measured(["build", "facts", "--source", "rdf", "--path", filename, "--relations",
                      "all", "--out", "out"], cwd=tmp_path, timeout=100)
    check_refused(m, (filename, *needles))
    assert not (tmp_path / "out").exists()


def test_entities_as_namespace_abbreviations_still_build(tmp_path: Path):
    """What ontology editors write: plain entities for namespaces, in elements and attributes."""
    dtd = ('<!ENTITY ex "http://example.org/">\n'
           '<!ENTITY rdfs "http://www.w3.org/2000/01/rdf-schema#">')
    body = ('<rdf:Description rdf:about="&ex;France" xmlns:rdfs="&rdfs;">'
            '<rdfs:label xml:lang="en">France &amp; co</rdfs:label>'
            '<ex:capital rdf:resource="&ex;Paris"/></rdf:Description>\n'
            '<rdf:Description rdf:about="&ex;Paris" xmlns:rdfs="&rdfs;">'
            '<rdfs:label xml:lang="en">Paris</rdfs:label></rdf:Description>')
    (tmp_path / "onto.rdf").write_text(rdf_xml(body, dtd), encoding="utf-8")
    m = run_measured(["build", "facts", "--source", "rdf", "--path", "onto.rdf", "--relations",
                      "ex:capital", "--prefix", "ex=http://example.org/", "--out", "out",
                      "--quiet"], cwd=tmp_path)
    assert m.returncode == 0, m.stderr
    facts = pd.read_parquet(tmp_path / "out" / "facts.parquet")
    assert facts[["subject", "object"]].values.tolist() == [["France & co", "Paris"]]


def gigabyte_line_dump() -> bytes:
    """How tests/data/dump_gigabyte_line.json.bz2 (877 bytes) was made: a dump whose second
    line is 1 GB (compressing it takes a while, hence the committed file)."""
    comp = bz2.BZ2Compressor(9)
    parts = [comp.compress(b'[\n{"id":"Q1","type":"item","labels":{"en":{"language":"en",'
                           b'"value":"')]
    block = b"a" * (16 << 20)
    parts += [comp.compress(block) for _ in range(64)]
    parts += [comp.compress(b'"}}},\n]\n'), comp.flush()]
    return b"".join(parts)


@pytest.mark.slow
def test_dump_with_a_gigabyte_line_is_refused(tmp_path: Path):
    """A 1 KB .bz2 whose second line is a gigabyte: read no further than the line cap."""
    dump = tmp_path / "dump.json.bz2"
    shutil.copy(DATA / "dump_gigabyte_line.json.bz2", dump)
    head = bz2.BZ2Decompressor().decompress(dump.read_bytes(), max_length=64)
    assert dump.stat().st_size < 4096 and head.startswith(b'[\n{"id":"Q1"')
    m = run_measured(["build", "facts", "--source", "wikidata-dump", "--path", "dump.json.bz2",
                      "--relations", "P36", "--out", "out"], cwd=tmp_path, timeout=100)
    check_refused(m, ("dump.json.bz2", "line 2 is longer than 64 MB"))
    assert not (tmp_path / "out").exists()
