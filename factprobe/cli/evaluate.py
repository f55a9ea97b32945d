"""``factprobe eval METHOD``: its flags. What they run is :mod:`factprobe.evaluation`, the
code :func:`factprobe.evaluate` runs too."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import positive, relation_list
from factprobe.probes.methods.flags import nonempty


def _backend_flags(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--backend``, and each backend kind's own flags (from the module that owns
    them, the kinds table's ``options``; kinds sharing a module share its group)."""
    from factprobe.probes.backends import KINDS, options_module
    g = p.add_argument_group("model")
    g.add_argument("--model", required=True, type=nonempty,
                   help="Hub model name or local folder (with --backend fake: any name)")
    g.add_argument("--backend", choices=tuple(KINDS), metavar="KIND",
                   help="the backend kind: any that can do what the method asks "
                        f"({', '.join(KINDS)}); default: the method's own (hf-causal, "
                        "or hf-masked for belief)")
    owners: dict[str, list[str]] = {}
    for name, kind in KINDS.items():
        if kind.options:
            owners.setdefault(kind.options, []).append(name)
    owned = {}
    for module, names in owners.items():
        group = p.add_argument_group(f"backend {' and '.join(names)}")
        options_module(KINDS[names[0]]).add_flags(group)
        for action in group._group_actions:   # what this kind's module added
            owned[action.dest] = (action.option_strings[0], tuple(names), action.default)
    # read by factprobe.evaluation: a flag given to a kind that does not own it is refused
    p.set_defaults(kind_flags=owned)


def _eval_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="dataset folder")
    p.add_argument("--out", required=True, help="run folder to write")
    p.add_argument("--relations", type=relation_list,
                   help="comma-separated relations to evaluate, or 'all' (default: all)")
    p.add_argument("--limit", type=positive, help="at most N test facts per relation")
    p.add_argument("--dry-run", action="store_true",
                   help="print the first prompts and the request count; load no model")
    p.add_argument("--too-long", choices=("error", "skip", "truncate"), default="error",
                   help="prompts longer than the model's context: stop with an error, skip and "
                        "count them, or drop leading in-context examples until they fit")
    p.add_argument("--no-subject-blind", dest="subject_blind", action="store_false",
                   help="on a planted model (planted.json beside it), skip the subject-blind "
                        "null: the same probe asked again with every planted and held-out "
                        "test subject replaced by one made-up name, whose validity AUROC "
                        "sits beside each validity AUROC (docs/metrics/validity.md). The null "
                        "is a second pass: it about doubles the model time")
    _backend_flags(p)
    from factprobe.cli.threads import add_threads_flag
    add_threads_flag(p, "run.json (local runs; Ray replicas take --cpus-per-replica)")
    from factprobe.cli.threads import add_kernels_flag
    add_kernels_flag(p, "run.json (the Hugging Face kinds; a local Ray cluster this run "
                        "starts inherits it, a running one keeps its own)")
    from factprobe.cli.scale_flags import add_scale_flags
    add_scale_flags(p)


def _add_method(sub, common, method) -> None:
    """``factprobe eval NAME``: the shared dataset and model flags, then the method's own; it
    runs :func:`factprobe.evaluation.run_evaluation`, as :func:`factprobe.evaluate` does."""
    from factprobe.evaluation import run_evaluation
    probe = method.probe
    p = sub.add_parser(probe.name, parents=[common], help=probe.summary,
                       epilog="examples:\n" + probe.examples,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _eval_flags(p)
    probe.add_flags(p)
    p.set_defaults(run=lambda args: run_evaluation(probe.name, args).message)


def register(subparsers, common) -> None:
    ev = subparsers.add_parser("eval", help="probe a model with one of the methods")
    sub = ev.add_subparsers(dest="method", required=True, metavar="METHOD")
    from factprobe.evaluators.methods import METHODS
    for method in METHODS.values():
        _add_method(sub, common, method)
