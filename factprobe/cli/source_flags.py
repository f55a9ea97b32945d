"""The flags each source owns (its ``Source.flags`` module), added to a build command once, and
refused when given to a source that does not read them: ``build facts --source csv --page-size
5`` used to run and silently ignore the page size (as ``eval``'s backend options are refused
for another kind, factprobe/evaluation.py)."""
from __future__ import annotations

import argparse
from collections.abc import Mapping

from factprobe.core.errors import UserError


def add_source_flags(p: argparse.ArgumentParser, sources: Mapping) -> None:
    """Each distinct flags module of ``sources`` adds its group to ``p``; which flags it added,
    and the sources that own them, go into the parsed arguments (``source_flags``)."""
    from factprobe.builders.sources.table import flag_modules
    owners: dict[str, list[str]] = {}
    for name, source in sources.items():
        if source.flags:
            owners.setdefault(source.flags, []).append(name)
    owned = {}
    for module in flag_modules(sources):
        # argparse keeps no per-group list of what a function added to the parser: its
        # actions before and after are the plain way to tell
        before = len(p._actions)
        module.add_flags(p)
        for action in p._actions[before:]:
            owned[action.dest] = (action.option_strings[0], tuple(owners[module.__name__]),
                                  action.default)
    p.set_defaults(source_flags=owned)


def refuse_foreign_flags(args: argparse.Namespace, source: str) -> None:
    """A flag another source owns was given a value for ``source``: one line, not ignored.

    >>> ns = argparse.Namespace(page_size=5, source_flags={
    ...     "page_size": ("--page-size", ("wikidata", "sparql", "rdf"), 10_000)})
    >>> refuse_foreign_flags(ns, "sparql")
    >>> try:
    ...     refuse_foreign_flags(ns, "csv")
    ... except UserError as e:
    ...     print(e)
    --page-size is read by --source wikidata, sparql and rdf only; --source csv does not take it: drop it
    """
    for dest, (flag, owners, default) in sorted(getattr(args, "source_flags", {}).items()):
        if source not in owners and getattr(args, dest, default) != default:
            names = ", ".join(owners[:-1]) + " and " + owners[-1] if len(owners) > 1 \
                else owners[0]
            raise UserError(f"{flag} is read by --source {names} only; --source {source} "
                            f"does not take it: drop it")
