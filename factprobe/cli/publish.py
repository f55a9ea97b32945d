"""``factprobe publish``: a built dataset to the Hugging Face Hub, with its dataset card."""
from __future__ import annotations

import argparse

EPILOG_PUBLISH = """examples:
  factprobe publish data/datasets/trex-mc --repo-id my-org/trex-mc --tag v1.0
  factprobe publish data/datasets/sample-mc --repo-id my-org/sample-mc --dry-run hub/sample-mc
  factprobe publish data/datasets/trex-mc --repo-id my-org/trex-mc --revision paper-2025 --private
  factprobe publish data/datasets/langs-mc --repo-id me/langs-mc --dry-run hub/langs-mc \
      --pretty-name "Programming-language facts" --author "Ada Lovelace" --card-meta card.yaml

The token comes from HF_TOKEN (write access). Read a published dataset back with
--dataset hf://my-org/trex-mc@v1.0, or datasets.load_dataset("my-org/trex-mc", "facts").
"""


def ref_name(value: str) -> str:
    """A branch or tag name git (and so the Hub) accepts (``git check-ref-format``'s rules).

    >>> ref_name("v1.0")
    'v1.0'
    >>> ref_name("a b")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'a b' is not a valid branch or tag name (no spaces, '..', '~^:?*[\\', leading '-' or '/', trailing '.lock', '/' or '.')
    """
    bad = (not value or value.startswith(("-", "/", ".")) or value.endswith(("/", ".", ".lock"))
           or ".." in value or "//" in value or "@{" in value or value == "@"
           or any(c.isspace() or c in "~^:?*[\\" or ord(c) < 32 for c in value))
    if bad:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a valid branch or tag name (no spaces, '..', '~^:?*[\\', "
            f"leading '-' or '/', trailing '.lock', '/' or '.')")
    return value


def license_id(value: str) -> str:
    """A Hub license identifier: lower-case letters, digits, '.', '-', '+' (cc-by-4.0).

    >>> license_id("cc-by-sa-4.0")
    'cc-by-sa-4.0'
    """
    import re
    if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a license id like cc-by-4.0, "
                                         f"apache-2.0, mit or other")
    return value


def register(subparsers, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser("publish", parents=[common],
                              help="publish a dataset on the Hugging Face Hub with a dataset card",
                              epilog=EPILOG_PUBLISH,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", metavar="DATASET_DIR",
                   help="a built dataset folder (or a Hub-layout folder, or hf://ORG/NAME)")
    p.add_argument("--repo-id", required=True, metavar="ORG/NAME", help="the Hub dataset repo")
    p.add_argument("--private", action="store_true", help="create the repo private")
    p.add_argument("--revision", metavar="BRANCH", type=ref_name,
                   help="upload to this branch, created when missing (default: main)")
    p.add_argument("--tag", metavar="TAG", type=ref_name, help="tag the uploaded commit: a version to cite")
    p.add_argument("--license", metavar="ID", type=license_id,
                   help="license id for the card (default: from the source: cc-by-sa-4.0 for "
                        "T-REx, else cc-by-4.0)")
    p.add_argument("--pretty-name", metavar="TEXT",
                   help="the card's title and pretty_name (default: from the construction and "
                        "the source)")
    p.add_argument("--description", metavar="TEXT", help="a paragraph at the top of the card")
    p.add_argument("--author", dest="authors", action="append", default=[], metavar="NAME",
                   help="a curator of the dataset (repeat for several)")
    p.add_argument("--card-meta", metavar="FILE.yaml",
                   help="pretty_name, description, authors, license in a YAML file; flags win")
    p.add_argument("--dry-run", metavar="OUT_DIR",
                   help="write the folder that would be uploaded to OUT_DIR; upload nothing")
    p.set_defaults(run=_run_publish)


def card_methods() -> tuple:
    """What the dataset card says of each method, from the table of methods, as plain data for
    the card (which sits below the methods and cannot read them)."""
    from factprobe.builders.publish.card import MethodText
    from factprobe.evaluators.methods import METHODS
    return tuple(MethodText(m.probe.citation, m.probe.card, m.probe.serves)
                 for m in METHODS.values() if m.probe.card)


def _run_publish(args) -> str:
    from factprobe.builders.publish.upload import PublishConfig, publish
    cfg = PublishConfig(dataset=args.dataset, repo_id=args.repo_id, private=args.private,
                        revision=args.revision, tag=args.tag, license=args.license,
                        dry_run=args.dry_run, progress=not args.quiet,
                        pretty_name=args.pretty_name, description=args.description,
                        authors=tuple(args.authors), card_meta=args.card_meta,
                        methods=card_methods())
    return publish(cfg)
