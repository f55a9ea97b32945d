"""A chain of every derived dataset, built with the real CLI from a graph file (the Wikidata-shaped
test graph read as a user's RDF file): facts -> aliases -> mc, misprimes, templates ->
multiprompt (from the templates dataset, and from template files), fktc."""
from __future__ import annotations

from pathlib import Path

from factprobe.cli.app import main
from tests.conftest import WIKIDATA_MINI

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = ROOT / "data" / "templates"


def _build(*args: str) -> None:
    assert main(["build", *args, "--quiet"]) == 0, args


def build_chain(t: Path) -> dict[str, Path]:
    g = str(WIKIDATA_MINI)
    _build("facts", "--source", "rdf", "--path", g, "--relations", "P36,P37",
           "--out", str(t / "facts"))
    _build("aliases", "--facts", str(t / "facts"), "--via", "graph", "--path", g,
           "--out", str(t / "aliases"))
    _build("mc", "--facts", str(t / "aliases"), "--out", str(t / "mc"), "--choices", "3",
           "--min-facts", "5", "--min-objects", "5", "--train", "2", "--test", "3")
    _build("misprimes", "--facts", str(t / "aliases"), "--negatives", "2",
           "--type-relation", "P36", "--types", str(t / "facts"), "--out", str(t / "misprimes"))
    _build("templates", "--facts", str(t / "aliases"), "--templates-dir", str(TEMPLATES_DIR),
           "--paraphrases", "0", "--out", str(t / "templates"))
    _build("multiprompt", "--facts", str(t / "aliases"), "--templates", str(t / "templates"),
           "--out", str(t / "multiprompt"))
    _build("multiprompt", "--facts", str(t / "aliases"), "--templates-dir", str(TEMPLATES_DIR),
           "--out", str(t / "multiprompt-dir"))
    _build("fktc", "--facts", str(t / "aliases"), "--templates", str(t / "templates"),
           "--out", str(t / "fktc"))
    return {p.name: p for p in t.iterdir()}
