"""Every ``factprobe build`` sub-command held to the contract on bad input (see harness.py):
exit 2, one line naming what is wrong, no traceback, nothing of the workspace changed.

Three tables: inputs on disk (numbers, contradictory flags, paths, datasets of the wrong kind,
damaged Parquet and manifests, text files that are not UTF-8 or hold NUL bytes, malformed
templates, injection attempts), damaged tables met by eval and publish through the same shared
reader, and network faults against real local servers (SPARQL through a scripted proxy in front
of Oxigraph, a Wikidata Action API stand-in, an OpenAI-compatible chat server). The tests after the tables check the caches: an answer of the wrong shape never enters
one, and an entry already bad on disk is fetched again rather than replayed.

(Longer than a module should be because it is a table: one row per case, read row by row.)
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.contract.conftest import SAMPLE, TEMPLATES
from tests.contract.harness import Case, check, expand, run, snapshot
from tests.llm_server import ScriptedChat
from tests.wbapi_server import FakeWikidataApi, default_entities

T = str(TEMPLATES)
KG = str(SAMPLE)
NEW_OK = lambda p: p.startswith(".cache-factprobe")  # noqa: E731 - a failed run may fill the cache


# ----------------------------------------------------------------------- workspace set-ups

def put(rel: str, data: bytes | str) -> Callable[[Path], None]:
    """Write a file of the user's into the workspace."""
    def setup(ws: Path) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return setup


def truncate(rel: str, keep: int = 300) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        p = ws / rel
        p.write_bytes(p.read_bytes()[:keep])
    return setup


def damage_middle(rel: str) -> Callable[[Path], None]:
    """Overwrite the middle of a file (footer intact): the damage shows only when read."""
    def setup(ws: Path) -> None:
        p = ws / rel
        data = bytearray(p.read_bytes())
        mid = len(data) // 2
        data[mid - 200:mid + 200] = b"\xff" * 400
        p.write_bytes(bytes(data))
    return setup


def parquet(rel: str, columns: dict) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        pq.write_table(pa.table(columns), ws / rel)
    return setup


def edit_manifest(rel: str, **changes) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        p = ws / rel / "dataset.json"
        p.write_text(json.dumps({**json.loads(p.read_text()), **changes}))
    return setup


def copy(src: str, dst: str) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        shutil.copytree(ws / src, ws / dst)
    return setup


def steps(*fns: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        for fn in fns:
            fn(ws)
    return setup


def mkdir(rel: str) -> Callable[[Path], None]:
    return lambda ws: (ws / rel).mkdir(parents=True)


CSV_OK = "subject,relation,object\na,r,b\n"
YAML_OK = ('relation: P1\ntemplates:\n'
           '  - {id: m1, style: statement, text: "[X] is in [Y]."}\n')
FKTC_HEAD = '{"relations": ["Where is [X]?"]}\n'
TREX_OK = '{"sub_uri": "Q1", "sub_label": "a", "obj_uri": "Q2", "obj_label": "b"}\n'


def facts(*args: str) -> tuple[str, ...]:
    return ("build", "facts", *args, "--out", "out")


def rdf(*args: str) -> tuple[str, ...]:
    return facts("--source", "rdf", "--path", KG, *args)


def csv_facts(*args: str) -> tuple[str, ...]:
    return facts("--source", "csv", "--path", "t.csv", "--relations", "all", *args)


def mc(*args: str, source: str = "aliases") -> tuple[str, ...]:
    return ("build", "mc", "--facts", source, "--out", "out", "--choices", "5", "--min-facts",
            "10", "--min-objects", "5", "--train", "5", "--test", "6", *args)


def templates(*args: str) -> tuple[str, ...]:
    return ("build", "templates", "--templates-dir", T, "--paraphrases", "0", "--out", "out",
            *args)


def fktc(*args: str, source: str = "aliases") -> tuple[str, ...]:
    return ("build", "fktc", "--facts", source, "--templates", "templates", "--out", "out", *args)


def imp(*args: str) -> tuple[str, ...]:
    return ("build", "fktc", "--import", "imp", "--out", "out", *args)


CASES = [
    # --- numbers that make no sense ---------------------------------------------------------
    Case("facts-limit-0", rdf("--relations", "rel:capital", "--limit", "0"), ("--limit",)),
    Case("facts-limit-negative", rdf("--relations", "rel:capital", "--limit", "-3"), ("--limit",)),
    Case("facts-limit-not-a-number", rdf("--relations", "rel:capital", "--limit", "many"),
         ("--limit",)),
    Case("facts-page-size-0", rdf("--relations", "rel:capital", "--page-size", "0"),
         ("--page-size",)),
    Case("facts-timeout-negative", facts("--source", "sparql", "--endpoint", "http://127.0.0.1:9/q",
                                         "--relations", "P36", "--timeout", "-1"), ("--timeout",)),
    Case("facts-timeout-nan", facts("--source", "sparql", "--endpoint", "http://127.0.0.1:9/q",
                                    "--relations", "P36", "--timeout", "nan"), ("--timeout",)),
    Case("facts-timeout-absurd", facts("--source", "sparql", "--endpoint", "http://127.0.0.1:9/q",
                                       "--relations", "P36", "--timeout", "1e300"), ("--timeout",)),
    Case("facts-retries-negative", facts("--source", "sparql", "--endpoint",
                                         "http://127.0.0.1:9/q", "--relations", "P36",
                                         "--retries", "-1"), ("--retries",)),
    Case("mc-seed-negative", mc("--seed", "-1"), ("--seed", ">= 0")),
    Case("mc-seed-not-a-number", mc("--seed", "one"), ("--seed",)),
    Case("mc-train-0-test-0", mc("--train", "0", "--test", "0"), ("--test",)),
    Case("mc-test-0", mc("--test", "0"), ("--test",)),
    Case("mc-choices-1", mc("--choices", "1"), ("--choices", "at least 2")),
    Case("mc-choices-absurd", mc("--choices", "1000000000000"), ("no relation qualifies",)),
    Case("mc-min-facts-negative", mc("--min-facts", "-5"), ("--min-facts",)),
    Case("misprimes-seed-negative", ("build", "misprimes", "--facts", "aliases", "--out", "out",
                                     "--seed", "-5"), ("--seed",)),
    Case("misprimes-negatives-0", ("build", "misprimes", "--facts", "aliases", "--out", "out",
                                   "--negatives", "0"), ("--negatives",)),
    Case("fktc-seed-negative", fktc("--seed", "-1"), ("--seed",)),
    Case("fktc-questions-0", fktc("--questions", "0"), ("--questions",)),
    Case("fktc-bleu-above-1", fktc("--bleu", "1.5"), ("--bleu",)),
    Case("templates-seed-negative", templates("--seed", "-2"), ("--seed",)),
    Case("templates-temperature-negative", templates("--temperature", "-0.5"), ("--temperature",)),
    Case("templates-temperature-nan", templates("--temperature", "nan"), ("--temperature",)),
    Case("templates-max-tokens-0", templates("--max-tokens", "0"), ("--max-tokens",)),
    Case("templates-max-requests-0", templates("--max-requests", "0"), ("--max-requests",)),
    Case("templates-max-words-0", templates("--max-words", "0"), ("--max-words",)),
    Case("templates-timeout-0", templates("--timeout", "0"), ("--timeout",)),
    Case("nobel-max-year-not-a-number", ("build", "nobel", "--source", "rdf", "--path", KG,
                                         "--max-year", "soon", "--out", "out"), ("--max-year",)),
    # --- flags that contradict each other ---------------------------------------------------
    Case("templates-min-words-above-max", templates("--min-words", "9", "--max-words", "3"),
         ("--min-words",)),
    Case("templates-paraphrases-without-model", ("build", "templates", "--templates-dir", T,
                                                 "--paraphrases", "2", "--out", "out"),
         ("--llm-model",)),
    Case("facts-csv-with-endpoint", csv_facts("--endpoint", "http://127.0.0.1:9/q"),
         ("--endpoint",), setup=put("t.csv", CSV_OK)),
    Case("facts-sparql-with-path", facts("--source", "sparql", "--endpoint", "http://127.0.0.1:9/q",
                                         "--path", KG, "--relations", "P36"), ("--path",)),
    Case("facts-sparql-without-endpoint", facts("--source", "sparql", "--relations", "P36"),
         ("--endpoint",)),
    Case("facts-sparql-relations-all", facts("--source", "sparql", "--endpoint",
                                             "http://127.0.0.1:9/q", "--relations", "all"),
         ("--relations all",)),
    Case("facts-rdf-without-path", facts("--source", "rdf", "--relations", "P36"), ("--path",)),
    Case("aliases-wikidata-with-path", ("build", "aliases", "--facts", "aliases", "--via",
                                        "wikidata", "--path", KG, "--out", "out"), ("--via graph",)),
    Case("aliases-graph-with-api-url", ("build", "aliases", "--facts", "aliases", "--via", "graph",
                                        "--api-url", "http://127.0.0.1:9/w/api.php", "--out",
                                        "out"), ("--api-url",)),
    Case("aliases-path-and-endpoint", ("build", "aliases", "--facts", "aliases", "--via", "graph",
                                       "--path", KG, "--endpoint", "http://127.0.0.1:9/q",
                                       "--out", "out"), ("not both",)),
    Case("nobel-rdf-with-endpoint", ("build", "nobel", "--source", "rdf", "--path", KG,
                                     "--endpoint", "http://127.0.0.1:9/q", "--out", "out"),
         ("--endpoint",)),
    Case("misprimes-types-without-type-relation", ("build", "misprimes", "--facts", "aliases",
                                                   "--types", "aliases", "--out", "out"),
         ("--type-relation",)),
    Case("fktc-neither-facts-nor-import", ("build", "fktc", "--out", "out"), ("--facts",)),
    Case("fktc-facts-and-import", ("build", "fktc", "--facts", "aliases", "--import", "mine",
                                   "--out", "out"), ("not both",)),
    Case("fktc-import-with-templates", imp("--templates", "templates"), ("--templates",),
         setup=put("imp/P1-subclass.json", FKTC_HEAD)),
    Case("multiprompt-templates-and-templates-dir", ("build", "multiprompt", "--facts", "aliases",
                                                     "--templates", "templates", "--templates-dir",
                                                     T, "--out", "out"), ("not both",)),
    # --- paths: missing, a file for a folder and back, empty, a run folder ------------------
    Case("facts-rdf-missing", facts("--source", "rdf", "--path", "nope.ttl", "--relations", "P36"),
         ("nope.ttl",)),
    Case("facts-rdf-folder", facts("--source", "rdf", "--path", "mine", "--relations", "P36"),
         ("mine", "folder")),
    Case("facts-rdf-unknown-extension", facts("--source", "rdf", "--path", "userfile.txt",
                                              "--relations", "P36"), ("userfile.txt",)),
    Case("facts-rdf-empty", facts("--source", "rdf", "--path", "e.ttl", "--relations", "all"),
         ("no facts",), setup=put("e.ttl", "")),
    Case("facts-csv-missing", facts("--source", "csv", "--path", "nope.csv", "--relations", "all"),
         ("nope.csv",)),
    Case("facts-csv-folder", facts("--source", "csv", "--path", "mine", "--relations", "all"),
         ("mine",)),
    Case("facts-csv-empty", csv_facts(), ("empty",), setup=put("t.csv", "")),
    Case("facts-trex-missing", facts("--source", "trex", "--path", "no/such/dir", "--relations",
                                     "all"), ("no/such/dir",)),
    Case("aliases-missing", ("build", "aliases", "--facts", "nope", "--out", "out"), ("nope",)),
    Case("aliases-facts-is-a-file", ("build", "aliases", "--facts", "userfile.txt", "--out",
                                     "out"), ("userfile.txt", "file")),
    Case("aliases-run-folder", ("build", "aliases", "--facts", "run", "--via", "graph",
                                "--out", "out"), ("run folder",)),
    Case("mc-empty-folder", mc(source="empty"), ("empty",), setup=mkdir("empty")),
    Case("mc-run-folder", mc(source="run"), ("run folder",)),
    Case("mc-user-folder", mc(source="mine"), ("mine",)),
    Case("mc-facts-table-is-a-folder", mc(source="bad"), ("facts.parquet",),
         setup=steps(copy("aliases", "bad"), lambda ws: (ws / "bad/facts.parquet").unlink(),
                     mkdir("bad/facts.parquet"))),
    Case("templates-dir-missing", ("build", "templates", "--templates-dir", "nope",
                                   "--paraphrases", "0", "--out", "out"), ("nope",)),
    Case("templates-dir-is-a-file", ("build", "templates", "--templates-dir", "userfile.txt",
                                     "--paraphrases", "0", "--out", "out"), ("userfile.txt",)),
    Case("templates-dir-empty", ("build", "templates", "--templates-dir", "empty",
                                 "--paraphrases", "0", "--out", "out"), ("no template files",),
         setup=mkdir("empty")),
    Case("templates-review-in-missing", templates("--review-in", "nope.csv"), ("nope.csv",)),
    Case("templates-review-out-folder", templates("--review-out", "mine"), ("mine", "folder")),
    Case("templates-review-out-user-file", templates("--review-out", "userfile.txt"),
         ("userfile.txt", "not a review file")),
    Case("templates-review-out-under-a-file", templates("--review-out", "userfile.txt/r.csv"),
         ("userfile.txt",)),
    Case("multiprompt-templates-dir-missing", ("build", "multiprompt", "--facts", "aliases",
                                               "--out", "out"), ("data/templates",)),
    Case("mc-name-too-long", mc(source="a" * 300), ("too long",)),
    Case("facts-csv-name-too-long", facts("--source", "csv", "--path", "b" * 300 + ".csv",
                                          "--relations", "all"), ("too long",)),
    Case("fktc-import-missing", imp(), ("imp",)),
    Case("fktc-import-a-file", ("build", "fktc", "--import", "userfile.txt", "--out", "out"),
         ("userfile.txt",)),
    Case("fktc-import-empty-folder", imp(), ("no .json",), setup=mkdir("imp")),
    Case("fktc-import-no-facts", imp(), ("no fact lines",),
         setup=put("imp/P1-subclass.json", FKTC_HEAD)),
    # --- datasets of the wrong kind or shape ------------------------------------------------
    Case("mc-mc-as-facts", mc(source="mc"), ("'mc'", "--facts")),
    Case("mc-templates-as-facts", mc(source="templates"), ("'templates'",)),
    Case("fktc-mc-as-facts", fktc(source="mc"), ("'mc'", "--facts")),
    Case("fktc-fktc-as-facts", fktc(source="fktc"), ("'fktc'",)),
    Case("multiprompt-misprimes-as-facts", ("build", "multiprompt", "--facts", "misprimes",
                                            "--templates", "templates", "--out", "out"),
         ("'misprimes'",)),
    Case("misprimes-mc-as-types", ("build", "misprimes", "--facts", "aliases", "--types", "mc",
                                   "--type-relation", "rel:continent", "--out", "out"), ("--types",)),
    Case("aliases-mc-as-facts", ("build", "aliases", "--facts", "mc", "--via", "graph", "--out",
                                 "out"), ("'mc'",)),
    Case("multiprompt-facts-as-templates", ("build", "multiprompt", "--facts", "aliases",
                                            "--templates", "facts", "--out", "out"),
         ("--templates",)),
    Case("fktc-mc-as-templates", fktc("--templates", "mc"), ("--templates",)),
    Case("templates-templates-as-facts", templates("--facts", "templates"), ("facts.parquet",)),
    Case("mc-facts-without-columns", mc(source="bad"), ("lacks", "relation_id"),
         setup=steps(copy("aliases", "bad"), parquet("bad/facts.parquet", {"x": [1, 2]}))),
    Case("misprimes-columns-of-another-type", ("build", "misprimes", "--facts", "bad", "--out",
                                               "out"), ("is int64",),
         setup=steps(copy("aliases", "bad"), parquet("bad/facts.parquet", {
             c: [1] for c in ("fact_id", "relation_id", "subject_id", "object_id", "object",
                              "answers")}))),
    Case("multiprompt-templates-without-columns", ("build", "multiprompt", "--facts", "aliases",
                                                   "--templates", "bad", "--out", "out"),
         ("lacks",), setup=steps(copy("templates", "bad"),
                                 parquet("bad/templates.parquet", {"template": ["[X] [Y]"]}))),
    # --- damaged Parquet and manifests ------------------------------------------------------
    Case("aliases-truncated-facts", ("build", "aliases", "--facts", "facts", "--via", "graph",
                                     "--out", "out"), ("facts.parquet", "Parquet"),
         setup=truncate("facts/facts.parquet")),
    Case("mc-truncated-facts", mc(), ("facts.parquet", "Parquet"),
         setup=truncate("aliases/facts.parquet")),
    Case("mc-damaged-row-group", mc(), ("facts.parquet",),
         setup=damage_middle("aliases/facts.parquet")),
    Case("misprimes-garbage-facts", ("build", "misprimes", "--facts", "aliases", "--out", "out"),
         ("facts.parquet",), setup=put("aliases/facts.parquet", b"garbage")),
    Case("fktc-empty-facts-file", fktc(), ("facts.parquet",), setup=put("aliases/facts.parquet",
                                                                         b"")),
    Case("multiprompt-truncated-templates", ("build", "multiprompt", "--facts", "aliases",
                                             "--templates", "templates", "--out", "out"),
         ("templates.parquet",), setup=truncate("templates/templates.parquet")),
    Case("templates-truncated-facts", templates("--facts", "aliases"), ("facts.parquet",),
         setup=truncate("aliases/facts.parquet")),
    Case("mc-truncated-relations", mc(), ("relations.parquet",),
         setup=truncate("aliases/relations.parquet")),
    Case("mc-manifest-missing", mc(), ("dataset.json",),
         setup=lambda ws: (ws / "aliases/dataset.json").unlink()),
    Case("mc-manifest-not-json", mc(), ("dataset.json", "JSON"),
         setup=put("aliases/dataset.json", "{oops")),
    Case("fktc-manifest-a-list", fktc(), ("dataset.json",), setup=put("aliases/dataset.json", "[]")),
    Case("misprimes-manifest-latin1", ("build", "misprimes", "--facts", "aliases", "--out", "out"),
         ("dataset.json", "UTF-8"), setup=put("aliases/dataset.json", b'{"name": "caf\xe9"}')),
    Case("mc-manifest-kind-not-text", mc(), ("kind",), setup=edit_manifest("aliases", kind=[1])),
    Case("mc-hub-layout-not-an-object", mc(source="hub"), ("factprobe_layout.json",),
         setup=steps(copy("aliases", "hub"), put("hub/factprobe_layout.json", "[]"))),
    Case("mc-hub-layout-escapes-its-folder", mc(source="hub"), ("factprobe_layout.json",),
         setup=steps(copy("aliases", "hub"), put("hub/factprobe_layout.json", json.dumps(
             {"format": 1, "tables": {"../../evil": {"rows": 0, "splits": {}, "runs": []}}})))),
    Case("aliases-manifest-source-not-an-object", ("build", "aliases", "--facts", "facts",
                                                   "--via", "graph", "--out", "out"),
         ("source",), setup=edit_manifest("facts", source=[1, 2])),
    # --- text files: not UTF-8, NUL bytes, malformed ----------------------------------------
    Case("facts-csv-latin1", csv_facts(), ("t.csv:3", "UTF-8"),
         setup=put("t.csv", CSV_OK.encode() + b"caf\xe9,r,b\n")),
    Case("facts-csv-nul", csv_facts(), ("t.csv:3", "NUL"),
         setup=put("t.csv", CSV_OK.encode() + b"c\x00d,r,e\n")),
    Case("facts-csv-utf16", csv_facts(), ("t.csv:1",),
         setup=put("t.csv", CSV_OK.encode("utf-16"))),
    Case("facts-csv-wrong-header", csv_facts(), ("subject",), setup=put("t.csv", "a,b,c\n1,2,3\n")),
    Case("facts-csv-short-row", csv_facts(), ("t.csv:3", "--skip-bad"),
         setup=put("t.csv", CSV_OK + "c,r\n")),
    Case("facts-csv-unknown-relation", facts("--source", "csv", "--path", "t.csv", "--relations",
                                             "nope"), ("nope", "relations present"),
         setup=put("t.csv", CSV_OK)),
    Case("facts-trex-bad-json", facts("--source", "trex", "--path", "tx", "--relations", "all"),
         ("P1.jsonl:2",), setup=put("tx/P1.jsonl", TREX_OK + "{oops\n")),
    Case("facts-trex-latin1", facts("--source", "trex", "--path", "tx", "--relations", "all"),
         ("P1.jsonl:2",), setup=put("tx/P1.jsonl", TREX_OK.encode() + b'{"sub_uri": "Q3", '
                                    b'"sub_label": "caf\xe9", "obj_uri": "Q2", "obj_label": "b"}\n')),
    Case("facts-trex-label-not-text", facts("--source", "trex", "--path", "tx", "--relations",
                                            "all"), ("P1.jsonl:2", "not text"),
         setup=put("tx/P1.jsonl", TREX_OK + TREX_OK.replace('"a"', '["a"]'))),
    Case("facts-trex-nul", facts("--source", "trex", "--path", "tx", "--relations", "all"),
         ("P1.jsonl:2", "NUL"), setup=put("tx/P1.jsonl", TREX_OK + TREX_OK.replace(
             '"a"', '"a\\u0000b"'))),
    Case("facts-rdf-latin1", facts("--source", "rdf", "--path", "x.ttl", "--relations", "all"),
         ("x.ttl",), setup=put("x.ttl", b'<http://x/a> <http://x/p> "caf\xe9" .\n')),
    Case("facts-rdf-nul", facts("--source", "rdf", "--path", "x.nt", "--relations", "all"),
         ("no facts",), setup=put("x.nt", b'<http://x/a> <http://x/p> "a\x00b" .\n')),
    Case("templates-yaml-latin1", ("build", "templates", "--templates-dir", "td", "--paraphrases",
                                   "0", "--out", "out"), ("P1.yaml:3", "UTF-8"),
         setup=put("td/P1.yaml", YAML_OK.encode().replace(b"is in", b"est \xe0"))),
    Case("templates-yaml-nul", ("build", "templates", "--templates-dir", "td", "--paraphrases",
                                "0", "--out", "out"), ("P1.yaml:3", "NUL"),
         setup=put("td/P1.yaml", YAML_OK.replace("is in", "is\x00in"))),
    Case("templates-yaml-malformed", ("build", "templates", "--templates-dir", "td",
                                      "--paraphrases", "0", "--out", "out"), ("P1.yaml", "YAML"),
         setup=put("td/P1.yaml", "relation: P1\ntemplates: [\n")),
    Case("templates-yaml-a-list", ("build", "templates", "--templates-dir", "td", "--paraphrases",
                                   "0", "--out", "out"), ("P1.yaml",),
         setup=put("td/P1.yaml", "- relation: P1\n")),
    Case("templates-yaml-bad-placeholder", ("build", "templates", "--templates-dir", "td",
                                            "--paraphrases", "0", "--out", "out"), ("[Z]",),
         setup=put("td/P1.yaml", YAML_OK.replace("[Y]", "[Z]"))),
    Case("templates-yaml-misnamed", ("build", "templates", "--templates-dir", "td",
                                     "--paraphrases", "0", "--out", "out"), ("P2.yaml",),
         setup=put("td/P2.yaml", YAML_OK)),
    Case("templates-yaml-a-folder", ("build", "templates", "--templates-dir", "td",
                                     "--paraphrases", "0", "--out", "out"), ("P1.yaml", "folder"),
         setup=mkdir("td/P1.yaml")),
    Case("templates-review-in-latin1", templates("--review-in", "r.csv"), ("r.csv:2",),
         setup=put("r.csv", b"decision,template_id\nkeep,caf\xe9\n")),
    Case("templates-review-in-bad-decision", templates("--review-in", "r.csv"), ("r.csv:2",),
         setup=put("r.csv", "decision,template_id\nmaybe,rel:capital/m1\n")),
    Case("fktc-import-latin1", imp(), ("P1-subclass.json:2", "UTF-8"),
         setup=put("imp/P1-subclass.json", FKTC_HEAD.encode() +
                   b'{"subject": "caf\xe9", "object": "b", "taxonomy": []}\n')),
    Case("fktc-import-nul", imp(), ("P1-subclass.json:2", "NUL"),
         setup=put("imp/P1-subclass.json", FKTC_HEAD +
                   '{"subject": "a\\u0000", "object": "b", "taxonomy": []}\n')),
    Case("fktc-import-bad-first-line", imp(), ("P1-subclass.json:1",),
         setup=put("imp/P1-subclass.json", '{"subject": "a"}\n')),
    Case("fktc-import-bad-json", imp(), ("P1-subclass.json:2",),
         setup=put("imp/P1-subclass.json", FKTC_HEAD + "{oops\n")),
    Case("fktc-import-negatives-not-a-list", imp(), ("P1-subclass.json:2", "taxonomy"),
         setup=put("imp/P1-subclass.json", FKTC_HEAD +
                   '{"subject": "a", "object": "b", "taxonomy": "c"}\n')),
    # --- relation names and other text that reaches a query ---------------------------------
    Case("facts-unknown-relation", rdf("--relations", "rel:nope"), ("rel:nope", "relations present")),
    Case("facts-relation-injection", rdf("--relations", "rel:capital> }} DROP ALL {{ <x"),
         ("not a usable IRI",)),
    Case("facts-iri-injection", rdf("--relations", "<http://x/a> }} DELETE {{ ?s ?p ?o }}"),
         ("not a usable IRI",)),
    Case("facts-unknown-prefix", rdf("--relations", "zz:capital"), ("unknown prefix",)),
    Case("facts-bad-prefix-flag", rdf("--relations", "rel:capital", "--prefix", "noequals"),
         ("--prefix",)),
    Case("facts-lang-injection", rdf("--relations", "rel:capital", "--lang", 'en") }} #'),
         ("--lang",)),
    Case("facts-relations-empty", rdf("--relations", ","), ("--relations",)),
    Case("nobel-iri-injection", ("build", "nobel", "--source", "rdf", "--path", KG,
                                 "--award-statement", "st:x> }} DROP ALL {{ <y", "--out", "out"),
         ("not a usable IRI",)),
    Case("nobel-no-award-matches", ("build", "nobel", "--source", "rdf", "--path", KG,
                                    "--nobel-class", "ent:nothing", "--out", "out"),
         ("no award statements",)),
    Case("mc-exclude-unknown-relation", mc("--exclude-relations", "rel:nope"), ("rel:nope",)),
    Case("misprimes-unknown-type-relation", ("build", "misprimes", "--facts", "aliases",
                                             "--type-relation", "rel:nope", "--out", "out"),
         ("rel:nope",)),
    Case("templates-relation-not-in-facts", templates("--facts", "aliases", "--relations",
                                                      "rel:nope"), ("rel:nope",)),
    Case("aliases-wikidata-without-qids", ("build", "aliases", "--facts", "aliases", "--via",
                                           "wikidata", "--out", "out"), ("Wikidata ids",)),
    # --- service addresses and what goes into a header --------------------------------------
    Case("facts-endpoint-not-http", facts("--source", "sparql", "--endpoint", "ftp://x/q",
                                          "--relations", "P36"), ("http",)),
    Case("facts-endpoint-broken-url", facts("--source", "sparql", "--endpoint", "http://[::1/q",
                                            "--relations", "P36"), ("not a valid URL",)),
    Case("facts-contact-control-character", facts("--source", "sparql", "--endpoint",
                                                  "http://127.0.0.1:9/q", "--relations", "P36",
                                                  "--contact", "me\r\nX-Evil: 1"), ("contact",)),
    Case("facts-cache-dir-is-a-file", facts("--source", "sparql", "--endpoint",
                                            "http://127.0.0.1:9/q", "--relations", "P36",
                                            "--cache-dir", "userfile.txt"), ("userfile.txt",)),
    Case("aliases-api-url-not-http", ("build", "aliases", "--facts", "wdfacts", "--api-url",
                                      "localhost/w/api.php", "--out", "out"), ("http",)),
    Case("templates-llm-url-not-http", ("build", "templates", "--templates-dir", T,
                                        "--paraphrases", "1", "--llm-model", "m",
                                        "--llm-base-url", "notaurl", "--out", "out"),
         ("--llm-base-url",)),
    Case("templates-no-cached-answer-and-no-url", ("build", "templates", "--templates-dir", T,
                                                   "--paraphrases", "1", "--llm-model", "m",
                                                   "--cache-dir", ".cache-factprobe/llm",
                                                   "--out", "out"), ("no cached answer",)),
]


# ----------------------------------------------------------------------- network faults

JSON_TYPE = {"Content-Type": "application/sparql-results+json"}
TERM = {"type": "uri", "value": "http://www.wikidata.org/entity/Q142"}
NOT_RESULTS = json.dumps({"head": {"vars": ["s", "o"]}, "boolean": True}).encode()
MISSING_VAR = json.dumps({"head": {"vars": ["s", "o"]},
                          "results": {"bindings": [{"s": TERM}]}}).encode()
BAD_TERM = json.dumps({"head": {"vars": ["s", "o"]},
                       "results": {"bindings": [{"s": TERM, "o": "Q90"}]}}).encode()
NULL_CHAT = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": None}}]})


@dataclass(frozen=True)
class Net:
    """A network case: the scripts the local servers follow for the command's requests."""
    case: Case
    sparql: tuple = ()    # FlakyProxy: (status, headers[, body]) per request
    api: tuple = ()       # FakeWikidataApi: kinds per request
    chat: tuple = ()      # ScriptedChat: steps per request


def sparql_facts(*args: str) -> tuple[str, ...]:
    return facts("--source", "sparql", "--endpoint", "{sparql}", "--relations", "P36",
                 "--retries", "0", *args)


def wd_aliases(*args: str) -> tuple[str, ...]:
    return ("build", "aliases", "--facts", "wdfacts", "--api-url", "{api}", "--retries", "0",
            "--out", "out", *args)


def paraphrase(*args: str) -> tuple[str, ...]:
    return ("build", "templates", "--templates-dir", "td", "--paraphrases", "1", "--llm-model",
            "m", "--llm-base-url", "{llm}", "--retries", "0", "--cache-dir",
            ".cache-factprobe/llm", "--out", "out", *args)


def llm_case(id: str, needles: tuple[str, ...], chat: tuple = (), **kw) -> Net:
    args = kw.pop("args", ())
    return Net(Case(id, paraphrase(*args), needles, setup=put("td/P1.yaml", YAML_OK)), chat=chat,
               **kw)


NET_CASES = [
    # SPARQL (build facts, nobel, aliases --via graph) through a proxy in front of Oxigraph
    Net(Case("sparql-unreachable", facts("--source", "sparql", "--endpoint", "{closed}/query",
                                         "--relations", "P36", "--retries", "0"),
             ("cannot reach",))),
    Net(Case("sparql-timeout", facts("--source", "sparql", "--endpoint", "{silent}/query",
                                     "--relations", "P36", "--retries", "0", "--timeout", "0.5"),
             ("no answer within 0.5 s",))),
    Net(Case("sparql-429-with-retry-after", sparql_facts("--retries", "1"), ("HTTP 429",)),
        sparql=((429, {"Retry-After": "0"}), (429, {"Retry-After": "0"}))),
    Net(Case("sparql-429-without-retry-after", sparql_facts(), ("HTTP 429",)),
        sparql=((429, {}),)),
    Net(Case("sparql-429-wait-too-long", sparql_facts("--retries", "1"), ("Retry-After",)),
        sparql=((429, {"Retry-After": "100000"}),)),
    Net(Case("sparql-500", sparql_facts(), ("500",)), sparql=((500, {}),)),
    Net(Case("sparql-503", sparql_facts(), ("503",)), sparql=((503, {}),)),
    Net(Case("sparql-404", sparql_facts(), ("404",)), sparql=((404, {}),)),
    Net(Case("sparql-400", sparql_facts(), ("malformed",)), sparql=((400, {}),)),
    Net(Case("sparql-403", sparql_facts(), ("403",)), sparql=((403, {}),)),
    Net(Case("sparql-200-html", sparql_facts(), ("not JSON",)),
        sparql=((200, {"Content-Type": "text/html"}, b"<html>maintenance</html>"),)),
    Net(Case("sparql-200-not-results", sparql_facts(), ("not SPARQL results",)),
        sparql=((200, JSON_TYPE, NOT_RESULTS),)),
    Net(Case("sparql-200-missing-variable", sparql_facts(), ("?o",)),
        sparql=((200, JSON_TYPE, MISSING_VAR),)),
    Net(Case("sparql-200-malformed-value", sparql_facts(), ("?o",)),
        sparql=((200, JSON_TYPE, BAD_TERM),)),
    Net(Case("nobel-sparql-not-results", ("build", "nobel", "--endpoint", "{sparql}", "--retries",
                                          "0", "--out", "out"), ("not SPARQL results",)),
        sparql=((200, JSON_TYPE, NOT_RESULTS),)),
    Net(Case("nobel-sparql-unreachable", ("build", "nobel", "--endpoint", "{closed}/query",
                                          "--retries", "0", "--out", "out"), ("cannot reach",))),
    Net(Case("aliases-graph-endpoint-missing-variable",
             ("build", "aliases", "--facts", "wdfacts", "--via", "graph", "--endpoint",
              "{sparql}", "--retries", "0", "--out", "out"), ("?e",)),
        sparql=((200, JSON_TYPE, MISSING_VAR),)),
    Net(Case("aliases-graph-endpoint-500",
             ("build", "aliases", "--facts", "wdfacts", "--via", "graph", "--endpoint",
              "{sparql}", "--retries", "0", "--out", "out"), ("500",)), sparql=((500, {}),)),
    # the Wikidata Action API (build aliases --via wikidata) against a local stand-in
    Net(Case("wikidata-api-429", wd_aliases(), ("HTTP 429",)), api=("429",)),
    Net(Case("wikidata-api-429-without-retry-after", wd_aliases(), ("HTTP 429",)),
        api=("429-no-wait",)),
    Net(Case("wikidata-api-500", wd_aliases(), ("HTTP 500",)), api=("500",)),
    Net(Case("wikidata-api-200-html", wd_aliases(), ("not JSON",)), api=("html",)),
    Net(Case("wikidata-api-maxlag", wd_aliases(), ("maxlag",)), api=("maxlag",)),
    Net(Case("wikidata-api-error", wd_aliases(), ("readapidenied",)), api=("apierror",)),
    Net(Case("wikidata-api-200-wrong-shape", wd_aliases(), ("aliases",)), api=("shape",)),
    Net(Case("wikidata-api-404", ("build", "aliases", "--facts", "wdfacts", "--api-url",
                                  "{api}/nope", "--retries", "0", "--out", "out"), ("404",))),
    Net(Case("wikidata-api-unreachable", ("build", "aliases", "--facts", "wdfacts", "--api-url",
                                          "{closed}/w/api.php", "--retries", "0", "--out", "out"),
             ("cannot reach",))),
    Net(Case("wikidata-api-timeout", ("build", "aliases", "--facts", "wdfacts", "--api-url",
                                      "{silent}/w/api.php", "--retries", "0", "--timeout", "0.5",
                                      "--out", "out"), ("no answer within",))),
    # an OpenAI-compatible chat endpoint (build templates)
    llm_case("llm-429", ("HTTP 429",), chat=(("status", 429, {}, "{}"),)),
    llm_case("llm-429-wait-too-long", ("Retry-After",), args=("--retries", "1"),
             chat=(("status", 429, {"retry-after": "100000"}, "{}"),)),
    llm_case("llm-500", ("HTTP 500",), chat=(("status", 500, {}, "oops"),)),
    llm_case("llm-401", ("OPENAI_API_KEY",), chat=(("status", 401, {}, "{}"),)),
    llm_case("llm-unknown-model", ("--llm-model",),
             chat=(("status", 404, {}, '{"error": {"message": "no model m"}}'),)),
    llm_case("llm-200-html", ("unreadable answer",), chat=(("raw", "<html>busy</html>"),)),
    llm_case("llm-200-not-a-completion", ("not a chat completion",),
             chat=(("raw", '{"detail": "ok"}'),)),
    llm_case("llm-200-without-text", ("without text",), chat=(("raw", NULL_CHAT),)),
    Net(Case("llm-unreachable", ("build", "templates", "--templates-dir", "td", "--paraphrases",
                                 "1", "--llm-model", "m", "--llm-base-url", "{closed}/v1",
                                 "--retries", "0", "--cache-dir", ".cache-factprobe/llm",
                                 "--out", "out"), ("cannot reach",),
             setup=put("td/P1.yaml", YAML_OK))),
    Net(Case("llm-timeout", ("build", "templates", "--templates-dir", "td", "--paraphrases",
                             "1", "--llm-model", "m", "--llm-base-url", "{silent}/v1",
                             "--retries", "0", "--timeout", "0.5", "--cache-dir",
                             ".cache-factprobe/llm", "--out", "out"), ("no answer within",),
             setup=put("td/P1.yaml", YAML_OK))),
]


# The shared reader (factprobe.core.tables.read_table) serves eval and publish too.
READER_CASES = [
    Case("eval-truncated-facts", ("eval", "zp-lke", "--dataset", "mc", "--model", "model",
                                  "--out", "out"), ("mc/facts.parquet", "Parquet"),
         setup=truncate("mc/facts.parquet")),
    Case("eval-garbage-facts", ("eval", "zp-lke", "--dataset", "mc", "--model", "model",
                                "--examples", "2", "--out", "out"), ("facts.parquet",),
         setup=put("mc/facts.parquet", b"PAR1 not really PAR1")),
    Case("publish-truncated-facts", ("publish", "mc", "--repo-id", "me/mc", "--dry-run", "out"),
         ("mc/facts.parquet", "Parquet"), setup=truncate("mc/facts.parquet")),
    Case("publish-damaged-relations", ("publish", "mc", "--repo-id", "me/mc", "--dry-run", "out"),
         ("relations.parquet",), setup=truncate("mc/relations.parquet", 40)),
]


def _run_case(case: Case, ws: Path, names: dict[str, str]) -> None:
    if case.setup:
        case.setup(ws)
    before = snapshot(ws)
    proc = run(expand(case.argv, {"ws": str(ws), **names}), cwd=ws, env=case.env,
               timeout=case.timeout)
    check(proc, before, snapshot(ws), needles=case.needles, new_ok=NEW_OK)



@pytest.mark.parametrize("case", CASES + READER_CASES, ids=lambda c: c.id)
def test_bad_input(case: Case, workspace, wd_facts):
    shutil.copytree(wd_facts, workspace / "wdfacts")
    _run_case(case, workspace, {})


@pytest.fixture
def servers(flaky_proxy, closed_port_url, silent_url):
    api = FakeWikidataApi(*default_entities()).start()
    chat = ScriptedChat([], default=lambda req: '["[X] lies in [Y].", "[Y] holds [X]."]')
    yield {"proxy": flaky_proxy, "api": api, "chat": chat,
           "names": {"sparql": flaky_proxy.url, "api": api.url, "llm": chat.url,
                     "closed": closed_port_url.rsplit("/", 1)[0], "silent": silent_url}}
    api.stop()
    chat.close()


def cached(ws: Path) -> dict[str, list[Path]]:
    """The response-cache entries in the workspace, by namespace; asserts each one is an
    answer of the shape its client checks, and that no temporary file was left."""
    from factprobe.builders.sources.sparql import results_problem
    from factprobe.builders.sources.wikidata_api import entities_problem
    from factprobe.builders.templates.llm import answer_problem
    from factprobe.probes.backends.identity import sha256_problem
    checks = {"sparql": results_problem, "wbgetentities": entities_problem,
              "chat": answer_problem, "file-sha256": sha256_problem}
    out: dict[str, list[Path]] = {}
    root = ws / ".cache-factprobe"
    if not root.exists():
        return out
    stray = [p for p in root.rglob("*.tmp-*")]
    assert not stray, f"temporary cache files left behind: {stray}"
    for f in sorted(root.rglob("*.json")):
        namespace = f.parent.parent.name
        entry = json.loads(f.read_text(encoding="utf-8"))
        problem = checks[namespace](entry["response"])
        assert problem is None, f"{f} holds an answer that {problem}"
        out.setdefault(namespace, []).append(f)
    return out


@pytest.mark.parametrize("net", NET_CASES, ids=lambda n: n.case.id)
def test_network_fault(net: Net, workspace, wd_facts, servers):
    shutil.copytree(wd_facts, workspace / "wdfacts")
    servers["proxy"].script = list(net.sparql)
    servers["api"].script = list(net.api)
    servers["chat"].script = list(net.chat)
    _run_case(net.case, workspace, servers["names"])
    cached(workspace)   # whatever a failed run stored is a well-formed answer


def test_cases_are_named_once():
    cases = CASES + READER_CASES + [n.case for n in NET_CASES]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(cases) >= 70


# ----------------------------------------------------------------------- caches

def _ok(proc) -> None:
    assert proc.returncode == 0, proc.stderr


def _fail(proc, ws: Path, before: dict, *needles: str) -> None:
    check(proc, before, snapshot(ws), needles=needles, new_ok=NEW_OK)


def _spoil(files: list[Path], response) -> None:
    """Overwrite cache entries as an older factprobe (or a damaged disk) might have left them:
    the first one truncated, the others holding ``response``."""
    for i, f in enumerate(files):
        entry = json.loads(f.read_text(encoding="utf-8"))
        text = json.dumps({**entry, "response": response})
        f.write_text(text[:10] if i == 0 else text, encoding="utf-8")


def test_sparql_answer_of_the_wrong_shape_is_not_cached(workspace, flaky_proxy):
    argv = ["build", "facts", "--source", "sparql", "--endpoint", flaky_proxy.url, "--relations",
            "P36", "--retries", "0", "--out", "out"]
    flaky_proxy.script = [(200, JSON_TYPE, MISSING_VAR)]
    before = snapshot(workspace)
    _fail(run(argv, cwd=workspace), workspace, before, "?o")
    assert "sparql" not in cached(workspace)
    _ok(run(argv, cwd=workspace))   # the next run asks again: no --refresh needed
    assert (workspace / "out" / "facts.parquet").is_file()


def test_bad_sparql_entries_on_disk_are_fetched_again(workspace, flaky_proxy):
    argv = ["build", "facts", "--source", "sparql", "--endpoint", flaky_proxy.url, "--relations",
            "P36", "--retries", "0"]
    _ok(run([*argv, "--out", "first"], cwd=workspace))
    entries = cached(workspace)["sparql"]
    asked = len(flaky_proxy.requests)
    _spoil(entries, {"head": {"vars": ["s", "o"]}, "results": {"bindings": [{}]}})
    # with the service down, a spoiled entry is not replayed: one line, nothing written
    flaky_proxy.script = [(503, {})]
    before = snapshot(workspace)
    _fail(run([*argv, "--out", "second"], cwd=workspace), workspace, before, "503")
    flaky_proxy.script = []
    _ok(run([*argv, "--out", "second"], cwd=workspace))
    assert len(flaky_proxy.requests) == asked + 1 + len(entries)   # every spoiled one re-asked
    assert len(cached(workspace)["sparql"]) == len(entries)       # and overwritten, well formed
    assert ((workspace / "first" / "facts.parquet").read_bytes()
            == (workspace / "second" / "facts.parquet").read_bytes())


def test_wikidata_answer_of_the_wrong_shape_is_not_cached(workspace, wd_facts, servers):
    shutil.copytree(wd_facts, workspace / "wdfacts")
    api = servers["api"]
    argv = ["build", "aliases", "--facts", "wdfacts", "--api-url", api.url, "--retries", "0",
            "--out", "out"]
    api.fail(1, "shape")
    before = snapshot(workspace)
    _fail(run(argv, cwd=workspace), workspace, before, "aliases")
    assert "wbgetentities" not in cached(workspace)
    _ok(run(argv, cwd=workspace))
    assert (workspace / "out" / "facts.parquet").is_file()


def test_bad_wikidata_entries_on_disk_are_fetched_again(workspace, wd_facts, servers):
    shutil.copytree(wd_facts, workspace / "wdfacts")
    api = servers["api"]
    argv = ["build", "aliases", "--facts", "wdfacts", "--api-url", api.url, "--retries", "0"]
    _ok(run([*argv, "--out", "first"], cwd=workspace))
    entries = cached(workspace)["wbgetentities"]
    asked = len(api.requests)
    _spoil(entries, {"entities": {"Q142": {"aliases": {"en": 5}}}})
    _ok(run([*argv, "--out", "second"], cwd=workspace))
    assert len(api.requests) == asked + len(entries)
    assert len(cached(workspace)["wbgetentities"]) == len(entries)
    assert ((workspace / "first" / "facts.parquet").read_bytes()
            == (workspace / "second" / "facts.parquet").read_bytes())


def test_llm_answer_without_text_is_not_cached(workspace, servers):
    put("td/P1.yaml", YAML_OK)(workspace)
    chat = servers["chat"]
    argv = list(expand(paraphrase(), servers["names"]))
    chat.script = [("raw", NULL_CHAT)]
    before = snapshot(workspace)
    _fail(run(argv, cwd=workspace), workspace, before, "without text")
    assert "chat" not in cached(workspace)
    _ok(run(argv, cwd=workspace))
    assert (workspace / "out" / "templates.parquet").is_file()


def test_bad_llm_entries_on_disk_are_fetched_again(workspace, servers):
    put("td/P1.yaml", YAML_OK)(workspace)
    chat = servers["chat"]
    argv = [a for a in expand(paraphrase(), servers["names"]) if a not in ("--out", "out")]
    _ok(run([*argv, "--out", "first"], cwd=workspace))
    entries = cached(workspace)["chat"]
    asked = len(chat.requests)
    _spoil(entries, {"text": None})
    # without an endpoint to ask, a spoiled answer is a miss, reported as one
    offline = [a for a in argv if a not in ("--llm-base-url", chat.url)]
    before = snapshot(workspace)
    _fail(run([*offline, "--out", "second"], cwd=workspace), workspace, before,
          "no cached answer")
    _ok(run([*argv, "--out", "second"], cwd=workspace))
    assert len(chat.requests) == asked + len(entries)
    assert len(cached(workspace)["chat"]) == len(entries)


def test_the_checks_refuse_only_what_they_must(workspace):
    """Inputs at the edge of what is accepted still build: a misprimes dataset as --facts of
    fktc (its negatives are drawn again), a manifest without a kind (judged by its columns),
    a CSV with a byte-order mark, and a timeout under one second."""
    _ok(run(["build", "fktc", "--facts", "misprimes", "--templates", "templates", "--out", "f2",
             "--quiet"], cwd=workspace))
    manifest = json.loads((workspace / "aliases" / "dataset.json").read_text())
    del manifest["kind"]
    (workspace / "aliases" / "dataset.json").write_text(json.dumps(manifest))
    _ok(run([*mc(), "--out", "mc2", "--quiet"], cwd=workspace))   # the last --out counts
    (workspace / "t.csv").write_bytes(b"\xef\xbb\xbf" + CSV_OK.encode())
    _ok(run(["build", "facts", "--source", "csv", "--path", "t.csv", "--relations", "all",
             "--out", "csv", "--quiet"], cwd=workspace))
    _ok(run(["build", "facts", "--source", "rdf", "--path", KG, "--relations", "rel:capital",
             "--timeout", "0.5", "--limit", "3", "--out", "small", "--quiet"], cwd=workspace))
    assert pq.read_table(workspace / "small" / "facts.parquet").num_rows == 3
