"""One evaluation from parsed options: what ``factprobe eval METHOD`` and
:func:`factprobe.evaluate` both run (so a run folder has the same bytes either way).

The options arrive as the ``argparse.Namespace`` of ``factprobe eval METHOD``'s flags: the
command line parses them, the library builds the same namespace from keyword arguments
(:mod:`factprobe.api`). Here the backend kind is chosen (``--backend``, else the method's
own), its options are read by the module that owns them (:data:`KINDS`' ``options``), the
probe's plan is built and the run engine executes it.

A module of its own, apart from :mod:`factprobe.api`: the eval stages of dvc.yaml depend on
the code they run, and the API's other calls (the report) are not that code.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from factprobe.core.errors import UserError


@dataclass(frozen=True)
class Evaluated:
    out: Path | None         # the run folder; None after a dry run
    message: str             # the line the command prints last (stderr)


def chosen_kind(method_name: str, args) -> str:
    """``--backend``, or the kind the method's probe names (hf-causal; hf-masked for BELIEF)."""
    from factprobe.evaluators.methods import METHODS
    return getattr(args, "backend", None) or METHODS[method_name].probe.backend


def runnable_methods(capabilities: frozenset) -> list[str]:
    """The methods whose declared needs (``Probe.needs``) a backend with ``capabilities`` has:
    what a server that can only generate is told it can still run."""
    from factprobe.evaluators.methods import METHODS
    return [name for name, m in METHODS.items()
            if m.probe.needs is not None and m.probe.needs <= capabilities]


def _check_kind_flags(kind: str, args) -> None:
    """A flag of another kind's options was given: say so, rather than ignore it."""
    from factprobe.probes.backends import KINDS
    for dest, (flag, owners, default) in sorted(getattr(args, "kind_flags", {}).items()):
        if kind not in owners and getattr(args, dest, default) != default:
            raise UserError(f"{flag} is an option of backend kind {' and '.join(owners)}; "
                            f"--backend {kind} does not take it")
    if not KINDS[kind].threads and args.threads is not None:
        users = " and ".join(k for k, row in KINDS.items() if row.threads)
        raise UserError(f"--threads sets torch's threads, which backend kind {kind} does not "
                        f"use (only {users}); drop it")


def run_evaluation(method_name: str, args) -> Evaluated:
    """Evaluate with the parsed ``factprobe eval METHOD`` flags ``args``."""
    from dataclasses import replace

    from factprobe.evaluators.methods import METHODS, load_tables
    from factprobe.evaluators.metrics.validity import planted_model, planted_warning
    from factprobe.probes.backends import KINDS, kind_config, kind_named
    from factprobe.probes.engine.runner import EvalConfig, dataset_info, run_eval, select_facts
    from factprobe.probes.planting.plant import load_planted
    method = METHODS[method_name]
    method_cfg = method.probe.from_args(args)
    if args.executor == "ray" and args.threads is not None:
        raise UserError("--threads is for local runs; with --executor ray, each replica's "
                        "threads are its --cpus-per-replica")
    name = chosen_kind(method_name, args)
    kind = kind_named(name)
    _check_kind_flags(name, args)
    backend_cfg = kind_config(name, args)
    from factprobe.builders.inputs import open_input
    folder = open_input(args.dataset)  # a folder, a Hub-layout folder, or hf://org/name@rev
    tables = load_tables(folder, method.probe.tables, method_name)
    tables["facts"] = select_facts(tables["facts"], args.relations, args.limit)
    cfg = EvalConfig(method=method_name, dataset=str(folder), out=args.out,
                     relations=args.relations, limit=args.limit, dry_run=args.dry_run,
                     progress=not args.quiet, too_long=args.too_long)
    plan = method.probe.plan(tables, method_cfg)
    # a served model's planted.json sits in the local copy its --tokenizer names, if any
    planted_at = args.model
    planted = load_planted(args.model)
    if planted is None and getattr(args, "tokenizer", None):
        planted_at, planted = args.tokenizer, load_planted(args.tokenizer)
    status = planted_model(planted)
    if status is not None:
        plan = replace(plan, info=plan.info | {"planted_model": status})
    if planted is not None:
        # the subject-only check (probes/subject_only.py, two short requests per fact, or
        # their mask-filling equivalents for a masked model): part of the probe's own pass,
        # so the null pass below does not repeat it
        from factprobe.probes.subject_only import with_subject_only
        plan = with_subject_only(plan, tables["facts"], planted, kind.capabilities)
    if planted is not None and args.subject_blind:
        from factprobe.probes.subject_blind import with_null_pass
        plan = with_null_pass(plan, tables, planted,
                              lambda blind: method.probe.plan(blind, method_cfg))

    def metrics_fn(outputs):
        return method.metrics.checked_compute(outputs, planted, method_cfg)

    from factprobe.cli.scale_flags import executor_config
    executor = executor_config(args)
    threads = None
    if executor.kind == "local" and not args.dry_run and kind.threads:
        from factprobe.cli.threads import apply_threads
        threads = apply_threads(args.threads, lanes=True)
        executor = replace(executor, lanes=threads["threads"])
        from factprobe.core.kernels import too_late
        late = too_late(args.kernels)
        if late and not args.quiet:
            print(f"factprobe eval: warning: {late}", file=sys.stderr)
    out = run_eval(cfg, backend_cfg, plan, method_cfg, dataset_info(folder), kinds=KINDS,
                   metrics_fn=metrics_fn, executor=executor, threads=threads,
                   runnable=runnable_methods)
    if out is not None and not args.quiet:
        # the headline numbers, per relation, and what was skipped and why (on stdout)
        from factprobe.cli.results_table import print_results
        print_results(method.metrics, out)
    if out is not None and not args.quiet and planted_warning(status, planted_at):
        print(f"factprobe eval: warning: {planted_warning(status, planted_at)}",
              file=sys.stderr)
    null = plan.info.get("subject_blind")
    if out is None and null:                 # --dry-run: its count included the null pass
        return Evaluated(None, f"of which {sum(null['requests_per_stage'].values())} ask "
                               f"about the subject-blind null ({null['facts']} facts); "
                               f"--no-subject-blind skips them")
    return Evaluated(out, f"wrote {out}" if out else "")
