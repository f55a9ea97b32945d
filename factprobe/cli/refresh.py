"""``factprobe build refresh`` (a dataset read again from a later snapshot of its graph) and
``factprobe diff`` (what changed between two facts datasets)."""
from __future__ import annotations

import argparse
import json

from factprobe.cli.common import network_flags, network_options, show_progress

REFRESH_SOURCES = ("wikidata", "wikidata-dump", "sparql", "rdf")   # build facts' that keep ids

EPILOG_REFRESH = """examples:
  factprobe build refresh --dataset data/datasets/wd-facts --source wikidata --out wd-facts-now/
  factprobe build refresh --dataset wd-facts/ --source wikidata-dump \\
      --path latest-all.json.bz2 --out wd-facts-2025/
  factprobe build refresh --dataset facts/ --source sparql \\
      --endpoint http://127.0.0.1:7878/query --out facts-later/
  factprobe diff wd-facts/ wd-facts-2025/ --out wd-diff/
"""

EPILOG_DIFF = """examples:
  factprobe diff wd-facts/ wd-facts-2025/                  # the one-screen summary
  factprobe diff wd-facts/ wd-facts-2025/ --out wd-diff/   # + diff.parquet, summary.md
  factprobe diff wd-facts/ wd-facts-2025/ --format json    # counts for scripts
  factprobe diff v1.0:data/datasets/wd-facts HEAD:data/datasets/wd-facts   # two DVC revisions
"""


def add_refresh(sub, common) -> None:
    from factprobe.builders.sources.table import SOURCES
    from factprobe.cli.source_flags import add_source_flags
    p = sub.add_parser("refresh", parents=[common],
                       help="read a dataset's facts again from a later snapshot of its graph",
                       epilog=EPILOG_REFRESH, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, help="the dataset whose facts to read again")
    p.add_argument("--source", required=True,
                   choices=tuple(n for n in SOURCES if n in REFRESH_SOURCES),
                   help="where to read the facts again (build facts' sources that keep ids)")
    p.add_argument("--endpoint", help="SPARQL endpoint URL (sparql; overrides wikidata's)")
    p.add_argument("--path", help="the dump (wikidata-dump) or RDF file (rdf)")
    p.add_argument("--out", required=True, help="output dataset folder")
    p.add_argument("--lang", help="label language (default: the dataset's)")
    p.add_argument("--date-format", choices=("date", "year"),
                   help="how date objects are written (default: the dataset's)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed dump lines and count them instead of failing")
    network_flags(p)
    # the sources' own flags (--page-size, --prefix: added to the dataset's own prefixes)
    add_source_flags(p, {n: SOURCES[n] for n in REFRESH_SOURCES})
    p.set_defaults(run=run_refresh)


def run_refresh(args) -> str:
    from factprobe.builders.datasets.refresh import REFRESH_INPUT, RefreshConfig, build_refresh
    from factprobe.builders.inputs import resolve_input
    from factprobe.builders.sources.config import FactsConfig
    from factprobe.builders.sources.table import source_for
    from factprobe.cli.source_flags import refuse_foreign_flags
    source = source_for(args.source, args.path, args.endpoint)  # a flag conflict first
    refuse_foreign_flags(args, args.source)
    facts = FactsConfig(source=args.source, relations=None, out=args.out, path=args.path,
                        endpoint=args.endpoint, lang=args.lang or "",
                        date_format=args.date_format or "", skip_bad=args.skip_bad,
                        network=network_options(args),
                        options=source.options_from(args),
                        progress=show_progress(args))
    out = build_refresh(RefreshConfig(resolve_input(args.dataset, REFRESH_INPUT), facts))
    counts = json.loads((out / "dataset.json").read_text(encoding="utf-8"))["counts"]
    labels = counts["refresh"].get("labels")
    if not labels:
        return f"wrote {out}"
    # a dataset named by labels: what became of its names, every one accounted for
    return (f"wrote {out}; subjects by label: resolved {labels['resolved']}, unresolved "
            f"{labels['unresolved']}, ambiguous {labels['ambiguous']}, malformed "
            f"{labels['malformed']} of {labels['labels']} (listed in resolved.parquet)")


def add_diff(subparsers, common) -> None:
    p = subparsers.add_parser("diff", parents=[common],
                              help="what changed between two facts datasets, row by row",
                              epilog=EPILOG_DIFF,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old", help="the earlier dataset: a folder, hf://ORG/NAME[@REV], or REV:PATH "
                              "(a git revision of the DVC repository you are in)")
    p.add_argument("new", help="the later dataset (e.g. written by 'build refresh'), as OLD")
    p.add_argument("--out", help="also write diff.parquet, summary.md and dataset.json here")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="what is printed: the Markdown summary, or JSON counts (text)")
    p.set_defaults(run=run_diff)


def run_diff(args) -> str:
    from factprobe.builders.datasets.diff_report import NEW_INPUT, OLD_INPUT, DiffConfig, diff_datasets
    from factprobe.builders.inputs import resolve_input
    old = resolve_input(args.old, OLD_INPUT)
    new = resolve_input(args.new, NEW_INPUT)
    _, result, summary = diff_datasets(DiffConfig(old, new, args.out))
    if args.format == "json":
        print(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False))
    elif not args.quiet:
        print(summary)
    return f"wrote {args.out}" if args.out else ""
