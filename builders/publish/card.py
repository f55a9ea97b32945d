"""The Hub dataset card (``README.md``): YAML metadata the Hub and ``datasets`` read, and a body
in the sections of the Hugging Face dataset card template, generated from ``dataset.json`` (its
``provenance`` chain most of all) and what the publisher says (:mod:`card_meta`).

Titles, tags and citations say what the dataset really is: a multiple-choice set is "T-REx-MC"
only when its facts came from T-REx; built from anything else it is a "multiple-choice probing
set built with the T-REx-MC construction from <source>", and it cites the papers whose
construction or method it serves, no others.

Everything here is a pure function of the manifest, the exported tables' layout, the options and
the version information passed in: the same dataset gives the same card, byte for byte. The
prose of the sections is :mod:`~factprobe.builders.publish.card_text`; the long tables
:mod:`~factprobe.builders.publish.card_sections`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from factprobe.core import provenance as prov
from factprobe.core.markdown import code, escape
from factprobe.core.tables import factprobe_version
from factprobe.builders.publish import card_text
from factprobe.builders.publish.card_sections import built_section, fields_section, splits_section
from factprobe.builders.publish.citations import PAPERS, toolkit_bibtex
from factprobe.builders.sources.table import SOURCES, Card, recorded_source


@dataclass(frozen=True)
class MethodText:
    """What the card says of a probing method's paper: plain data from the table of methods
    (the publish command passes it; this layer cannot import the methods)."""
    paper: str                    # a key of citations.PAPERS ("": a method without one)
    text: str                     # its line under Supported Tasks and Methods
    kinds: tuple[str, ...]        # the dataset kinds it serves: reads, or whose construction
    #                               follows its paper


@dataclass(frozen=True)
class CardOptions:
    repo_id: str
    license: str | None = None    # None: chosen from the source, see default_license
    tag: str | None = None
    revision: str | None = None
    pretty_name: str | None = None    # None: the construction title (see title)
    description: str | None = None
    authors: tuple[str, ...] = ()
    methods: tuple[MethodText, ...] = ()   # the methods a dataset may serve (none: no paper)


@dataclass(frozen=True)
class RepoVersion:
    git_revision: str = "unknown"
    dvc_stage: str | None = None
    dvc_md5: str | None = None


@dataclass(frozen=True)
class Kind:
    tasks: tuple[str, ...]        # Hub task categories
    task_ids: tuple[str, ...]     # Hub task ids
    tags: tuple[str, ...] = ()


KINDS: dict[str, Kind] = {
    "facts": Kind(("question-answering", "text-generation"), ("open-domain-qa",)),
    "mc": Kind(("multiple-choice", "question-answering"), ("multiple-choice-qa",),
               ("multiple-choice",)),
    "nobel": Kind(("question-answering", "multiple-choice"), (), ("nobel-prize",)),
    "misprimes": Kind(("question-answering",), (), ("misprimes",)),
    "multiprompt": Kind(("fill-mask", "question-answering"), (), ("multi-prompt",)),
    "fktc": Kind(("question-answering",), (), ("paraphrases", "misprimes")),
    "templates": Kind(("text-generation",), (), ("prompt-templates",)),
}
_OTHER = Kind(("question-answering",), ())

_SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
          (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"),
          (1_000_000_000, "100M<n<1B"), (10 ** 10, "1B<n<10B"), (10 ** 11, "10B<n<100B"),
          (10 ** 12, "100B<n<1T")]


def size_category(rows: int) -> str:
    """The Hub's size bucket for a row count.

    >>> [size_category(n) for n in (0, 999, 1000, 25_000, 10 ** 13)]
    ['n<1K', 'n<1K', '1K<n<10K', '10K<n<100K', 'n>1T']
    """
    for bound, name in _SIZES:
        if rows < bound:
            return name
    return "n>1T"


def root_source(manifest: Mapping[str, Any]) -> dict:
    """The source of the facts at the bottom of the chain of derived datasets (mc <- aliases <-
    facts): where the license and the language come from. Read from ``provenance``; a dataset
    built before provenance was recorded is followed through ``source.facts_source``."""
    if isinstance(manifest.get("provenance"), dict):
        return prov.facts_root(manifest["provenance"])
    src = dict(manifest.get("source") or {})
    while isinstance(src.get("facts_source"), dict):
        src = src["facts_source"]
    return src


def source_kind(manifest: Mapping[str, Any]) -> str:
    """``wikidata``, ``sparql``, ``rdf``, ``trex``, ``csv`` or what the manifest says.

    Graph sources record a ``type`` tag; T-REx and CSV readers record their own provenance
    fields instead, so those are recognised by shape (the sources' table,
    :func:`~factprobe.builders.sources.table.recorded_source`).

    >>> source_kind({"source": {"type": "facts", "facts_source": {"kind": "lama", "files": {}}}})
    'trex'
    >>> source_kind({"source": {"type": "sparql:http://x/q"}})
    'sparql'
    """
    src = root_source(manifest)
    tag = str(src.get("type") or "")
    if tag:
        return tag.split(":", 1)[0]
    return recorded_source(src) or str((manifest.get("params") or {}).get("source") or "unknown")


def _card(manifest: Mapping[str, Any]) -> Card | None:
    """The card text of the facts' source (an entry of the sources' table), if it is one."""
    source = SOURCES.get(source_kind(manifest))
    return source.card if source else None


def describe_source(manifest: Mapping[str, Any]) -> str:
    """The source of the facts, in words, for titles and summaries.

    >>> describe_source({"source": {"type": "rdf:langs.ttl", "path": "kg/langs.ttl"}})
    'the RDF graph `langs.ttl`'
    >>> describe_source({"source": {"type": "facts", "facts_source": {"kind": "lama"}}})
    'T-REx'
    """
    src, kind, card = root_source(manifest), source_kind(manifest), _card(manifest)
    if card is not None:
        return card.describe(src)
    if kind == "fktc-import":
        return "the MONITOR authors' FKTC files"
    name = str(src.get("path") or "").rstrip("/").rsplit("/", 1)[-1]
    return f"a {code(kind)} source" + (f" ({code(name)})" if name else "")


def title(manifest: Mapping[str, Any]) -> str:
    """What the dataset is, from its construction and its source.

    >>> title({"kind": "mc", "source": {"type": "rdf:langs.ttl", "path": "langs.ttl"}})
    'Multiple-choice probing set built with the T-REx-MC construction from the RDF graph `langs.ttl`'
    >>> title({"kind": "mc", "source": {"type": "facts", "facts_source": {"kind": "lama"}}})
    'T-REx-MC: multiple-choice fact questions from T-REx'
    """
    kind, src, card = manifest.get("kind"), describe_source(manifest), _card(manifest)
    if kind == "mc":
        return (card.mc_title if card is not None and card.mc_title else
                f"Multiple-choice probing set built with the T-REx-MC construction from {src}")
    if kind == "fktc" and source_kind(manifest) == "fktc-import":
        return "FKTC, the MONITOR test corpus, imported from the authors' files"
    return {
        "facts": f"Knowledge-graph facts from {src}",
        "nobel": f"Nobel laureates and their birth years, from {src}",
        "misprimes": f"Facts with misprimes (wrong objects for in-context interference) from "
                     f"{src}",
        "multiprompt": f"Multi-prompt probing set built with the MyriadLAMA construction from "
                       f"{src}",
        "fktc": f"Reliability probing set built with the FKTC construction from {src}",
        "templates": f"Prompt templates for the relations of {src}",
    }.get(str(kind), f"factprobe dataset of kind {code(kind)} from {src}")


def default_license(manifest: Mapping[str, Any]) -> tuple[str, str]:
    """(license id, why) for a dataset, from where its facts came from.

    T-REx is CC BY-SA 4.0, and share-alike binds whatever is derived from it. Wikidata is CC0,
    which allows any license: CC BY 4.0 asks users to credit the build, which is what the card
    is for. For the bundled sample and for users' own graphs we cannot know the upstream terms,
    so the default is CC BY 4.0 with a note to check them (and ``--license`` to change it).
    """
    kind, card = source_kind(manifest), _card(manifest)
    if card is not None and card.license is not None:
        return card.license
    return "cc-by-4.0", (f"built from a {code(kind)} source, whose own license factprobe "
                         f"cannot know: check that its terms allow CC BY 4.0, or publish with "
                         f"--license to match them")


def language(manifest: Mapping[str, Any]) -> str:
    params = manifest.get("params") or {}
    return str(params.get("lang") or root_source(manifest).get("lang") or "en")


def _source_datasets(manifest: Mapping[str, Any]) -> list[str]:
    card = _card(manifest)
    hub = card.hub(root_source(manifest)) if card is not None and card.hub else None
    return [hub or "original"]   # e.g. built from a Hub copy of T-REx (relbert/t_rex)


def kind_of(manifest: Mapping[str, Any]) -> Kind:
    return KINDS.get(str(manifest.get("kind")), _OTHER)


def tags(manifest: Mapping[str, Any]) -> list[str]:
    """Tags that hold for this dataset: ``t-rex-mc`` only for multiple choice built from T-REx."""
    out = ["factual-knowledge", "knowledge-probing", "knowledge-graph", "factprobe",
           *kind_of(manifest).tags]
    card = _card(manifest)
    if manifest.get("kind") == "mc" and card is not None and card.mc_tag:
        out.append(card.mc_tag)
    if manifest.get("kind") == "fktc" and source_kind(manifest) == "fktc-import":
        out.append("fktc")
    if card is not None and card.tag:
        out.append(card.tag)
    return out


def main_table(layout: Mapping[str, Any]) -> str:
    """The default config: ``facts`` when there is one, else the largest table."""
    tables = layout["tables"]
    if "facts" in tables:
        return "facts"
    return max(tables, key=lambda n: (tables[n]["rows"], n))


def card_metadata(manifest: Mapping[str, Any], layout: Mapping[str, Any],
                  options: CardOptions) -> dict:
    """The YAML header as a plain dict (the keys of ``huggingface_hub.DatasetCardData``)."""
    kind = kind_of(manifest)
    tables = layout["tables"]
    main = main_table(layout)
    configs = []
    for name, entry in tables.items():
        config = {"config_name": name,
                  "data_files": [{"split": s, "path": info["path"]}
                                 for s, info in entry["splits"].items()]}
        if name == main:
            config["default"] = True
        configs.append(config)
    meta = {
        "license": options.license or default_license(manifest)[0],
        "language": [language(manifest)],
        "pretty_name": options.pretty_name or title(manifest),
        "task_categories": list(kind.tasks),
        "size_categories": [size_category(tables[main]["rows"])],
        "source_datasets": _source_datasets(manifest),
        "tags": tags(manifest),
        "configs": configs,
    }
    if kind.task_ids:
        meta["task_ids"] = list(kind.task_ids)
    return meta


def render_card(manifest: Mapping[str, Any], layout: Mapping[str, Any], options: CardOptions,
                version: RepoVersion, relation_labels: Mapping[str, str] | None = None,
                example: Mapping[str, Any] | None = None) -> str:
    """The whole ``README.md``: YAML header between ``---`` lines, then the body."""
    from huggingface_hub import DatasetCardData
    data = DatasetCardData(**card_metadata(manifest, layout, options))
    body = card_body(manifest, layout, options, version, relation_labels or {}, example)
    return f"---\n{data.to_yaml()}\n---\n\n{body}"


def _usage(repo: str, options: CardOptions, main: str, others: list[str]) -> list[str]:
    ref = options.tag or options.revision
    rev = f', revision="{ref}"' if ref else ""
    at = f"@{ref}" if ref else ""
    lines = ["### Loading", "", "```python", "from datasets import load_dataset", "",
             f'ds = load_dataset("{repo}"{rev})  # the default config, `{main}`']
    lines += [f'{name} = load_dataset("{repo}", "{name}"{rev})' for name in others]
    return [*lines, "```", "",
            "With factprobe, any command that takes a dataset folder takes the Hub id too "
            f"(`--dataset hf://{repo}{at}`): it is downloaded and turned back into the exact "
            f"factprobe dataset folder (every table in its original row order, and "
            f"`dataset.json`).", ""]


def _version_section(manifest: Mapping[str, Any], layout: Mapping[str, Any],
                     options: CardOptions, version: RepoVersion) -> list[str]:
    rows = [("dataset", f"{code(manifest.get('name'))} (kind {code(manifest.get('kind'))})"),
            ("schema version", str(manifest.get("schema_version"))),
            ("built with", f"factprobe {manifest.get('factprobe_version')}"),
            ("exported with", f"factprobe {factprobe_version()}"),
            ("git revision", code(version.git_revision))]
    if version.dvc_md5:
        rows.append(("DVC lock hash", f"{code(version.dvc_md5)} (stage "
                                      f"{code(version.dvc_stage)}, "
                                      f"`dvc.lock`)"))
    else:
        rows.append(("DVC lock hash", "none (the folder is not a stage output in a dvc.lock)"))
    for name, entry in layout["tables"].items():
        rows.append((code(f"{name}.parquet") + " sha256", code(entry['sha256'])))
    if options.tag:
        rows.append(("Hub tag", code(options.tag)))
    if options.revision:
        rows.append(("Hub branch", code(options.revision)))
    ref = options.tag or options.revision
    lines = ["### Version", "", "| | |", "|---|---|",
             *(f"| {_pipe(k)} | {_pipe(v)} |" for k, v in rows), ""]
    lines.append(f"Cite a fixed version as {code(f'hf://{options.repo_id}@{ref}')}." if ref else
                 "Publish with `--tag` to give this version a name that can be cited.")
    return [*lines, ""]


def _pipe(cell: str) -> str:
    """A cell of a GitHub table: ``|`` escaped, which GitHub needs even inside code spans."""
    return cell.replace("|", "\\|")


def cited_methods(manifest: Mapping[str, Any], options: CardOptions) -> list[MethodText]:
    """The methods a dataset's card names, one per paper: those its kind serves (the papers
    whose construction or method it serves), in the table's order."""
    out: dict[str, MethodText] = {}
    for method in options.methods:
        if manifest.get("kind") in method.kinds:
            out.setdefault(method.paper or method.text, method)   # a method without a paper
    return list(out.values())


def card_body(manifest: Mapping[str, Any], layout: Mapping[str, Any], options: CardOptions,
              version: RepoVersion, relation_labels: Mapping[str, str],
              example: Mapping[str, Any] | None = None) -> str:
    methods = cited_methods(manifest, options)
    papers = [m.paper for m in methods if m.paper]
    license_id = options.license or default_license(manifest)[0]
    why = (default_license(manifest)[1] if options.license is None
           else "chosen by the publisher")
    main = main_table(layout)
    others = [n for n in layout["tables"] if n != main]
    heading = escape(options.pretty_name) if options.pretty_name else title(manifest)
    lines = [f"# Dataset Card for {heading}", ""]
    if options.description:
        lines += [options.description.strip(), ""]
    lines += ["## Dataset Summary", "", f"**{title(manifest)}.**", "",
              card_text.summary(manifest), "",
              f"Built with [factprobe](#citation-information) from {describe_source(manifest)}; "
              f"everything below comes from the build's manifest (`dataset.json`, included "
              f"unchanged), which records the whole chain of builds back to the source.", ""]
    lines += ["### Supported Tasks and Methods", ""]
    lines += ([f"- {m.text}" for m in methods] or
              ["- Any `factprobe build` that reads a dataset of this kind."]) + [""]
    lines += ["### Languages", "", f"Labels and templates are in {code(language(manifest))}.", ""]
    lines += _usage(options.repo_id, options, main, others)
    lines += ["## Dataset Structure", ""]
    if example:
        lines += card_text.instance(main, example)
    lines += fields_section(layout, main)
    lines += splits_section(layout, main)
    lines += ["## Dataset Creation", "", "### Curation Rationale", "",
              card_text.rationale(manifest), ""]
    lines += built_section(manifest, relation_labels)
    lines += ["### Annotations", "", card_text.annotations(manifest), "",
              "### Personal and Sensitive Information", "", card_text.personal(manifest), ""]
    lines += ["## Considerations for Using the Data", "", "### Discussion of Biases", "",
              *card_text.biases(manifest), "", "### Other Known Limitations", "",
              *card_text.limitations(manifest), ""]
    lines += ["## Additional Information", "", "### Dataset Curators", "",
              (", ".join(options.authors) if options.authors else
               "Not given (publish with `--author NAME` or `authors:` in `--card-meta`)") + ".",
              "", "### Licensing Information", "", f"{code(license_id)}: {why}.", ""]
    lines += _version_section(manifest, layout, options, version)
    lines += ["### Citation Information", "",
              "If you use this dataset, cite the toolkit that built it"
              + (" and the paper(s) whose construction or method it serves:" if papers else ":"),
              "", "```bibtex", toolkit_bibtex(), ""]
    for p in papers:
        lines += [PAPERS[p], ""]
    lines[-1] = "```"
    return "\n".join(lines) + "\n"
