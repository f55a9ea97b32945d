"""``factprobe report`` on the command line (argparse only; the work is in
:mod:`factprobe.evaluators.report.build`, imported when the command runs)."""
from __future__ import annotations

import argparse

from factprobe.core.argtypes import count, positive

EPILOG = """examples:
  factprobe report --results data/results --out reports/sample
  factprobe report --results data/results/sample-mc/zp-lke/planted \\
      data/results/sample-mc/zp-lke/pythia-1b --out reports/mc --metrics mc_accuracy
  factprobe report --results r/ --out rep/ --bootstrap 2000 --no-plots
  factprobe report --results data/results --out reports/sample --html   # + index.html
"""


def _alphas(value: str) -> tuple[float, float, float]:
    """
    >>> _alphas("1/3,1/3,1/3") == (1 / 3, 1 / 3, 1 / 3), _alphas("0.5,0.25,0.25")
    (True, (0.5, 0.25, 0.25))
    """
    from fractions import Fraction
    try:
        a = tuple(float(Fraction(v.strip())) for v in value.split(","))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{value!r}: three comma-separated numbers") from None
    if len(a) != 3 or not all(0 <= x < float("inf") for x in a):
        raise argparse.ArgumentTypeError(f"{value!r}: three comma-separated numbers >= 0")
    return a


def register(subparsers, common) -> None:
    p = subparsers.add_parser("report", parents=[common],
                              help="metrics, leaderboard, tables and plots from run folders",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", nargs="+", required=True, metavar="DIR",
                   help="run folders, or folders searched for them")
    p.add_argument("--out", required=True, help="report folder to write")
    p.add_argument("--metrics", help="comma-separated headline metrics for the leaderboard "
                   "(default: every one the runs' methods give)")
    p.add_argument("--bootstrap", type=positive, default=1000, help="bootstrap resamples (1000)")
    p.add_argument("--seed", type=count, default=0, help="bootstrap and sampling seed (0)")
    p.add_argument("--samplings", type=positive, default=50_000,
                   help="BELIEF Acc@1 fluctuation: draws of one prompt per pair (50000)")
    p.add_argument("--bins", type=positive, default=10, help="BELIEF Overconf bins (10)")
    p.add_argument("--alphas", type=_alphas, default=(1 / 3, 1 / 3, 1 / 3),
                   help="MONITOR a1,a2,a3, numbers or fractions (1/3,1/3,1/3)")
    p.add_argument("--common-facts", action="store_true",
                   help="kept for older command lines: runs that cover different facts are "
                        "always compared on the facts they share, and report.md says so")
    p.add_argument("--planted", help="planted.json to use for every run (default: the one "
                   "beside each run's model)")
    p.add_argument("--subsumption", choices=("per-relation", "pooled"), default="per-relation",
                   help="ZP-LKE subsumption matrix: eta within each relation, averaged over "
                        "relations, as the paper's Tables 2 and 11 (per-relation, default), "
                        "or one eta over all facts (pooled)")
    p.add_argument("--sharing-unit", choices=("fact-template", "prompt"),
                   default="fact-template",
                   help="BELIEF knowledge-sharing unit: covered facts per template, as the "
                        "paper's Sec. 7 (fact-template, default), or every (fact, template, "
                        "subject name) prompt (prompt)")
    p.add_argument("--by", metavar="COLUMN",
                   help="also every headline metric per slice of a fact column of the runs' "
                        "datasets (split, relation_type, s_pop...; numbers bucketed by powers "
                        "of ten), each computed on the slice's facts alone")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.add_argument("--html", action="store_true", help="also write index.html: the explorer "
                   "page (leaderboard, validity, heatmaps, each fact's prompts and answers); "
                   "opens from disk, no network")
    p.set_defaults(run=_run)


def _run(args) -> str:
    from factprobe.evaluators.metrics import lemmas
    from factprobe.evaluators.metrics.suite import MetricsOptions
    from factprobe.evaluators.report.build import ReportConfig, build_report
    lemmas.torch_free_process()      # a report runs no model: spaCy without torch (1.8 CPU-s)
    opts = MetricsOptions(resamples=args.bootstrap, seed=args.seed, samplings=args.samplings,
                          bins=args.bins, alphas=tuple(args.alphas))
    out = build_report(ReportConfig(results=tuple(args.results), out=args.out,
                                    metrics=args.metrics, options=opts,
                                    common_facts=args.common_facts, planted=args.planted,
                                    plots=not args.no_plots, progress=not args.quiet,
                                    html=args.html, subsumption=args.subsumption,
                                    sharing_unit=args.sharing_unit, by=args.by))
    return f"wrote {out}/report.md" + (f" and {out}/index.html" if args.html else "")
