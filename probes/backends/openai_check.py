"""The ``openai`` kind's start-up self-check: can this server's prompt log-probabilities be
trusted, and if not, can it score another way?

A server's echoed prompt log-probabilities can be present and still wrong. llama-cpp-python's
server (0.3.x) pairs each echoed prompt token with the logits row computed *at* that token
(the one that predicts the next token) whenever the prompt has no BOS token, so every value
is off by one position (its ``Llama._create_completion`` strips a leading BOS and then reads
the rows from 0; abetlen/llama-cpp-python#1471 fixed only the BOS case). The numbers look
like log-probabilities and agree with nothing: argmax agreement with the local backend was
chance. Nothing in the answer says so, hence a check against the server's own numbers:

1. one echo request (``probe``): a server that returns no prompt log-probabilities at all can
   only generate (the check stops there, one request);
2. a greedy one-token completion of a text T: its token g and g's log-probability, which
   every server computes from the last prompt row (the row generation itself samples from);
3. T + g echoed: the log-probability echoed for g must be the one just generated. A server
   whose echo is off by a row fails by whole nats (measured: -18.4 against -0.20).

Where the echo fails (or no probe text gives a clean token boundary, so it cannot be
checked) and ``--tokenizer`` is given, the backend scores with one-token completions forced
by ``logit_bias`` (``forced``): for each continuation token, the prompt is everything before
it and the token gets a +100 bias at temperature 0, and the log-probability the server
returns is the unbiased one (the bias acts in the sampler; checked here by forcing a token
that is not the greedy one: it must come back, less likely than the greedy one). That is one
request per continuation token where the echo takes one per option.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

# Texts that end on a whole word, so the greedy next token usually starts a new one and the
# echo of T + g has a token boundary where T ends.
PROBES = ("The capital of France is", "Q: What is the capital of Japan?\nA:",
          "Paris is a city in")
# The echo and the generation are two computations of one row (batch sizes differ): float
# noise is far below this; a row off by one position is whole nats away.
TOLERANCE = 0.02
BIAS = 100.0


@dataclass(frozen=True)
class Verdict:
    mode: str            # "echo", "forced" or "none" (generate only)
    why: str = ""        # for "forced" and "none": what the check saw, one clause


def _first(got: dict) -> tuple[str, float | None, dict | None]:
    """A completion's text, its first generated token's log-probability, the logprobs block."""
    choice = (got.get("choices") or [{}])[0] if isinstance(got, dict) else {}
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    value = None
    if isinstance(lp, dict) and lp.get("token_logprobs"):
        value = lp["token_logprobs"][0]
    text = choice.get("text") if isinstance(choice, dict) else None
    return (text if isinstance(text, str) else ""), value, lp


def echoed_at(lp: dict, start: int, end: int) -> float | None:
    """The echoed log-probability of the one prompt token spanning ``[start, end)`` of the
    text, or None if no single token does (a merge across the boundary)."""
    offsets = lp.get("text_offset") or []
    for i, o in enumerate(offsets):
        # the last echoed token ends where the text does (a server may leave the new token out)
        nxt = offsets[i + 1] if i + 1 < len(offsets) else end
        if o == start and nxt == end:
            v = lp["token_logprobs"][i]
            return float(v) if isinstance(v, (int, float)) else None
    return None


def greedy_body(model: str, prompt: str) -> dict:
    return {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0,
            "logprobs": 1, "echo": False}


def check_echo(post: Callable[[dict], dict], score_body: Callable[[str], dict],
               model: str) -> tuple[bool | None, str]:
    """Steps 2-3: True (echo lines up), False (it does not: why), None (no probe text gave a
    token boundary to compare at)."""
    for text in PROBES:
        g, lg, _ = _first(post(greedy_body(model, text)))
        if not g or not isinstance(lg, (int, float)) or math.isinf(lg):
            continue
        _, _, lp = _first(post(score_body(text + g)))
        if not isinstance(lp, dict):
            return False, "echoed a prompt without its log-probabilities"
        # the echo holds the prompt and the one new token: T + g ends where that token starts
        echoed = echoed_at(lp, len(text), len(text) + len(g))
        if echoed is None:
            continue
        if abs(echoed - lg) <= TOLERANCE * max(1.0, abs(lg)):
            return True, ""
        return False, (f"echoes {echoed:.3f} as the log-probability of a token it has just "
                       f"generated with {lg:.3f}: its prompt tokens are paired with the wrong "
                       f"logits rows (llama-cpp-python's server does this to a prompt without "
                       f"a BOS token), so its prompt log-probabilities cannot be trusted")
    return None, ("gave no token boundary at which to check its prompt log-probabilities "
                  "against its generated ones, so they cannot be trusted")


def check_forced(post: Callable[[dict], dict], model: str, tok) -> str:
    """Does a ``logit_bias``-forced one-token completion return the forced token with its
    unbiased log-probability? '' if so, else why not."""
    text = PROBES[0]
    g, lg, _ = _first(post(greedy_body(model, text)))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    choices = [t for t in ids if tok.decode([t]) not in ("", g)]
    if lg is None or not choices:
        return "its greedy completion came back without a log-probability"
    forced = choices[0]
    body = {**greedy_body(model, text), "logit_bias": {str(forced): BIAS}}
    got_text, value, _ = _first(post(body))
    if got_text != tok.decode([forced]):
        return (f"it does not honour logit_bias (forced {tok.decode([forced])!r}, got "
                f"{got_text!r}): is --tokenizer the served model's?")
    if not isinstance(value, (int, float)) or not value < lg:
        return "the log-probability of a token forced by logit_bias includes the bias"
    return ""


def forced_scores(post: Callable[[dict], dict], model: str, prefix: str, ids: list[int],
                  tok) -> list[float]:
    """The log-probability of each of ``ids`` after the text ``prefix`` and the ids before
    it: one forced one-token completion each. The prompt goes as text (not every server takes
    token ids: llama-cpp-python's refuses them), so it must tokenize back into the very ids
    scored, locally and on the server (its token count), else the numbers would be another
    prompt's."""
    from factprobe.core.errors import UserError
    from factprobe.core.retry import Retryable
    start = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    out = []
    for j, t in enumerate(ids):
        prompt = prefix + tok.decode(ids[:j])
        want = start + list(ids[:j])
        if tok(prompt, add_special_tokens=False)["input_ids"] != want:
            raise UserError(f"{prompt[-40:]!r} does not tokenize back into the tokens scored, "
                            f"so a forced completion (which sends text) cannot score it: "
                            f"score this dataset with a server whose echoed log-probabilities "
                            f"line up, or with --backend hf-causal")
        got = post({**greedy_body(model, prompt), "logit_bias": {str(t): BIAS}})
        text, value, _ = _first(got)
        if not isinstance(value, (int, float)) or math.isinf(value) or value > 0:
            raise Retryable(f"no log-probability for a forced token (got {value!r})")
        usage = got.get("usage") if isinstance(got, dict) else None
        n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if isinstance(n, int) and n != len(want):
            raise UserError(f"the server reads {prompt[-40:]!r} as {n} tokens where "
                            f"--tokenizer gives {len(want)}: give the served model's "
                            f"tokenizer as --tokenizer")
        piece = tok.decode([t])
        if "\ufffd" not in piece and text != piece:
            raise UserError(f"the server answered {text!r} to a completion forced to "
                            f"{piece!r} (logit_bias): give the served model's tokenizer as "
                            f"--tokenizer")
        out.append(float(value))
    return out
