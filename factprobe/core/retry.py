"""Bounded retries with exponential backoff that honour HTTP 429 Retry-After."""
from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from factprobe.core.errors import UserError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3            # attempts after the first
    backoff_s: float = 1.0      # first wait; doubles each time (1, 2, 4 s: 7 s in all)
    max_retry_after_s: float = 300.0  # a longer Retry-After is reported, not waited out


class Retryable(Exception):
    """A failure worth another attempt; ``retry_after`` is the server's requested wait."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date).

    >>> parse_retry_after("7")
    7.0
    >>> parse_retry_after(None) is None
    True
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def with_retries(call: Callable[[], T], policy: RetryPolicy, what: str,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``call``; on :class:`Retryable` wait and try again, at most ``policy.retries`` times."""
    wait = policy.backoff_s
    for attempt in range(policy.retries + 1):
        try:
            return call()
        except Retryable as exc:
            if attempt == policy.retries:
                tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                raise UserError(f"{what} failed after {tries}: {exc}. Check that the service "
                                f"is up and reachable, or raise --retries.") from None
            delay = wait
            if exc.retry_after is not None:
                if exc.retry_after > policy.max_retry_after_s:
                    raise UserError(f"{what}: the server asks to wait {exc.retry_after:.0f} s "
                                    f"(Retry-After), longer than the {policy.max_retry_after_s:.0f}"
                                    f" s allowed; try again later.") from None
                delay = exc.retry_after
            sleep(delay)
            wait *= 2
    raise AssertionError("unreachable")
