"""The ``factprobe build ...`` commands: argparse in, typed config dataclasses out."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import count, positive, relation_list
from factprobe.cli import templates as cli_templates  # templates, misprimes, multiprompt, fktc
from factprobe.cli.common import cache_dir, network_flags, network_options, show_progress
from factprobe.cli import imports as cli_imports


EPILOG_FACTS = """examples:
  factprobe build facts --source rdf --path data/kg/sample.ttl \\
      --relations rel:capital,rel:currency --out data/datasets/my-facts
  factprobe build facts --source wikidata --relations P36,P37 --limit 5000 --out facts/
  factprobe build facts --source sparql --endpoint http://127.0.0.1:7878/query \\
      --relations P36 --out facts/
  factprobe build facts --source trex --path TREx/ --relations all --out trex-facts/
  factprobe build facts --source csv --path triples.csv --relations all --out csv-facts/
  factprobe build facts --source wikidata-dump --path latest-all.json.bz2 \\
      --relations P19,P36,P37 --out wd-facts/
  factprobe build facts --source popqa --path popQA.tsv --relations all --out popqa-facts/
  factprobe build facts --source lama --path LAMA/data --relations all --out lama-facts/
"""


def _add_facts(sub, common) -> None:
    from factprobe.builders.sources.table import SOURCES
    from factprobe.cli.source_flags import add_source_flags
    p = sub.add_parser("facts", parents=[common], help="read facts from a knowledge graph",
                       epilog=EPILOG_FACTS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", required=True, choices=tuple(SOURCES))
    p.add_argument("--endpoint", help="SPARQL endpoint URL (sparql; overrides wikidata's)")
    p.add_argument("--path", help="input file or folder (rdf, trex, csv, wikidata-dump, and the "
                        "benchmarks lama, popqa, entityquestions, bear, pararel)")
    p.add_argument("--relations", required=True, type=relation_list,
                   help="comma-separated relation ids (P36, prefix:name, full IRI) or 'all'")
    p.add_argument("--limit", type=positive, help="at most N facts per relation")
    p.add_argument("--out", required=True, help="output dataset folder")
    p.add_argument("--lang", default="en", help="label language (en)")
    p.add_argument("--date-format", choices=("date", "year"), default="date",
                   help="how date objects are written: 1879-03-14 or 1879")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed input lines and count them instead of failing")
    network_flags(p)
    add_source_flags(p, SOURCES)        # each source's own flags (Source.flags), once
    p.set_defaults(run=_run_facts)


def _run_facts(args) -> str:
    from factprobe.builders.datasets.build_facts import FactsConfig, build_facts
    from factprobe.builders.sources.table import SOURCES
    from factprobe.cli.source_flags import refuse_foreign_flags
    refuse_foreign_flags(args, args.source)
    cfg = FactsConfig(source=args.source, relations=args.relations, out=args.out,
                      path=args.path, endpoint=args.endpoint, limit=args.limit, lang=args.lang,
                      date_format=args.date_format, skip_bad=args.skip_bad,
                      network=network_options(args),
                      options=SOURCES[args.source].options_from(args),
                      progress=show_progress(args))
    out = build_facts(cfg)
    if SOURCES[args.source].summary:
        from factprobe.cli.imports import facts_note
        return f"wrote {out}{facts_note(args.source, out)}"
    return f"wrote {out}"


EPILOG_ALIASES = """examples:
  factprobe build aliases --facts data/datasets/wd-facts --out data/datasets/wd-aliases
  factprobe build aliases --facts data/datasets/sample-facts --via graph --out aliased/
"""


def _add_aliases(sub, common) -> None:
    p = sub.add_parser("aliases", parents=[common], help="add other names of subjects and objects",
                       epilog=EPILOG_ALIASES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", required=True, help="a facts dataset folder")
    p.add_argument("--out", required=True, help="output dataset folder")
    p.add_argument("--via", choices=("wikidata", "graph"), default="wikidata",
                   help="Wikidata's wbgetentities API, or the source graph's skos:altLabel")
    p.add_argument("--path", help="RDF file to read altLabels from (default: the facts' source)")
    p.add_argument("--endpoint", help="SPARQL endpoint to read altLabels from")
    p.add_argument("--api-url", help="Wikibase Action API URL (default: Wikidata's)")
    p.add_argument("--lang", default="en")
    network_flags(p)
    p.set_defaults(run=_run_aliases)


def _run_aliases(args) -> str:
    from factprobe.builders.inputs import resolve_input
    from factprobe.builders.datasets.aliases import ALIASES_INPUT, AliasConfig, build_aliases
    cfg = AliasConfig(facts=resolve_input(args.facts, ALIASES_INPUT), out=args.out, via=args.via, api_url=args.api_url,
                      path=args.path,
                      endpoint=args.endpoint, lang=args.lang, contact=args.contact,
                      cache_dir=cache_dir(args), refresh=args.refresh, timeout_s=args.timeout,
                      max_answer_mb=args.max_answer_mb,
                      retries=args.retries, progress=show_progress(args))
    return f"wrote {build_aliases(cfg)}"


EPILOG_MC = """examples:
  factprobe build mc --facts data/datasets/trex-facts --out data/datasets/trex-mc
  factprobe build mc --facts facts/ --out mc/ --choices 10 --min-facts 50 --min-objects 20 \\
      --train 10 --test 40 --seed 1
"""


def _add_mc(sub, common) -> None:
    p = sub.add_parser("mc", parents=[common], help="T-REx-MC multiple-choice dataset",
                       epilog=EPILOG_MC, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", required=True, help="a facts dataset folder")
    p.add_argument("--out", required=True, help="output dataset folder")
    p.add_argument("--choices", type=positive, default=100,
                   help="choices per fact, the gold one included (100; at least 2)")
    p.add_argument("--min-facts", type=count, default=500,
                   help="keep relations with at least this many facts (500)")
    p.add_argument("--min-objects", type=count, default=100,
                   help="... and at least this many distinct objects (100)")
    p.add_argument("--train", type=count, default=100, help="train rows per relation")
    p.add_argument("--test", type=positive, default=400, help="test rows per relation")
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--exclude-relations", default="",
                   help="comma-separated relations to leave out (ambiguous objects)")
    p.add_argument("--choices-from", metavar="COLUMN",
                   help="each row's options from this list column of the facts, as published "
                        "(an imported BEAR's answer_space), instead of --choices drawn ones")
    p.add_argument("--strip-suffix", action="append", metavar="SUFFIX",
                   help="map 'X SUFFIX' to 'X' when both are objects of a relation "
                        "(default: ' language'; pass '' to disable)")
    p.set_defaults(run=_run_mc)


def _run_mc(args) -> str:
    from factprobe.builders.inputs import resolve_input
    from factprobe.builders.datasets.mc import MC_INPUT, MCConfig, build_mc
    suffixes = (" language",) if args.strip_suffix is None else tuple(
        s for s in args.strip_suffix if s)
    cfg = MCConfig(facts=resolve_input(args.facts, MC_INPUT), out=args.out, choices=args.choices,
                   min_facts=args.min_facts, min_objects=args.min_objects, train=args.train,
                   test=args.test, seed=args.seed,
                   exclude_relations=tuple(x.strip() for x in args.exclude_relations.split(",")
                                           if x.strip()),
                   strip_suffixes=suffixes, choices_from=args.choices_from,
                   progress=show_progress(args))
    return f"wrote {build_mc(cfg)}"


EPILOG_NOBEL = """examples:
  factprobe build nobel --out data/datasets/nobel                      # Wikidata
  factprobe build nobel --endpoint http://127.0.0.1:7878/query --out nobel/
  factprobe build nobel --source wikidata-dump --path latest-all.json.bz2 --out nobel/
  factprobe build nobel --source rdf --path data/kg/sample.ttl \\
      --award-statement st:awardReceived --award-value sv:awardReceived \\
      --award-time qual:pointInTime --birth-property rel:birthYear \\
      --gender-property rel:sexOrGender --nobel-class ent:nobel_prize \\
      --instance-of rel:instanceOf --subclass-of rel:subclassOf --out nobel/
"""


def _add_nobel(sub, common) -> None:
    from factprobe.builders.datasets.nobel_config import NobelModel
    from factprobe.builders.datasets.nobel_source import NOBEL_SOURCES
    from factprobe.builders.sources.table import SOURCES
    from factprobe.cli.source_flags import add_source_flags
    d = NobelModel()
    p = sub.add_parser("nobel", parents=[common], help="Nobel laureates and their birth years",
                       epilog=EPILOG_NOBEL, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", choices=NOBEL_SOURCES,
                   help="default: sparql when --endpoint is given, rdf with --path (wikidata-dump "
                        "when it is a compressed or JSON dump), else wikidata")
    p.add_argument("--endpoint", help="SPARQL endpoint URL")
    p.add_argument("--path", help="RDF file, or Wikidata's JSON dump with wikidata-dump")
    p.add_argument("--out", required=True)
    p.add_argument("--max-year", type=int, default=2022, help="last award year (2022)")
    p.add_argument("--lang", default="en")
    m = p.add_argument_group("the graph's model (Wikidata's by default)")
    for flag, attr in (("--award-statement", "award_statement"), ("--award-value", "award_value"),
                       ("--award-time", "award_time"), ("--birth-property", "birth"),
                       ("--gender-property", "gender"), ("--nobel-class", "nobel_class"),
                       ("--instance-of", "instance_of"), ("--subclass-of", "subclass_of")):
        m.add_argument(flag, dest=attr, default=getattr(d, attr),
                       help=f"default {getattr(d, attr)}")
    p.add_argument("--skip-bad", action="store_true",
                   help="wikidata-dump: skip and count malformed lines instead of failing")
    network_flags(p)
    add_source_flags(p, {n: SOURCES[n] for n in NOBEL_SOURCES})
    p.set_defaults(run=_run_nobel)


def _run_nobel(args) -> str:
    from factprobe.builders.datasets.nobel_config import NobelConfig, NobelModel
    from factprobe.builders.datasets.nobel_source import NobelSource, build_nobel_from, choose_source
    from factprobe.builders.sources.table import SOURCES
    from factprobe.cli.source_flags import refuse_foreign_flags
    chosen = choose_source(args.source, args.path, args.endpoint)  # a flag conflict first
    refuse_foreign_flags(args, chosen)
    src = NobelSource(source=args.source, path=args.path, endpoint=args.endpoint,
                      network=network_options(args),
                      options=SOURCES[chosen].options_from(args), skip_bad=args.skip_bad)
    model = NobelModel(**{k: getattr(args, k) for k in NobelModel.__dataclass_fields__})
    cfg = NobelConfig(out=args.out, model=model, max_year=args.max_year, lang=args.lang,
                      progress=show_progress(args))
    return f"wrote {build_nobel_from(src, cfg)}"


def register(subparsers, common: argparse.ArgumentParser) -> None:
    build = subparsers.add_parser("build", help="build datasets from knowledge graphs")
    sub = build.add_subparsers(dest="what", required=True, metavar="WHAT")
    _add_facts(sub, common)
    _add_aliases(sub, common)
    _add_mc(sub, common)
    _add_nobel(sub, common)
    cli_templates.add_commands(sub, common)
    cli_imports.add_command(sub, common)
    from factprobe.cli.refresh import add_refresh
    add_refresh(sub, common)
