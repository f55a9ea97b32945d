"""Bounds on every HTTP answer factprobe reads: a deadline for the whole answer and a size cap.

A socket timeout bounds one read, not an answer: a server that sends a row every half second, or
trickles its headers a byte at a time, keeps a client waiting forever, and one that floods is
read into memory until the machine gives out. So every request factprobe makes (SPARQL, the
Wikidata Action API, OpenAI-compatible chat endpoints, the Hub's API answers) runs under two
bounds:

- ``--timeout``: the whole answer, headers and body, must arrive within it. The request runs on
  a worker thread that the caller stops waiting for at the deadline; the worker itself gives up
  at its next chunk (or its next socket timeout), so it never outlives the deadline by more
  than one read.
- ``--max-answer-mb``: the body is read in chunks and refused as soon as it passes the cap (or
  at once when ``Content-Length`` announces more), before any of it is decoded.

The Hub's API answers (JSON metadata; :func:`factprobe.core.hub.bound_hub_answers`) get the
same cap, and ``HF_HUB_ETAG_TIMEOUT`` (huggingface_hub's timeout for metadata) as the deadline
for their body; files are streamed to disk by huggingface_hub under its own timeouts.
"""
from __future__ import annotations

import importlib
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from factprobe.core.retry import Retryable

T = TypeVar("T")

MB = 1 << 20
# A real answer is far smaller: a WDQS page of 10,000 rows with labels is a few MB, a
# wbgetentities batch well under one, a chat completion a few KB. 100 MB of JSON still decodes
# in well under the 1.5 GB a build may take.
DEFAULT_MAX_ANSWER_MB = 100
CHUNK = 64 << 10

_local = threading.local()


class DeadlineExceeded(Retryable):
    """The whole answer did not arrive within the deadline (worth another attempt)."""

    def __init__(self, seconds: float):
        super().__init__(f"no answer within {seconds:g} s (--timeout, for the whole answer)")


class BadEncoding(Retryable):
    """A body compressed in a way that was not asked for, or damaged."""


class AnswerTooLarge(Exception):
    """The answer passed the size cap; the caller turns it into a UserError naming the server."""

    def __init__(self, max_bytes: int):
        super().__init__(f"answer larger than {max_bytes / MB:g} MB")
        self.max_bytes = max_bytes


def too_large_message(what: str, max_bytes: int, todo: str) -> str:
    """One line for a refused answer.

    >>> too_large_message("SPARQL endpoint http://x/q", 5 * MB, "ask for less (--page-size)")
    'SPARQL endpoint http://x/q sent an answer larger than 5 MB (--max-answer-mb 5); ask for less (--page-size), or raise --max-answer-mb'
    """
    mb = f"{max_bytes / MB:g}"
    return (f"{what} sent an answer larger than {mb} MB (--max-answer-mb {mb}); {todo}, or "
            f"raise --max-answer-mb")


@dataclass(frozen=True)
class Deadline:
    seconds: float
    at: float

    @classmethod
    def start(cls, seconds: float) -> "Deadline":
        return cls(seconds, time.monotonic() + seconds)

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        if self.left() <= 0:
            raise DeadlineExceeded(self.seconds)


def current_deadline() -> Deadline | None:
    """The deadline of the request this thread is running for (None outside :func:`bounded`)."""
    return getattr(_local, "deadline", None)


def bounded(call: Callable[[Deadline], T], timeout_s: float) -> T:
    """``call(deadline)`` on a worker thread; its result, its exception, or
    :class:`DeadlineExceeded` when it has not returned ``timeout_s`` seconds after the start.

    The worker is a daemon thread: one left behind blocked in a read ends at its socket
    timeout, or with the process.
    """
    deadline = Deadline.start(timeout_s)
    box: dict = {}

    def work() -> None:
        _local.deadline = deadline
        try:
            box["value"] = call(deadline)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box["error"] = exc

    worker = threading.Thread(target=work, name="factprobe-http", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline.left()))
    if worker.is_alive():
        raise DeadlineExceeded(timeout_s)
    if "error" in box:
        raise box.pop("error")
    return box["value"]


def check_length(headers, max_bytes: int) -> None:
    """Refuse an answer whose ``Content-Length`` already says it is too large."""
    try:
        length = int((headers.get("Content-Length") or "").strip() or -1)
    except (TypeError, ValueError):
        return  # a malformed length is the HTTP library's to judge
    if length > max_bytes:
        raise AnswerTooLarge(max_bytes)


def read_capped(chunks: Iterable[bytes], max_bytes: int,
                deadline: Deadline | None = None) -> bytes:
    """The concatenated ``chunks``, refused past ``max_bytes`` or past the deadline.

    >>> read_capped([b"ab", b"cd"], 4)
    b'abcd'
    >>> try:
    ...     read_capped([b"ab", b"cd", b"e"], 4)
    ... except AnswerTooLarge:
    ...     print("refused")
    refused
    """
    parts: list[bytes] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise AnswerTooLarge(max_bytes)
        parts.append(chunk)
        if deadline is not None:
            deadline.check()
    return b"".join(parts)


def cause(exc: BaseException | None, kind: type) -> BaseException | None:
    """The first exception of ``kind`` in ``exc``'s chain (HTTP libraries wrap what a stream
    raised in their own errors)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


# ------------------------------------------------------------------------ httpx-based clients

_STREAMS: dict[type, type] = {}
# What the httpx-based clients ask for; the body is inflated here, under the cap, because the
# client's own decoder inflates a whole chunk at once (64 KB of gzip can be 64 MB).
ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15}


def _inflated(chunks: Iterable[bytes], encoding: str, max_bytes: int) -> Iterable[bytes]:
    """The decompressed ``chunks``, at most ``CHUNK`` bytes at a time, refused past the cap.

    >>> import zlib
    >>> c = zlib.compressobj(9, zlib.DEFLATED, 31)
    >>> body = c.compress(b"x" * 100_000) + c.flush()
    >>> len(b"".join(_inflated([body], "gzip", 100_000)))
    100000
    >>> try:
    ...     b"".join(_inflated([body], "gzip", 99_999))
    ... except AnswerTooLarge:
    ...     print("refused")
    refused
    """
    wbits = _WBITS.get(encoding)
    if wbits is None:
        raise BadEncoding(f"the answer is compressed as {encoding!r}, which was not asked for")
    inflate = zlib.decompressobj(wbits)
    total = 0
    try:
        for chunk in chunks:
            while chunk:
                out = inflate.decompress(chunk, CHUNK)
                chunk = inflate.unconsumed_tail
                total += len(out)
                if total > max_bytes:
                    raise AnswerTooLarge(max_bytes)
                if out:
                    yield out
        tail = inflate.flush()
    except zlib.error as exc:
        raise BadEncoding(f"the {encoding} answer is damaged ({exc})") from None
    if total + len(tail) > max_bytes:
        raise AnswerTooLarge(max_bytes)
    if tail:
        yield tail


def _capped_stream_class(base: type) -> type:
    """A subclass of the client's own ``SyncByteStream`` (httpx or httpx2, whichever the
    client library uses) that counts bytes and watches the deadline."""
    if base not in _STREAMS:
        class CappedStream(base):  # type: ignore[misc, valid-type]
            def __init__(self, inner, max_bytes: int, deadline: Deadline | None,
                         encoding: str | None):
                self.inner, self.max_bytes, self.deadline = inner, max_bytes, deadline
                self.encoding = encoding

            def __iter__(self):
                total = 0
                chunks = self.inner if self.encoding is None else _inflated(
                    self.inner, self.encoding, self.max_bytes)
                for chunk in chunks:
                    total += len(chunk)
                    if total > self.max_bytes:
                        raise AnswerTooLarge(self.max_bytes)
                    if self.deadline is not None:
                        self.deadline.check()
                    yield chunk

            def close(self) -> None:
                self.inner.close()

        _STREAMS[base] = CappedStream
    return _STREAMS[base]


def capping_hook(max_bytes: int, applies: Callable[[object], bool] = lambda request: True,
                 seconds: Callable[[], float] | None = None) -> Callable[[object], None]:
    """An httpx ``response`` event hook that puts the size cap and a deadline on the body
    before the client reads it: the deadline of the :func:`bounded` call it runs under, else
    ``seconds()`` from the headers' arrival (None: none)."""

    def hook(response) -> None:
        if not applies(response.request):
            return
        deadline = current_deadline()
        if deadline is None and seconds is not None:
            deadline = Deadline.start(seconds())
        check_length(response.headers, max_bytes)
        encoding = response.headers.get("Content-Encoding", "").strip().lower() or None
        if encoding == "identity":
            encoding = None
        if encoding is not None:
            # inflated by the stream below, so the client must not inflate it again
            del response.headers["Content-Encoding"]
        base = importlib.import_module(type(response).__module__.split(".")[0]).SyncByteStream
        response.stream = _capped_stream_class(base)(response.stream, max_bytes, deadline,
                                                     encoding)

    return hook
