"""``factprobe eval METHOD``."""
from __future__ import annotations

import argparse
import sys

from factprobe.core.argtypes import positive, relation_list
from factprobe.core.errors import UserError
from factprobe.probes.methods.flags import nonempty


def _device(value: str) -> str:
    if value == "auto":   # the default, which argparse checks on every parse: no backend import
        return value
    from factprobe.probes.backends.loading import DEVICE
    if not DEVICE.match(value):
        raise argparse.ArgumentTypeError(f"{value!r}: use auto, cpu, cuda, cuda:N or mps")
    return value


def _backend_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", required=True, type=nonempty,
                   help="Hub model name or local folder")
    g.add_argument("--revision", help="Hub revision (branch, tag or commit)")
    g.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    g.add_argument("--device", default="auto", type=_device,
                   help="auto, cpu, cuda, cuda:N or mps")
    g.add_argument("--batch-size", type=positive, default=32,
                   help="rows per forward pass (halved automatically on out-of-memory)")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="run code shipped with the model (off unless asked)")
    g.add_argument("--add-bos", action=argparse.BooleanOptionalAction, default=None,
                   help="prepend the BOS token to every prompt, or never (--no-add-bos); "
                   "default: as the tokenizer does (Llama-family yes, GPT-2/Pythia no), which "
                   "is what vLLM sends; run.json records the choice")
    g.add_argument("--no-prefix-cache", action="store_true",
                   help="compute every sequence in full (slower; for checking)")


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
    from factprobe.cli.scale_flags import add_scale_flags
    add_scale_flags(p)


def _backend_config(args):
    from pathlib import Path

    from factprobe.probes.backends import BackendConfig
    if args.revision is not None:
        if not args.revision.strip():
            raise UserError("--revision is empty: give a branch, tag or commit, or drop it")
        if Path(args.model).is_dir():
            raise UserError(f"--revision {args.revision}: {args.model} is a local folder, "
                            f"which has no revisions; drop --revision (it is for Hub models)")
    return BackendConfig(model=args.model, revision=args.revision, dtype=args.dtype,
                         device=args.device, batch_size=args.batch_size,
                         trust_remote_code=args.trust_remote_code, add_bos=args.add_bos,
                         prefix_cache=not args.no_prefix_cache)


def run_method(method_name: str, args, method_cfg) -> str:
    from dataclasses import replace

    from factprobe.evaluators.methods import METHODS, load_tables
    from factprobe.probes.backends import KINDS
    from factprobe.probes.engine.runner import EvalConfig, dataset_info, run_eval, select_facts
    from factprobe.evaluators.metrics.validity import planted_model, planted_warning
    from factprobe.probes.planting.plant import load_planted
    method = METHODS[method_name]
    if args.executor == "ray" and args.threads is not None:
        raise UserError("--threads is for local runs; with --executor ray, each replica's "
                        "threads are its --cpus-per-replica")
    backend_cfg = replace(_backend_config(args), kind=method.probe.backend)
    from factprobe.builders.inputs import open_input
    folder = open_input(args.dataset)  # a folder, a Hub-layout folder, or hf://org/name@rev
    tables = load_tables(folder, method.probe.tables, method_name)
    tables["facts"] = select_facts(tables["facts"], args.relations, args.limit)
    cfg = EvalConfig(method=method_name, dataset=str(folder), out=args.out,
                     relations=args.relations, limit=args.limit, dry_run=args.dry_run,
                     progress=not args.quiet, too_long=args.too_long)
    plan = method.probe.plan(tables, method_cfg)
    planted = load_planted(args.model)
    status = planted_model(planted)
    if status is not None:
        plan = replace(plan, info=plan.info | {"planted_model": status})
    kind = KINDS.get(backend_cfg.kind)
    if planted is not None and kind is not None and "score" in kind.capabilities:
        # the subject-only check (probes/subject_only.py, two short requests per fact): part
        # of the probe's own pass, so the null pass below does not repeat it
        from factprobe.probes.subject_only import with_subject_only
        plan = with_subject_only(plan, tables["facts"], planted)
    if planted is not None and args.subject_blind:
        from factprobe.probes.subject_blind import with_null_pass
        plan = with_null_pass(plan, tables, planted,
                              lambda blind: method.probe.plan(blind, method_cfg))

    def metrics_fn(outputs):
        return method.metrics.checked_compute(outputs, planted, method_cfg)

    from factprobe.cli.scale_flags import executor_config
    executor = executor_config(args)
    threads = None
    if executor.kind == "local" and not args.dry_run:
        from factprobe.cli.threads import apply_threads
        threads = apply_threads(args.threads)
    out = run_eval(cfg, backend_cfg, plan, method_cfg, dataset_info(folder), kinds=KINDS,
                   metrics_fn=metrics_fn, executor=executor, threads=threads)
    if out is not None and not args.quiet:
        # the headline numbers, per relation, and what was skipped and why (on stdout)
        from factprobe.cli.results_table import print_results
        print_results(method.metrics, out)
    if out is not None and not args.quiet and planted_warning(status, args.model):
        print(f"factprobe eval: warning: {planted_warning(status, args.model)}", file=sys.stderr)
    null = plan.info.get("subject_blind")
    if out is None and null:                 # --dry-run: its count included the null pass
        return (f"of which {sum(null['requests_per_stage'].values())} ask about the "
                f"subject-blind null ({null['facts']} facts); --no-subject-blind skips them")
    return f"wrote {out}" if out else ""


def _add_method(sub, common, method) -> None:
    """``factprobe eval NAME``: the shared dataset and model flags, then the method's own."""
    probe = method.probe
    p = sub.add_parser(probe.name, parents=[common], help=probe.summary,
                       epilog="examples:\n" + probe.examples,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _eval_flags(p)
    probe.add_flags(p)
    p.set_defaults(run=lambda args: run_method(probe.name, args, probe.from_args(args)))


def register(subparsers, common) -> None:
    ev = subparsers.add_parser("eval", help="probe a model with one of the methods")
    sub = ev.add_subparsers(dest="method", required=True, metavar="METHOD")
    from factprobe.evaluators.methods import METHODS
    for method in METHODS.values():
        _add_method(sub, common, method)
