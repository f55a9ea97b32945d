"""The Hub dataset card (``README.md``): YAML metadata the Hub and ``datasets`` read, and a body,
generated from ``dataset.json``, that says exactly how the dataset was built.

Everything here is a pure function of the manifest, the exported tables' layout and the version
information passed in: the same dataset gives the same card, byte for byte.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from builders.core.tables import factprobe_version
from builders.publish.card_sections import built_section, schema_section
from builders.publish.citations import PAPERS, toolkit_bibtex


@dataclass(frozen=True)
class CardOptions:
    repo_id: str
    license: str | None = None    # None: chosen from the source, see default_license
    tag: str | None = None
    revision: str | None = None


@dataclass(frozen=True)
class RepoVersion:
    git_revision: str = "unknown"
    dvc_stage: str | None = None
    dvc_md5: str | None = None


# pretty name, Hub task categories, Hub task ids, the papers whose methods the kind serves
KINDS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    "facts": ("Knowledge-graph facts", ["question-answering", "text-generation", "fill-mask"],
              ["open-domain-qa"], ["zp-lke", "belief", "monitor"]),
    "mc": ("Multiple-choice fact questions (T-REx-MC construction)",
           ["multiple-choice", "question-answering"], ["multiple-choice-qa"], ["zp-lke"]),
    "nobel": ("Nobel laureates and their birth years", ["question-answering", "multiple-choice"],
              [], ["zp-lke"]),
}
_OTHER_KIND = ("Factual-knowledge probes", ["question-answering"], [], ["zp-lke", "belief",
                                                                       "monitor"])

METHODS = {
    "zp-lke": "ZP-LKE (Wu et al., WSDM 2025): zero-prompt many-shot probing, in-context "
              "(subject, object) pairs of one relation; multiple-choice accuracy over `choices` "
              "and response accuracy against `answers` (`factprobe eval zp-lke`).",
    "belief": "BELIEF / BELIEF-ICL (Zhao, Yoshinaga and Oba): multi-prompt probing, subject and "
              "object aliases x templates; accuracy, consistency and over-confidence "
              "(`factprobe eval belief`, `factprobe eval belief-icl`).",
    "monitor": "MONITOR (Wang, Haddow, Birch and Peng): reliability of the answer distribution "
               "under paraphrased prompts and in-context interference (`factprobe eval monitor`).",
}

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
    """The source of the facts at the bottom of a chain of derived datasets (mc <- aliases <-
    facts): that is where the license and the language come from."""
    src = dict(manifest.get("source") or {})
    while isinstance(src.get("facts_source"), dict):
        src = src["facts_source"]
    return src


def source_kind(manifest: Mapping[str, Any]) -> str:
    """``wikidata``, ``sparql``, ``rdf``, ``trex``, ``csv`` or what the manifest says.

    Graph sources record a ``type`` tag; T-REx and CSV readers record their own provenance
    fields instead, so those are recognised by shape.

    >>> source_kind({"source": {"type": "facts", "facts_source": {"kind": "lama", "files": {}}}})
    'trex'
    >>> source_kind({"source": {"type": "sparql:http://x/q"}})
    'sparql'
    """
    src = root_source(manifest)
    tag = str(src.get("type") or "")
    if tag:
        return tag.split(":", 1)[0]
    if src.get("kind") in ("lama", "hf"):
        return "trex"
    if "delimiter" in src:
        return "csv"
    return str((manifest.get("params") or {}).get("source") or "unknown")


def default_license(manifest: Mapping[str, Any]) -> tuple[str, str]:
    """(license id, why) for a dataset, from where its facts came from.

    T-REx is CC BY-SA 4.0, and share-alike binds whatever is derived from it. Wikidata is CC0,
    which allows any license: CC BY 4.0 asks users to credit the build, which is what the card
    is for. For the bundled sample and for users' own graphs we cannot know the upstream terms,
    so the default is CC BY 4.0 with a note to check them (and ``--license`` to change it).
    """
    kind = source_kind(manifest)
    if kind == "trex":
        return "cc-by-sa-4.0", ("derived from T-REx, which is licensed CC BY-SA 4.0; "
                                "share-alike applies to this derived dataset")
    if kind in ("wikidata", "wikidata-dump"):
        return "cc-by-4.0", ("derived from Wikidata, whose data is CC0; CC BY 4.0 asks you to "
                             "credit this build")
    return "cc-by-4.0", (f"built from a `{kind}` source, whose own license factprobe cannot "
                         f"know: check that its terms allow CC BY 4.0, or publish with "
                         f"--license to match them")


def language(manifest: Mapping[str, Any]) -> str:
    params = manifest.get("params") or {}
    return str(params.get("lang") or root_source(manifest).get("lang") or "en")


def _source_datasets(manifest: Mapping[str, Any]) -> list[str]:
    src = root_source(manifest)
    if source_kind(manifest) == "trex" and src.get("kind") == "hf" and "/" in str(src.get("path")):
        return [f"extended|{src['path']}"]  # built from a Hub copy of T-REx (relbert/t_rex)
    return ["original"]


def _tags(manifest: Mapping[str, Any]) -> list[str]:
    tags = ["factual-knowledge", "knowledge-probing", "knowledge-graph", "factprobe"]
    kind = manifest.get("kind")
    if kind == "mc":
        tags += ["multiple-choice", "t-rex-mc"]
    if kind == "nobel":
        tags.append("nobel-prize")
    src = source_kind(manifest)
    if src in ("wikidata", "trex"):
        tags.append({"wikidata": "wikidata", "trex": "t-rex"}[src])
    return tags


def card_metadata(manifest: Mapping[str, Any], layout: Mapping[str, Any],
                  options: CardOptions) -> dict:
    """The YAML header as a plain dict (the keys of ``huggingface_hub.DatasetCardData``)."""
    pretty, tasks, task_ids, _ = KINDS.get(manifest.get("kind"), _OTHER_KIND)
    tables = layout["tables"]
    main = tables.get("facts") or max(tables.values(), key=lambda t: t["rows"])
    configs = []
    for name, entry in tables.items():
        config = {"config_name": name,
                  "data_files": [{"split": s, "path": info["path"]}
                                 for s, info in entry["splits"].items()]}
        if name == "facts":
            config["default"] = True
        configs.append(config)
    meta = {
        "license": options.license or default_license(manifest)[0],
        "language": [language(manifest)],
        "pretty_name": f"{pretty}: {manifest.get('name', '')}",
        "task_categories": tasks,
        "size_categories": [size_category(main["rows"])],
        "source_datasets": _source_datasets(manifest),
        "tags": _tags(manifest),
        "configs": configs,
    }
    if task_ids:
        meta["task_ids"] = task_ids
    return meta


def render_card(manifest: Mapping[str, Any], layout: Mapping[str, Any], options: CardOptions,
                version: RepoVersion, relation_labels: Mapping[str, str] | None = None) -> str:
    """The whole ``README.md``: YAML header between ``---`` lines, then the body."""
    from huggingface_hub import DatasetCardData
    data = DatasetCardData(**card_metadata(manifest, layout, options))
    body = card_body(manifest, layout, options, version, relation_labels or {})
    return f"---\n{data.to_yaml()}\n---\n\n{body}"


def _summary(manifest: Mapping[str, Any]) -> str:
    kind = manifest.get("kind")
    params = manifest.get("params") or {}
    if kind == "mc":
        n = params.get("choices")
        chance = (manifest.get("counts") or {}).get("chance")
        return (f"Multiple-choice questions built like T-REx-MC (Wu et al., WSDM 2025). Each row "
                f"asks for the object of one (subject, relation) pair and has {n} choices in "
                f"`choices`: the gold answer (`object`) exactly once, at a random position, and "
                f"{n - 1 if isinstance(n, int) else 'the other'} distractors drawn from the "
                f"other objects of the same relation, never another correct answer of the "
                f"subject (`answers`). Chance accuracy is 1/{n}"
                + (f" = {chance:g}." if isinstance(chance, (int, float)) else "."))
    if kind == "nobel":
        return (f"Nobel laureates up to {params.get('max_year', 'the last year built')} with "
                f"birth year, award years, fields and gender (`laureates`), and one birth-year "
                f"fact per laureate (`facts`): the ZP-LKE paper's Nobel dataset (App. A.1).")
    if kind == "facts":
        return ("Facts (subject, relation, object) from a knowledge graph, one row per unique "
                "triple, with preferred labels, other names (`subject_aliases`, "
                "`object_aliases`) and every correct object of the (subject, relation) pair in "
                "`answers`, so a probe can accept any of them.")
    return f"A factprobe dataset of kind `{kind}`."


def _usage(repo: str, options: CardOptions, default: str) -> list[str]:
    ref = options.tag or options.revision
    rev = f', revision="{ref}"' if ref else ""
    at = f"@{ref}" if ref else ""
    return [
        "## Loading", "",
        "```python", "from datasets import load_dataset", "",
        f'ds = load_dataset("{repo}", "{default}"{rev})', "```", "",
        "With factprobe, any command that takes a dataset folder takes the Hub id too:", "",
        "```bash",
        f"factprobe eval zp-lke --dataset hf://{repo}{at} --model EleutherAI/pythia-1b "
        f"--out results/",
        "```", "",
        f"`hf://{repo}{at}` is downloaded and turned back into the exact factprobe dataset "
        f"folder (`{default}.parquet` in its original row order, and `dataset.json`).", ""]


def _splits_section(layout: Mapping[str, Any]) -> list[str]:
    lines = ["## Configs and splits", "", "| config | split | rows | file |", "|---|---|---|---|"]
    notes = []
    for name, entry in layout["tables"].items():
        for split, info in entry["splits"].items():
            lines.append(f"| `{name}` | `{split}` | {info['rows']:,} | `{info['path']}` |")
        if not entry["split_column"]:
            notes.append(f"`{name}` has no `split` column: the whole table is the `train` split.")
        elif entry.get("unsplit_as_train"):
            notes.append(f"`{name}` is not split (its `split` column is empty): the whole table "
                         f"is the `train` split.")
        elif "unsplit" in entry["splits"]:
            notes.append(f"`{name}` rows with an empty `split` are the `unsplit` split.")
    lines.append("")
    if notes:
        lines += [*notes, ""]
    lines += ["Splits come from the `split` column, which every file keeps; the row order "
              "within a split is the built table's. `factprobe_layout.json` records how the "
              "splits interleave, so the original tables are restored exactly.", ""]
    return lines


def _version_section(manifest: Mapping[str, Any], layout: Mapping[str, Any],
                     options: CardOptions, version: RepoVersion) -> list[str]:
    rows = [("dataset", f"`{manifest.get('name')}` (kind `{manifest.get('kind')}`)"),
            ("schema version", str(manifest.get("schema_version"))),
            ("built with", f"factprobe {manifest.get('factprobe_version')}"),
            ("exported with", f"factprobe {factprobe_version()}"),
            ("git revision", f"`{version.git_revision}`")]
    if version.dvc_md5:
        rows.append(("DVC lock hash", f"`{version.dvc_md5}` (stage `{version.dvc_stage}`, "
                                      f"`dvc.lock`)"))
    else:
        rows.append(("DVC lock hash", "none (the folder is not a stage output in a dvc.lock)"))
    for name, entry in layout["tables"].items():
        rows.append((f"`{name}.parquet` sha256", f"`{entry['sha256']}`"))
    if options.tag:
        rows.append(("Hub tag", f"`{options.tag}`"))
    if options.revision:
        rows.append(("Hub branch", f"`{options.revision}`"))
    ref = options.tag or options.revision
    lines = ["## Version", "", "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), ""]
    lines.append(f"Cite a fixed version as `hf://{options.repo_id}@{ref}`." if ref else
                 "Publish with `--tag` to give this version a name that can be cited.")
    return [*lines, ""]


def card_body(manifest: Mapping[str, Any], layout: Mapping[str, Any], options: CardOptions,
              version: RepoVersion, relation_labels: Mapping[str, str]) -> str:
    pretty, _, _, papers = KINDS.get(manifest.get("kind"), _OTHER_KIND)
    license_id = options.license or default_license(manifest)[0]
    why = (default_license(manifest)[1] if options.license is None
           else "chosen by the publisher (--license)")
    default = "facts" if "facts" in layout["tables"] else next(iter(layout["tables"]))
    lines = [f"# {pretty}: {manifest.get('name')}", "", _summary(manifest), "",
             f"Built with [factprobe](#citation) from a `{source_kind(manifest)}` source; "
             f"everything below comes from the build's manifest (`dataset.json`, "
             f"included unchanged).", ""]
    lines += _usage(options.repo_id, options, default)
    lines += _splits_section(layout)
    lines += built_section(manifest, relation_labels)
    lines += schema_section(layout)
    lines += ["## Methods this dataset serves", ""]
    lines += [f"- {METHODS[p]}" for p in papers] + [""]
    lines += ["## License", "", f"`{license_id}`: {why}.", ""]
    lines += _version_section(manifest, layout, options, version)
    lines += ["## Citation", "", "If you use this dataset, cite the toolkit that built it and the "
              "paper(s) whose construction or method you use:", "", "```bibtex",
              toolkit_bibtex(), ""]
    for p in [*papers, *(q for q in PAPERS if q not in papers)]:
        lines += [PAPERS[p], ""]
    lines[-1] = "```"
    return "\n".join(lines) + "\n"
