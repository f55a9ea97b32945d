"""What every command group of the CLI shares: the common flags, the network flags, progress."""
from __future__ import annotations

import argparse
import sys

from factprobe.core.argtypes import count, megabytes, seconds
from factprobe.core.transport import DEFAULT_MAX_ANSWER_MB


def show_progress(args) -> bool:
    """Progress bars unless --quiet, and only on a terminal: a captured stderr (a pipeline, a
    test) then holds nothing but the one line an error is."""
    return not args.quiet and sys.stderr.isatty()


def common_flags() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", action="store_true", help="no progress bars or messages")
    common.add_argument("--force", action="store_true",
                        help="replace a factprobe output of another kind at --out, or one "
                             "holding files factprobe did not write (those are kept)")
    return common


def network_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("network (wikidata, sparql)")
    g.add_argument("--contact", help="contact (e-mail or URL) for the User-Agent; default "
                   "$FACTPROBE_CONTACT")
    g.add_argument("--cache-dir", help="response cache; default $FACTPROBE_CACHE_DIR or "
                   "~/.cache/factprobe")
    g.add_argument("--refresh", action="store_true", help="ignore cached responses")
    g.add_argument("--timeout", type=seconds, default=65.0,
                   help="seconds for a whole answer to arrive (65)")
    max_answer_flag(g)
    g.add_argument("--retries", type=count, default=3,
                   help="retries after a failure, with backoff 1, 2, 4 s... (3)")


def max_answer_flag(g) -> None:
    g.add_argument("--max-answer-mb", type=megabytes, default=DEFAULT_MAX_ANSWER_MB,
                   help=f"refuse an answer larger than this many MB ({DEFAULT_MAX_ANSWER_MB})")


def network_options(args):
    """The network flags as the typed value every client reads."""
    from factprobe.core.network import NetworkOptions
    return NetworkOptions(contact=args.contact, cache_dir=cache_dir(args), refresh=args.refresh,
                          timeout_s=args.timeout, max_answer_mb=args.max_answer_mb,
                          retries=args.retries)


def cache_dir(args) -> str:
    """--cache-dir, or factprobe's default cache."""
    from factprobe.core.cache import default_cache_dir
    return args.cache_dir or str(default_cache_dir())
