"""lm-evaluation-harness's (context, continuation) token split without re-encoding the context.

The split encodes context + continuation and drops the context's own tokens. With a 50-shot
context and 100 options that is 100 encodings of a long string per fact: on a GPU, more time
than the model. Most tokenizers of causal LMs (byte-level BPE with a split regex: GPT-2,
GPT-NeoX/Pythia, Llama 3, Qwen, ...) cut text into pieces by local rules and tokenize every
piece on its own, so appending text changes at most the last pieces of the context. For those,
the tokens of context + continuation are the context's tokens up to a piece boundary a few
pieces before its end, then the tokens of (rest of the context + continuation): only the short
rest is encoded per option.

The backend keeps this exact: it is used only for tokenizers whose normaliser and pre-tokeniser
are known to be local, only when the rest of the context encodes to the context's own last
tokens, and it is checked against the full encoding on a schedule (every continuation of the
first requests, then ``CHECK_OPTIONS`` continuations of every ``CHECK_EVERY``-th request); one
disagreement switches it off for good.
"""
from __future__ import annotations

import json

LOCAL_PRETOKENIZERS = {"ByteLevel", "Split", "Digits", "Punctuation", "Whitespace",
                       "WhitespaceSplit"}
KEEP_PIECES = 3          # the cut is this many pieces before the end of the context
CHECK_FIRST = 2          # requests whose continuations are all checked against the full encoding
CHECK_EVERY = 32         # then one request in this many ...
CHECK_OPTIONS = 8        # ... on this many of its continuations


class TailSplitter:
    """Continuation tokens from the context's tail (see the module docstring)."""

    def __init__(self, backend):
        self.backend = backend      # a ``tokenizers.Tokenizer``

    def split(self, context: str, ctx: list[int], texts: list[str]) -> list[list[int]] | None:
        """Continuation tokens of ``context + t`` for each t, or None when no safe cut exists."""
        pieces = self.backend.pre_tokenizer.pre_tokenize_str(context)
        cut = pieces[-KEEP_PIECES][1][0] if len(pieces) > KEEP_PIECES else None
        return self.split_many([context], [ctx], [cut], [texts])[0]

    def split_many(self, contexts: list[str], ctxs: list[list[int]], cuts: list[int | None],
                   texts: list[list[str]]) -> list[list[list[int]] | None]:
        """``split`` for many contexts whose cut (a piece start) is known, in one batch."""
        batch: list[str] = []
        spans: list[int | None] = []
        for context, cut, opts in zip(contexts, cuts, texts):
            if cut is None or cut <= 0:
                spans.append(None)
                continue
            rest = context[cut:]
            spans.append(len(batch))
            batch.append(rest)
            batch.extend(rest + t for t in opts)
        encs = self.backend.encode_batch(batch, add_special_tokens=False) if batch else []
        out: list[list[list[int]] | None] = []
        for ctx, start, opts in zip(ctxs, spans, texts):
            own = encs[start].ids if start is not None else []
            n = len(own)
            if start is None or n == 0 or n >= len(ctx) or ctx[len(ctx) - n:] != own:
                out.append(None)
                continue
            out.append([encs[start + 1 + k].ids[n:] for k in range(len(opts))])
        return out


def piece_cut(word_ids: list[int | None], offsets: list[tuple[int, int]]) -> int | None:
    """Character offset where the ``KEEP_PIECES``-th last pre-token piece of an encoded
    context starts (from the encoding's word ids and offsets), or None.

    >>> piece_cut([0, 0, 1, 2, 2, 3], [(0, 2), (2, 4), (4, 6), (6, 7), (7, 9), (9, 10)])
    4
    """
    seen, cut = 0, None
    for k in range(len(word_ids) - 1, -1, -1):
        w = word_ids[k]
        if w is None:
            return None
        if k == 0 or word_ids[k - 1] != w:
            seen += 1
            if seen == KEEP_PIECES:
                cut = offsets[k][0]
                break
    return cut if cut and cut > 0 else None


def tail_splitter(tokenizer) -> TailSplitter | None:
    """A splitter for a fast tokenizer with no normaliser and local pre-tokenisers only."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.pre_tokenizer is None:
        return None
    try:
        spec = json.loads(backend.to_str())
    except (ValueError, TypeError):
        return None
    if spec.get("normalizer") is not None:
        return None
    pre = spec.get("pre_tokenizer") or {}
    items = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    for item in items:
        if not item or item.get("type") not in LOCAL_PRETOKENIZERS:
            return None
        if item.get("type") == "ByteLevel" and item.get("add_prefix_space"):
            return None
    return TailSplitter(backend) if items else None


def bos_by_default(tokenizer) -> bool:
    """Whether ``tokenizer`` puts its BOS token in front of a text when called with its
    defaults (``add_special_tokens=True``: what vLLM and ``tokenizer(text)`` send). Only the
    leading BOS counts: other special tokens (an EOS at the end) never go into a context that
    a continuation must follow."""
    bos = tokenizer.bos_token_id
    if bos is None:
        return False
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    return len(full) > len(plain) and full[0] == bos and full[1:1 + len(plain)] == plain


def checked(count: int, n: int) -> int:
    """How many continuations (of ``n``) of request number ``count`` (0-based) are checked
    against the full encoding.

    >>> [checked(i, 100) for i in (0, 1, 2, 31, 32, 64)]
    [100, 100, 0, 0, 8, 8]
    """
    if count < CHECK_FIRST:
        return n
    return min(n, CHECK_OPTIONS) if count % CHECK_EVERY == 0 else 0


class PairEncoder:
    """lm-evaluation-harness's split of many (context, continuations) in a few batched
    tokenizer calls: the contexts in one, the continuations with their context's last pieces
    in another (:class:`TailSplitter`) where the tokenizer allows, checked against the full
    encoding on a schedule; otherwise context + continuation encoded whole."""

    def __init__(self, tokenizer, add_bos: bool, prefix_token_id: int, encode, call=None):
        # ``call``: how to call the tokenizer (the backend's, under its lock)
        self.tok = call or tokenizer
        # BOS is put in front by hand, the text always encoded without special tokens: the
        # same ids as a tokenizer that adds BOS itself, and --add-bos works on one that does not
        self.bos = [tokenizer.bos_token_id] if add_bos else []
        self.prefix_token_id = prefix_token_id
        self.encode_one = encode          # the backend's cached single-text encoder
        self.tail = tail_splitter(tokenizer)
        self.uses = 0

    def encode(self, pairs: list[tuple[str, tuple[str, ...]]]
               ) -> list[tuple[list[int], list[list[int]]]]:
        out: list = [None] * len(pairs)
        todo, contexts, texts = [], [], []
        for j, (context, conts) in enumerate(pairs):
            if context == "":
                out[j] = ([self.prefix_token_id], [self.encode_one(c) for c in conts])
                continue
            # trailing spaces of the context move to the continuation
            n_spaces = len(context) - len(context.rstrip())
            moved = context[len(context) - n_spaces:] if n_spaces else ""
            todo.append(j)
            contexts.append(context[:len(context) - n_spaces])
            texts.append([moved + c for c in conts])
        if not todo:
            return out
        enc = self.tok(contexts, add_special_tokens=False,
                       return_offsets_mapping=self.tail is not None)
        ctxs = [list(ids) for ids in enc["input_ids"]]
        fast: list = [None] * len(todo)
        if self.tail is not None:
            cuts = [piece_cut(enc.word_ids(k), enc["offset_mapping"][k])
                    for k in range(len(todo))]
            fast = self.tail.split_many(contexts, ctxs, cuts, texts)
        for k, j in enumerate(todo):
            conts = fast[k]
            if conts is not None and self.tail is not None:
                n = checked(self.uses, len(conts))
                self.uses += 1
                if n and self.full_split(contexts[k], ctxs[k], texts[k][:n]) != conts[:n]:
                    self.tail = None      # the tokenizer is not local after all: stay exact
            if conts is None or self.tail is None:
                conts = self.full_split(contexts[k], ctxs[k], texts[k])
            out[j] = (self.bos + ctxs[k], conts)
        return out

    def full_split(self, context: str, ctx: list[int], texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        wholes = self.tok([context + t for t in texts],
                          add_special_tokens=False)["input_ids"]
        return [list(w[len(ctx):]) for w in wholes]
