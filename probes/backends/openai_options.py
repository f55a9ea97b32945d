"""The ``openai`` kind's options: any OpenAI-compatible completions server (vLLM, SGLang, TGI,
llama.cpp's server, a hosted API) as a backend. Its config dataclass and its ``factprobe eval``
flags; the client and the backend are in :mod:`factprobe.probes.backends.openai_server`.

Light enough to import for ``--help``: no HTTP client is imported here. The API key is read
from ``OPENAI_API_KEY`` only, when the backend loads: no flag takes it, so it never reaches
the config, run.json or a checkpoint's identity.
"""
from __future__ import annotations

from dataclasses import dataclass

from factprobe.core.argtypes import megabytes, positive, seconds
from factprobe.core.errors import UserError
from factprobe.core.transport import DEFAULT_MAX_ANSWER_MB

EXAMPLE_URL = "http://127.0.0.1:8000/v1"


@dataclass(frozen=True)
class OpenAIConfig:
    model: str                       # the server's model name (/v1/models id)
    base_url: str = ""               # e.g. http://127.0.0.1:8000/v1
    concurrency: int = 4             # requests in flight at once
    timeout_s: float = 300.0         # for each whole answer (core.transport.bounded)
    retries: int = 3                 # attempts after the first (429 waits for Retry-After)
    # a local tokenizer (folder or Hub name): continuation boundaries and token ids from it
    # instead of the server's text offsets
    tokenizer: str | None = None
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB
    kind: str = "openai"


def add_flags(g) -> None:
    """The flags only the ``openai`` kind takes; parsed defaults are None, so one given to
    another kind is caught (factprobe.evaluation)."""
    g.add_argument("--base-url", help=f"the server's OpenAI API root, e.g. {EXAMPLE_URL} "
                   "(the key, if it needs one, from OPENAI_API_KEY)")
    g.add_argument("--concurrency", type=positive,
                   help="requests in flight at once (4)")
    g.add_argument("--timeout", type=seconds,
                   help="seconds for each whole answer before it is retried (300)")
    g.add_argument("--retries", type=int, choices=range(0, 11), metavar="0..10",
                   help="attempts after a failed one (3; HTTP 429 waits for Retry-After)")
    g.add_argument("--tokenizer",
                   help="a local tokenizer (folder or Hub name) matching the server's model: "
                        "option token boundaries and ids from it, not from text offsets")
    g.add_argument("--max-answer-mb", type=megabytes,
                   help=f"refuse a larger answer ({DEFAULT_MAX_ANSWER_MB:g})")


def from_args(args, kind: str) -> OpenAIConfig:
    if not getattr(args, "base_url", None):
        raise UserError(f"--backend {kind} needs --base-url, the server's API root, e.g. "
                        f"--base-url {EXAMPLE_URL}")
    from factprobe.core.urls import http_url
    http_url(args.base_url, "--base-url", EXAMPLE_URL)
    d = OpenAIConfig(model="")
    return OpenAIConfig(model=args.model, base_url=args.base_url.rstrip("/"),
                        concurrency=args.concurrency or d.concurrency,
                        timeout_s=args.timeout or d.timeout_s,
                        retries=d.retries if args.retries is None else args.retries,
                        tokenizer=args.tokenizer or None,
                        max_answer_mb=args.max_answer_mb or d.max_answer_mb, kind=kind)


def example_config(folder) -> OpenAIConfig:
    """The contract test serves a real tiny model itself (tests/completions_server.py) and
    builds its config from that server's URL: no config works without a running server."""
    raise UserError("the openai kind needs a running server; tests/completions_server.py "
                    "serves one")
