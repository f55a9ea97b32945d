"""The facts sources of ``factprobe build facts --source NAME``: one explicit table.

Each entry names the reader (a function of the build's :class:`FactsConfig` that returns a
:class:`~factprobe.builders.datasets.facts.SourceResult`, or a context manager yielding one when the
source holds temporary files while it is read), the flag the source reads its input from, and
what the rest of the toolkit says and does about the source: its dataset card text
(:class:`Card`), how ``factprobe init`` gets other names for it and whether it sizes params.yaml
from it, and whether ``factprobe build nobel`` reads it. The CLI's ``--source`` choices (of
``build facts``, ``build nobel`` and ``init``), the flag checks, the dispatch, init's pipeline
and the card all come from this table, so a new source is its module plus one entry here (see
docs/extending.md, "Adding a source").

Readers import their module when called: listing the sources loads no parser or client.
"""
from __future__ import annotations

import contextlib
import importlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from factprobe.core.errors import UserError
from factprobe.core.lazy import Lazy
from factprobe.core.markdown import code, escape

if TYPE_CHECKING:  # the builder imports this table; the type is for readers only
    from factprobe.builders.sources.config import FactsConfig
    from factprobe.builders.datasets.facts import SourceResult


Src = Mapping[str, Any]   # a manifest's record of the source (its ``provenance`` source)


def path_name(src: Src) -> str:
    """The last part of the recorded path: the file or folder the facts came from."""
    return str(src.get("path") or "").rstrip("/").rsplit("/", 1)[-1]


def cell(value: Any) -> str:
    """A code span that no backtick in the value can end, safe in a table cell (what the card's
    Source Data bullets write)."""
    return code(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False),
                table_cell=True)


@dataclass(frozen=True)
class Card:
    """What a dataset card says of the source its facts came from (builders/publish/card.py).

    ``describe``: the source in words, for titles and summaries ("the RDF graph `langs.ttl`").
    ``data``: its bullet under Source Data (after "- "); the recorded files, hashes, queries and
    dates follow it whatever the source. ``license``: (Hub license id, why) when the source's
    terms are known; None: CC BY 4.0 and a note to check the source's own terms. ``tag``: a Hub
    tag every dataset from it gets. ``mc_title``/``mc_tag``: the name of a multiple-choice set
    built from it, when it has one of its own (T-REx-MC). ``hub``: the ``source_datasets`` entry
    when the facts came from a Hub dataset. ``shape``: recognises the source's record when it
    has no ``type`` field (readers that record their own provenance fields instead).
    """
    describe: Callable[[Src], str]
    data: Callable[[Src], str]
    license: tuple[str, str] | None = None
    tag: str | None = None
    mc_title: str | None = None
    mc_tag: str | None = None
    hub: Callable[[Src], str | None] | None = None
    shape: Callable[[Src], bool] | None = None


@dataclass(frozen=True)
class Source:
    """A facts source: how to read it, from which flag, and what the rest of the toolkit does
    with it.

    ``reads``: ``"path"`` (a file, folder or id: ``--path``) or ``"endpoint"`` (a URL:
    ``--endpoint``). ``needs``: what the flag takes, for the line that says it is missing
    (``--source NAME needs --FLAG NEEDS``); None when the flag is optional (wikidata has a
    default endpoint, and ``factprobe init`` passes none). ``strict``: the other flag is refused
    rather than ignored. ``card``: its dataset card text. ``aliases``: how ``factprobe init``'s
    pipeline gets other names for subjects and objects (``build aliases --via``: ``graph`` or
    ``wikidata``); None: no aliases stage, the facts' own labels are used. ``unsized``: why init
    does not read the source to size params.yaml; None: init reads it with ``read``.
    ``nobel``: ``factprobe build nobel`` reads laureates from it. ``flags``: the module that
    owns the flags only this source (and those naming the same module) reads: ``NAME``,
    ``OPTIONS`` (a typed dataclass with ``params()``), ``add_flags(parser)`` and
    ``read_flags(args)`` (builders/sources/graph_flags.py); the command line adds each such
    module's flags once, and the source's reader finds its options under
    ``FactsConfig.options[NAME]``. ``summary``: ``build facts``' line counts the facts and
    relations read and what was left out (a published benchmark's release, whose every row is
    imported or accounted for).
    """
    read: Callable[[FactsConfig], SourceResult | contextlib.AbstractContextManager]
    reads: Literal["path", "endpoint"]
    needs: str | None
    card: Card
    strict: bool = True
    aliases: Literal["graph", "wikidata"] | None = None
    unsized: str | None = None
    nobel: bool = False
    flags: str | None = None
    summary: bool = False

    def flags_module(self):
        """The module of the source's own flags (imported now), or None."""
        return importlib.import_module(self.flags) if self.flags else None

    def options_from(self, args) -> dict[str, Any]:
        """The source's own options parsed from the command line by its flags module, keyed
        by its ``NAME`` (what ``FactsConfig.options`` takes); none without one."""
        module = self.flags_module()
        return {module.NAME: module.read_flags(args)} if module else {}

    def with_default_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` with the source's own options at their defaults where a caller (a
        Python one) gave none: the reader and the manifest see what the build used."""
        module = self.flags_module()
        if module is None or module.NAME in options:
            return dict(options)
        return {**options, module.NAME: module.OPTIONS()}


def flag_modules(sources: Mapping[str, Source]) -> list:
    """Each distinct flags module of ``sources``, in table order (the --help groups)."""
    names = list(dict.fromkeys(s.flags for s in sources.values() if s.flags))
    return [importlib.import_module(n) for n in names]


# the built-in sources' readers, imported when a build reads one (builders/sources/readers.py)
_READERS = "factprobe.builders.sources.readers"
_GRAPH_FLAGS = "factprobe.builders.sources.graph_flags"

_WIKIDATA_TERMS = ("cc-by-4.0", "derived from Wikidata, whose data is CC0; CC BY 4.0 asks you to "
                                 "credit this build")


def _hf_copy(src: Src) -> str | None:
    """A Hub copy of T-REx (relbert/t_rex) is the dataset this one extends."""
    return f"extended|{src['path']}" if src.get("kind") == "hf" and "/" in str(src.get("path")) \
        else None


def _trex_data(src: Src) -> str:
    form = "LAMA-style P<id>.jsonl files" if src["kind"] == "lama" else "Hugging Face copy"
    return f"T-REx ({form}) at {cell(src.get('path'))}"


def _bench_card(name: str, license: tuple[str, str] | None = None) -> Card:
    """A published benchmark imported as its authors release it (builders/sources/bench_files.py):
    its release and the files read (with their sha256) follow in the card's Source Data.
    ``license``: where the authors state their data's terms (LAMA's README: CC BY-NC 4.0;
    EntityQuestions' README: MIT); None: the card asks to check them."""
    return Card(lambda src: f"{name} (imported)",
                lambda src: f"{name}, imported from {cell(src.get('path'))} "
                            f"({escape(str(src.get('release') or 'release unknown'))})",
                license=license, tag=name.lower())


# name -> source; the order is the order of --source's choices.
SOURCES: dict[str, Source] = {
    "wikidata": Source(Lazy(_READERS, "graph"), "endpoint", None, Card(
        lambda src: "Wikidata",
        lambda src: f"Wikidata Query Service, endpoint {cell(src.get('endpoint'))}",
        license=_WIKIDATA_TERMS, tag="wikidata"),
        aliases="wikidata", unsized="a wikidata source is read by `dvc repro`, not at init",
        nobel=True, flags=_GRAPH_FLAGS),
    "sparql": Source(Lazy(_READERS, "graph"), "endpoint", "URL", Card(
        lambda src: f"the SPARQL endpoint {code(src.get('endpoint') or str(src.get('type'))[7:])}",
        lambda src: f"SPARQL endpoint {cell(src.get('endpoint') or str(src.get('type'))[7:])}"),
        aliases="graph", unsized="a sparql source is read by `dvc repro`, not at init",
        nobel=True, flags=_GRAPH_FLAGS),
    "rdf": Source(Lazy(_READERS, "graph"), "path", "FILE (Turtle, N-Triples, RDF/XML...)", Card(
        lambda src: f"the RDF graph {code(path_name(src))}",
        lambda src: f"RDF file {cell(src.get('path'))} ({src.get('format', 'RDF')})"),
        aliases="graph", nobel=True, flags=_GRAPH_FLAGS),
    "trex": Source(Lazy(_READERS, "trex"), "path", "(a folder of P<id>.jsonl files, a local copy of "
                                  "relbert/t_rex, or a Hub dataset id)", Card(
        lambda src: "T-REx", _trex_data,
        license=("cc-by-sa-4.0", "derived from T-REx, which is licensed CC BY-SA 4.0; "
                                 "share-alike applies to this derived dataset"),
        tag="t-rex", mc_title="T-REx-MC: multiple-choice fact questions from T-REx",
        mc_tag="t-rex-mc", hub=_hf_copy, shape=lambda src: src.get("kind") in ("lama", "hf"))),
    "csv": Source(Lazy(_READERS, "csv"), "path", "FILE.csv (columns subject, relation, object)", Card(
        lambda src: f"the CSV file {code(path_name(src))}",
        lambda src: f"CSV of triples {cell(src.get('path'))}",
        shape=lambda src: "delimiter" in src)),
    "wikidata-dump": Source(Lazy(_READERS, "wikidata_dump"), "path",
                            "(latest-all.json.bz2 or latest-truthy.nt.bz2)", Card(
        lambda src: f"the Wikidata dump of {escape(src.get('dump_date') or 'an unknown date')}",
        lambda src: f"Wikidata dump {cell(src.get('path'))} ({src.get('format')}, "
                    f"{src.get('compression')}), dated {src.get('dump_date') or 'unknown'}",
        license=_WIKIDATA_TERMS, tag="wikidata"),
        strict=False, aliases="graph", unsized="a Wikidata dump is too large to read at init",
        nobel=True, flags="factprobe.builders.sources.wikidata_dump.flags"),
    "lama": Source(Lazy(_READERS, "lama"), "path", "(LAMA's data/ folder: TREx/, Google_RE/, "
                                                   "relations.jsonl)", _bench_card("LAMA", (
        "cc-by-nc-4.0", "derived from LAMA, whose data is licensed CC BY-NC 4.0 "
                        "(facebookresearch/LAMA)")), summary=True),
    "popqa": Source(Lazy(_READERS, "popqa"), "path", "(PopQA's popQA.tsv)",
                    _bench_card("PopQA"), summary=True),
    "entityquestions": Source(Lazy(_READERS, "entityquestions"), "path",
                              "(EntityQuestions' dataset/ folder: train/, dev/, test/)",
                              _bench_card("EntityQuestions", (
                                  "mit", "derived from EntityQuestions, whose dataset is "
                                         "released under the MIT license")), summary=True),
    "bear": Source(Lazy(_READERS, "bear"), "path", "(a BEAR folder: metadata_relations.json, "
                                                   "P<id>.jsonl)", _bench_card("BEAR"), summary=True),
    "pararel": Source(Lazy(_READERS, "pararel"), "path", "(ParaRel's data/ folder: "
                                                         "pattern_data/graphs_json/, "
                                                         "trex_lms_vocab/)",
                      _bench_card("ParaRel"), summary=True),
}


def recorded_source(src: Src, sources: dict[str, Source] = SOURCES) -> str | None:
    """Which source a manifest's record of the facts' source is: its ``type`` tag (``rdf:...``,
    ``sparql:...``, ``wikidata``), else the first source whose card recognises its shape; None
    for a record of something that is no facts source (``fktc-import``) or of nothing known.

    >>> recorded_source({"type": "sparql:http://x/q"}), recorded_source({"kind": "lama"})
    ('sparql', 'trex')
    """
    tag = str(src.get("type") or "").split(":", 1)[0]
    if tag:
        return tag if tag in sources else None
    return next((name for name, s in sources.items() if s.card.shape and s.card.shape(src)),
                None)


def _readers_of(flag: str, sources: dict[str, Source]) -> str:
    """'rdf, trex and csv': the strict sources reading ``flag``, those requiring it first."""
    names = sorted((n for n, s in sources.items() if s.reads == flag and s.strict),
                   key=lambda n: sources[n].needs is None)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def source_for(name: str, path: str | None, endpoint: str | None,
               sources: dict[str, Source] = SOURCES) -> Source:
    """The source ``name``, once its flags are right: a flag it would ignore is a mistake worth
    a line, not a silent surprise, and a missing one is named.

    >>> source_for("rdf", None, "http://127.0.0.1:9/q")
    Traceback (most recent call last):
    ...
    factprobe.core.errors.UserError: --endpoint is for the sparql and wikidata sources; --source rdf reads --path
    """
    if name not in sources:
        raise UserError(f"unknown --source {name!r}; choose one of {', '.join(sources)}")
    source = sources[name]
    given = {"path": path, "endpoint": endpoint}
    other = "endpoint" if source.reads == "path" else "path"
    if source.strict and given[other]:
        if other == "path":
            raise UserError(f"--path is for the {_readers_of('path', sources)} sources; "
                            f"--source {name} reads from --endpoint")
        raise UserError(f"--endpoint is for the {_readers_of('endpoint', sources)} sources; "
                        f"--source {name} reads --path")
    if source.needs is not None and not given[source.reads]:
        raise UserError(f"--source {name} needs --{source.reads} {source.needs}")
    return source
