"""Dataset cards that tell the truth, for a user's own graph: titles and tags from the real
construction and source, the provenance chain in the body, the sections of the Hugging Face
card template, only the papers a dataset serves (with complete BibTeX), the publisher's
metadata from flags or a YAML file, and every kind of dataset loadable with `datasets`."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factprobe.core.tables import base_manifest, file_sha256
from factprobe.builders.publish.card import CardOptions, MethodText, cited_methods, tags, title
from factprobe.builders.publish.citations import PAPERS, bibtex_fields
from factprobe.builders.publish.export import export_hub_folder
from factprobe.cli.publish import card_methods
from tests.builders.publish.test_publish import (
    _expected_splits,
    assert_one_line_exit_2,
    hf_home,  # noqa: F401  (a fixture)
    offline,  # noqa: F401  (a fixture)
    run_cli,
)
from tests.chain_datasets import build_chain
from tests.conftest import WIKIDATA_MINI

MINI_SHA = file_sha256(WIKIDATA_MINI)
SECTIONS = ["## Dataset Summary", "### Supported Tasks and Methods", "### Languages",
            "## Dataset Structure", "### Data Instances", "### Data Fields", "### Data Splits",
            "## Dataset Creation", "### Curation Rationale", "### Source Data",
            "### Annotations", "### Personal and Sensitive Information",
            "## Considerations for Using the Data", "### Discussion of Biases",
            "### Other Known Limitations", "## Additional Information", "### Dataset Curators",
            "### Licensing Information", "### Citation Information"]


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> dict[str, Path]:
    return build_chain(tmp_path_factory.mktemp("chain"))


def _card(folder: Path, out: Path, **options):
    from huggingface_hub import DatasetCard
    options.setdefault("methods", card_methods())   # what `factprobe publish` passes
    hub = export_hub_folder(folder, out, CardOptions(repo_id="me/langs", **options))
    return DatasetCard.load(hub / "README.md"), hub


def _cited_keys(text: str) -> set[str]:
    return set(re.findall(r"^@\w+\{([\w-]+),", text, re.MULTILINE))


def test_user_graph_mc_card_is_not_called_t_rex_mc(chain, tmp_path):
    card, _ = _card(chain["mc"], tmp_path / "hub")
    expected = ("Multiple-choice probing set built with the T-REx-MC construction from the RDF "
                "graph `wikidata_mini.ttl`")
    assert card.data.pretty_name == expected
    assert card.text.startswith(f"\n# Dataset Card for {expected}\n")
    assert "t-rex-mc" not in card.data.tags and "t-rex" not in card.data.tags
    assert "multiple-choice" in card.data.tags
    assert "(T-REx-MC construction)" not in card.content
    assert _cited_keys(card.text) == {"factprobe", "wu2025zplke"}


def test_a_t_rex_mc_is_titled_and_tagged_so():
    manifest = base_manifest("trex-mc", "mc", {"type": "facts", "facts_dataset": "f",
                                               "facts_source": {"kind": "lama", "files": {}}},
                             {"choices": 100}, {"chance": 0.01})
    manifest.pop("provenance")   # a dataset from before provenance: read by its source chain
    assert title(manifest).startswith("T-REx-MC")
    assert "t-rex-mc" in tags(manifest) and "t-rex" in tags(manifest)


@pytest.mark.parametrize("name,paper", [("fktc", "wang2024monitor"),
                                        ("multiprompt", "zhao2024belief"),
                                        ("multiprompt-dir", "zhao2024belief"),
                                        ("misprimes", "wang2024monitor"),
                                        ("templates", None), ("facts", "wu2025zplke")])
def test_cards_show_provenance_and_every_section(chain, tmp_path, name, paper):
    card, hub = _card(chain[name], tmp_path / "hub")
    body = card.text
    assert "unrecorded source" not in body
    assert MINI_SHA in body and "tests/data/wikidata_mini.ttl" in body   # the source file
    assert "factprobe's code: " in body and "the git working tree it ran in: " in body
    positions = [body.find(s + "\n") for s in SECTIONS]
    assert -1 not in positions, [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)                                # in template order
    for table in sorted(p.stem for p in chain[name].glob("*.parquet")):  # every column
        for column in pq.read_schema(chain[name] / f"{table}.parquet").names:
            assert f"| `{column}` |" in body, (table, column)
    if paper:
        assert paper in _cited_keys(body)
    manifest = json.loads((hub / "dataset.json").read_text())
    served = cited_methods(manifest, CardOptions("me/x", methods=card_methods()))
    assert _cited_keys(body) - {"factprobe"} == {
        key for m in served for key in _cited_keys(PAPERS[m.paper])}


def test_every_paper_entry_is_complete():
    expected = {"zp-lke": ("wu2025zplke", "2025", "2404.12957"),
                "belief": ("zhao2024belief", "2024", "2406.12277"),
                "monitor": ("wang2024monitor", "2024", "2310.09820")}
    for key, entry in PAPERS.items():
        fields = bibtex_fields(entry)
        bibkey, year, arxiv = expected[key]
        assert _cited_keys(entry) == {bibkey}
        assert fields["year"] == year and fields["eprint"] == arxiv
        assert fields["url"].startswith("https://") and fields["title"] and fields["author"]
        assert fields.get("booktitle") or fields.get("howpublished"), key   # the venue


def test_kinds_cite_the_papers_of_the_methods_that_read_them():
    from factprobe.evaluators.methods import METHODS
    probe_papers = {m.probe.citation for m in METHODS.values()}
    served = {m.paper for m in card_methods()}
    assert served == probe_papers == set(PAPERS)      # every paper has the card's line

    def papers(kind: str) -> list[str]:
        options = CardOptions("me/x", methods=card_methods())
        return [m.paper for m in cited_methods({"kind": kind}, options)]
    assert papers("mc") == ["zp-lke"] and papers("fktc") == ["monitor"]
    assert papers("multiprompt") == ["belief"] and papers("templates") == ["belief", "monitor"]
    assert papers("relations") == []


def test_the_card_names_the_methods_it_is_given(chain, tmp_path):
    """The card takes the methods as data from its caller (the publish command passes the
    table's): a method added to the table is in the card of the kinds it serves, and a card
    given none names no method and cites only the toolkit."""
    new = MethodText("zp-lke", "GOLD-PROB: the log-probability of each object (`factprobe eval "
                     "gold-prob`).", ("facts",))
    card, _ = _card(chain["facts"], tmp_path / "a", methods=(new, *card_methods()))
    assert "- GOLD-PROB: the log-probability of each object" in card.text
    assert "- ZP-LKE (Wu et al., WSDM 2025)" not in card.text     # one line per paper: the first
    bare = export_hub_folder(chain["facts"], tmp_path / "b", CardOptions(repo_id="me/x"))
    body = (bare / "README.md").read_text()
    assert "- Any `factprobe build` that reads a dataset of this kind." in body
    assert _cited_keys(body) == {"factprobe"}


def test_publish_flags_and_card_meta_file(chain, tmp_path, hf_home):  # noqa: F811
    meta = tmp_path / "card.yaml"
    meta.write_text("pretty_name: Programming languages (from the file)\n"
                    "description: |\n  Facts about capitals, written by hand.\n"
                    "authors: [Ada Lovelace, Charles Babbage]\nlicense: cc0-1.0\n")
    out = tmp_path / "a"
    proc = run_cli("publish", str(chain["mc"]), "--repo-id", "me/langs", "--dry-run", str(out),
                   "--card-meta", str(meta), env=hf_home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (out / "README.md").read_text()
    assert "pretty_name: Programming languages (from the file)" in text
    assert "# Dataset Card for Programming languages (from the file)" in text
    assert "Facts about capitals, written by hand." in text
    assert "Ada Lovelace, Charles Babbage." in text and "license: cc0-1.0" in text
    # the construction stays said, under the publisher's name
    assert "built with the T-REx-MC construction from the RDF graph" in text
    out = tmp_path / "b"
    proc = run_cli("publish", str(chain["mc"]), "--repo-id", "me/langs", "--dry-run", str(out),
                   "--card-meta", str(meta), "--pretty-name", "Flag name", "--author", "Grace",
                   "--author", "Alan", "--description", "From a flag.", "--license", "mit",
                   env=hf_home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (out / "README.md").read_text()
    assert "pretty_name: Flag name" in text and "From a flag." in text
    assert "Grace, Alan." in text and "license: mit" in text and "Ada" not in text


@pytest.mark.parametrize("content,needle", [
    ("pretty_name: [unclosed\n", "is not valid YAML"),
    ("- a list\n", "must be a YAML mapping"),
    ("pretty_name: x\ntitle: y\n", "unknown key(s) title"),
    ("authors: {a: 1}\n", "'authors' must be"),
    ("license: CC BY\n", "is not a Hub license id"),
])
def test_bad_card_meta_is_one_line_exit_2(chain, tmp_path, hf_home, content, needle):  # noqa: F811
    meta = tmp_path / "card.yaml"
    meta.write_text(content)
    proc = run_cli("publish", str(chain["mc"]), "--repo-id", "me/langs", "--dry-run",
                   str(tmp_path / "out"), "--card-meta", str(meta), env=hf_home, cwd=tmp_path)
    assert_one_line_exit_2(proc, "--card-meta", needle)
    assert not (tmp_path / "out").exists()


def test_missing_card_meta_file(chain, tmp_path, hf_home):  # noqa: F811
    proc = run_cli("publish", str(chain["mc"]), "--repo-id", "me/langs", "--dry-run",
                   str(tmp_path / "out"), "--card-meta", str(tmp_path / "nope.yaml"),
                   env=hf_home, cwd=tmp_path)
    assert_one_line_exit_2(proc, "not found")


@pytest.mark.parametrize("name", ["facts", "aliases", "mc", "misprimes", "templates",
                                  "multiprompt", "fktc"])
def test_every_kind_loads_with_datasets(chain, tmp_path, offline, name):  # noqa: F811
    import datasets
    hub = export_hub_folder(chain[name], tmp_path / "hub", CardOptions(repo_id="me/x"))
    names = sorted(p.stem for p in chain[name].glob("*.parquet"))
    main = "facts" if "facts" in names else "templates"
    default = datasets.load_dataset(str(hub), cache_dir=str(offline))   # the main config
    main_table = pq.read_table(chain[name] / f"{main}.parquet")
    assert sorted(default) == sorted(_expected_splits(main_table, "facts"))
    assert "relations" not in default
    for table in names:
        if table == main:
            continue
        ds = datasets.load_dataset(str(hub), table, cache_dir=str(offline))  # by name
        assert list(ds) == [table]
        assert ds[table].to_list() == pq.read_table(chain[name] / f"{table}.parquet").to_pylist()


def test_the_same_dataset_gives_the_same_card(chain, tmp_path):
    a = export_hub_folder(chain["fktc"], tmp_path / "a", CardOptions(repo_id="me/x"))
    b = export_hub_folder(chain["fktc"], tmp_path / "b", CardOptions(repo_id="me/x"))
    assert (a / "README.md").read_bytes() == (b / "README.md").read_bytes()
