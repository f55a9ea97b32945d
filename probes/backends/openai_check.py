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
checked) and ``--tokenizer`` is given, the backend scores with completions forced to each
continuation token (``forced``): the prompt is everything before the token (as text), which
gets a +100 ``logit_bias`` at temperature 0; the log-probability the server returns for a
generated token is the unbiased one, read from the right row (the bias acts in the sampler;
checked here by forcing a token the model does not write). Tokens that cut a UTF-8 character
(or that the tokenizer would merge across a cut) cannot end a text prompt: such a group is one
completion of as many tokens, its order fixed by a grammar (llama.cpp's GBNF) that allows only
the group's bytes. One request per continuation token, where the echo takes one per option
(llama-cpp-python's server reuses the shared prompt prefix between them).
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


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal (llama.cpp's grammars).

    >>> gbnf_literal('a "b"\\n')
    '"a \\\\"b\\\\"\\\\n"'
    """
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def forced_body(model: str, prompt: str, ids: list[int], text: str) -> dict:
    """A greedy completion of ``prompt`` forced to the tokens ``ids`` (spelling ``text``): a
    +100 bias on them and, for more than one token, a grammar that allows only ``text``'s
    bytes in order (the bias alone would not fix their order)."""
    body = {**greedy_body(model, prompt), "max_tokens": len(ids),
            "logit_bias": {str(t): BIAS for t in sorted(set(ids))}}
    if len(ids) > 1:
        body["grammar"] = f"root ::= {gbnf_literal(text)}"
    return body


def groups(tok, prefix: str, start: list[int], ids: list[int]) -> list[int]:
    """Where the tokens ``ids`` after ``prefix`` (tokenized ``start``) can be cut: after j
    tokens when ``prefix`` + their text tokenizes back into exactly ``start`` + ``ids[:j]``
    (a prompt is text: a cut inside a UTF-8 character, or one the tokenizer would merge
    across, cannot be sent). The cuts, 0 and len(ids) included."""
    cuts = [0]
    for j in range(1, len(ids)):
        text = tok.decode(ids[:j])
        if "\ufffd" not in text and \
                tok(prefix + text, add_special_tokens=False)["input_ids"] == start + ids[:j]:
            cuts.append(j)
    return cuts + [len(ids)]


def forced_scores(post: Callable[[dict], dict], model: str, prompt: str, ids: list[int],
                  text: str, n_prompt: int, tok) -> list[float]:
    """The log-probability of each of ``ids`` after the text ``prompt`` (``n_prompt`` tokens
    locally), from one forced completion; the answer must be exactly those tokens (their
    count, their text, each piece that is whole UTF-8) read from exactly that prompt."""
    from factprobe.core.errors import UserError
    from factprobe.core.retry import Retryable
    got = post(forced_body(model, prompt, ids, text))
    out_text, _, lp = _first(got)
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    if not isinstance(values, list) or len(values) < len(ids) or not all(
            isinstance(v, (int, float)) and not math.isinf(v) and v <= 0
            for v in values[:len(ids)]):
        raise Retryable("a forced completion came back without a log-probability per token")
    usage = got.get("usage") if isinstance(got, dict) else None
    n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(n, int) and n != n_prompt:
        raise UserError(f"the server reads {prompt[-40:]!r} as {n} tokens where --tokenizer "
                        f"gives {n_prompt}: give the served model's tokenizer as --tokenizer")
    pieces = [tok.decode([t]) for t in ids]
    served = [str(x) for x in (lp.get("tokens") or [])][:len(ids)]
    if out_text != text or len(served) != len(ids) or any(
            "\ufffd" not in want and want != have for want, have in zip(pieces, served)):
        raise UserError(f"a completion forced to {text!r} ({len(ids)} tokens) came back as "
                        f"{out_text!r} ({served}): the server does not honour logit_bias (and "
                        f"a grammar, for a token cut inside a character), or --tokenizer is "
                        f"not the served model's")
    return [float(v) for v in values[:len(ids)]]


def check_forced(post: Callable[[dict], dict], model: str, tok) -> str:
    """Does a forced completion (``forced_body``) return the forced tokens with their unbiased
    log-probabilities? Forced here: the probe text's first word once more after it, which the
    greedy model does not write (if it is not the greedy token, it must come back less likely
    than the greedy one). '' if so, else why not."""
    from factprobe.core.errors import UserError
    from factprobe.core.retry import Retryable
    text = PROBES[0]
    g, lg, _ = _first(post(greedy_body(model, text)))
    if not isinstance(lg, (int, float)):
        return "its greedy completion came back without a log-probability"
    start = tok(text, add_special_tokens=False)["input_ids"]
    whole = tok(text + " " + text, add_special_tokens=False)["input_ids"]
    ids = whole[len(start):]
    try:
        values = forced_scores(post, model, text, ids[:1], tok.decode(ids[:1]), len(start), tok)
    except (UserError, Retryable) as exc:
        return str(exc)
    if tok.decode(ids[:1]) != g and not values[0] < lg:
        return "the log-probability of a token forced by logit_bias includes the bias"
    return ""


def score_forced(post: Callable[[dict], dict], model: str, tok, context: str,
                 continuation: str, shown: str) -> tuple[list[float], list[int], int]:
    """A continuation's token log-probabilities and ids through one forced completion, and
    the prompt tokens sent. Its tokens are the local tokenizer's, split as the echo path
    splits them; with no context, the prompt is the BOS (else EOS) token, as the local
    backend's is (as text: servers parse special tokens in a prompt)."""
    from factprobe.core.errors import UserError
    ctx_ids = tok(context, add_special_tokens=False)["input_ids"]
    whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
    ids = whole[len(ctx_ids):] if whole[:len(ctx_ids)] == ctx_ids else \
        tok(continuation, add_special_tokens=False)["input_ids"]
    prompt = context
    if not context:
        first = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        prompt = tok.decode([first]) if first is not None else ""
        ctx_ids = [first] if first is not None else []
    if not ids:          # nothing to score (and max_tokens 0 means "no limit" to some servers)
        return [], [], 0
    if not prompt:
        raise UserError(f"{shown}: the continuation {continuation!r} has no context and "
                        f"the tokenizer no BOS or EOS token to start it: give every request "
                        f"a context")
    values, sent = [], 0
    cuts = groups(tok, prompt, ctx_ids, ids)
    for a, b in zip(cuts, cuts[1:]):
        # one request per group of tokens between two cuts: one token, but for a character
        # cut in pieces (or a merge the tokenizer would make across a cut)
        values += forced_scores(post, model, prompt + tok.decode(ids[:a]), ids[a:b],
                                tok.decode(ids[a:b]), len(ctx_ids) + a, tok)
        sent += len(ctx_ids) + a
    return values, list(ids), sent
