"""``factprobe init DIR``: a DVC pipeline (dvc.yaml, params.yaml) for one's own graph, in one's
own repository (the work is in :mod:`factprobe.scaffold.render`)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from factprobe.core.errors import UserError

EPILOG = """examples:
  git init my-probe && cd my-probe && dvc init
  factprobe init . --source rdf --path graph.ttl --relations ex:capital,ex:currency
  factprobe init . --source csv --path triples.csv --name langs
  factprobe init . --source sparql --endpoint http://localhost:7878/query --relations P36,P37
  factprobe init . --source wikidata --relations P36,P37,P38 --name wd
then write templates/<relation>.yaml (docs/templates.md), commit (git add . && git commit),
and run `dvc repro`.
"""


def register(subparsers, common) -> None:
    from factprobe.scaffold.render import FILE_SOURCES, SOURCES
    # not the shared flags: their --force speaks of --out, which init does not have
    p = subparsers.add_parser("init",
                              help="write dvc.yaml and params.yaml for your own graph",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                              description="Write a DVC pipeline (dvc.yaml, params.yaml, a plot "
                              "template) from your graph to datasets, planted reference models, "
                              "every method's evaluation and a report. Existing files are "
                              "refused; --force rewrites only files factprobe init wrote.")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--force", action="store_true",
                   help="rewrite the files factprobe init wrote before (their first line says "
                   "so); a dvc.yaml or params.yaml of yours is never replaced")
    p.add_argument("dir", nargs="?", default=".", help="the repository folder (.)")
    p.add_argument("--source", choices=tuple(SOURCES), default="rdf", help="where the facts "
                   "come from (rdf)")
    p.add_argument("--path", help=f"the graph file or folder ({', '.join(FILE_SOURCES)})")
    p.add_argument("--endpoint", help=f"SPARQL endpoint URL ({', '.join(_endpoint_sources())})")
    p.add_argument("--relations", default="all",
                   help="comma-separated relation ids, or all (all; wikidata needs ids)")
    p.add_argument("--name", help="prefix of the dataset folders and the report (default: the "
                   "graph file's name, or the source)")
    p.add_argument("--lang", default="en", help="label language (en)")
    p.set_defaults(run=_run)


def _endpoint_sources() -> list[str]:
    """The sources init writes an endpoint for: those that read one and have no default."""
    from factprobe.scaffold.render import SOURCES
    return [n for n, s in SOURCES.items() if s.reads == "endpoint" and s.needs is not None]


def _run(args) -> str:
    from factprobe.builders.templates.files import file_name
    from factprobe.scaffold.render import (
        FILE_SOURCES,
        InitConfig,
        check_name,
        default_name,
        refuse,
        set_plots_page,
        shell_safe,
        write,
    )
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root} is not a folder")
    path = ""
    if args.source in FILE_SOURCES:
        if not args.path:
            raise UserError(f"--source {args.source} needs --path (the graph file or folder)")
        if not os.path.exists(args.path):
            raise UserError(f"--path {args.path}: no such file or folder")
        # dvc.yaml's paths are relative to the repository, the flag's to where init runs
        path = shell_safe("--path", os.path.relpath(os.path.abspath(args.path),
                                                    os.path.abspath(root)))
    elif args.path:
        raise UserError(f"--path is for a file source ({', '.join(FILE_SOURCES)}), not "
                        f"--source {args.source}")
    wants = _endpoint_sources()
    if (args.source in wants) != bool(args.endpoint):
        names = " or ".join(wants)
        raise UserError(f"--endpoint is for --source {names}, and --source {names} needs it")
    from factprobe.core.redact import redact_url
    if args.endpoint and redact_url(args.endpoint) != args.endpoint:
        # the files init writes are committed: a password there is a password published
        raise UserError(f"--endpoint {redact_url(args.endpoint)} holds credentials, which init "
                        f"would write into params.yaml and dvc.yaml; give the URL without them")
    if args.source == "wikidata" and args.relations.strip().lower() == "all":
        raise UserError("--source wikidata needs --relations (property ids, e.g. P36,P37)")
    fix = "pick a value without it"
    shell_safe("--endpoint", args.endpoint or "", "give the URL with that character "
               "percent-encoded")
    shell_safe("--relations", args.relations, fix)
    shell_safe("--lang", args.lang, fix)
    stem = Path(args.path).name.split(".")[0] if args.path else args.source
    name = check_name(args.name) if args.name else default_name(stem, args.source)
    refuse(root, args.force)
    sizes, sized, kept = _sizes(args)
    # relation ids in it come from the graph: no escape sequence of theirs reaches the terminal
    sized = "".join(c if c.isprintable() or c == "\n" else "?" for c in sized)
    root.mkdir(parents=True, exist_ok=True)
    written = write(InitConfig(dir=str(root), source=args.source, path=path,
                               endpoint=args.endpoint or "", relations=args.relations,
                               name=name, lang=args.lang, sizes=sizes), force=args.force)
    rels = kept if kept is not None else [r.strip() for r in args.relations.split(",")
                                          if r.strip() and args.relations.strip().lower() != "all"]
    wanted = ("templates/" + ", templates/".join(file_name(r) for r in rels)
              if rels else "templates/<relation>.yaml")
    outside = " (outside the repository: DVC tracks it there, but copying it in is safer)" \
        if path.startswith("..") else ""
    plots = set_plots_page(root)
    # a commit before `dvc repro`: `dvc exp run` refuses a repository without one, and every
    # dataset card records whether the tree it was built in was clean
    return (f"{sized}\nwrote {', '.join(str(p) for p in written)}{outside}\n{plots}\n"
            f"next: write {wanted} (docs/templates.md), commit (`git add . && git commit -m "
            f"'factprobe pipeline'`), then `dvc repro` in {root}")


def _sizes(args):
    """params.yaml's sizes: read from the graph for a file source, the shipped ones otherwise."""
    from factprobe.core.argtypes import relation_list
    from factprobe.scaffold.sizing import SIZED_SOURCES, read_graph, size, unsized
    if args.source not in SIZED_SOURCES:
        return unsized(args.source)
    try:
        relations = relation_list(args.relations)
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"--relations: {exc}") from None
    # the facts stage's date format (params.yaml's facts.date_format): same facts, same counts
    return size(read_graph(args.source, args.path, relations, args.lang, "year"))
