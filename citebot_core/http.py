"""HTTP to the servers citebot depends on (model servers, embedding servers): the retry loop and what it shares.

One loop, in two colours: `send` for the synchronous embedders (indexing runs
in threads) and `asend` for the model clients; both take their decisions
from `RetryPolicy.next_delay`, so they cannot drift apart. A request function
raises a `Retryable` for a failure worth another try (see `transient_status`
and TRANSIENT_TRANSPORT for which) and anything else for one that is not;
the loop gives up when the tries run out, when the server asks for a longer
wait than the caller takes, or, under a deadline (citebot_core.deadline),
when the next try could not start in time (BudgetSpent). Each error that
leaves the loop carries `attempts`: the requests sent, for messages and the
audit.

httpx exceptions are translated by each client, where it knows what the
request was for; the helpers here only say which ones are worth another try
and how a URL or a body is shown.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from citebot_core.deadline import BudgetSpent, time_left
from citebot_core.errors import CitebotError, Retryable
from citebot_core.retry import backoff_delay

T = TypeVar("T")

# Transport failures worth another try; the rest (a bad scheme, a proxy
# misconfiguration, a request httpx cannot even build) fail the same way every time.
TRANSIENT_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
# How much of an error body goes into a message (servers send whole HTML pages).
ERROR_EXCERPT = 200


def transient_status(status: int) -> bool:
    """A status worth another try: rate limited, or the server in trouble."""
    return status == 429 or status >= 500


def redact(url: str) -> str:
    """The URL as shown in errors and logs: without user:password."""
    return str(httpx.URL(url).copy_with(username=None, password=None))


def excerpt(text: str) -> str:
    """The start of a body, on one line, for a message."""
    text = " ".join(text.split())
    return text if len(text) <= ERROR_EXCERPT else text[:ERROR_EXCERPT] + "…"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a client tries again; each client keeps its own numbers (citebot_core.retry says why)."""

    retries: int  # after the first try
    base: float  # seconds before the first retry, doubled each time
    cap: float
    jitter: float = 0.0
    # A Retry-After longer than this gives up instead of waiting: someone is waiting for the answer.
    max_retry_after: float | None = None
    # Whether the loop stops at the current deadline rather than sleeping past it.
    deadline: bool = False

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")

    def next_delay(self, exc: Retryable, attempt: int) -> float | None:
        """Seconds to wait after try `attempt` (0 for the first) failed with `exc`; None to give up.
        BudgetSpent when the deadline would pass before the next try starts."""
        if attempt >= self.retries:
            return None
        delay = backoff_delay(attempt, base=self.base, cap=self.cap, jitter=self.jitter)
        if exc.retry_after is not None:
            if self.max_retry_after is not None and exc.retry_after > self.max_retry_after:
                return None
            delay = max(delay, exc.retry_after)
        left = time_left() if self.deadline else None
        if left is not None and delay >= left:
            raise BudgetSpent(f"no time left of the question's budget for another try after: {exc}") from exc
        return delay


def _counted(exc: BaseException, attempt: int) -> None:
    if isinstance(exc, CitebotError):
        exc.attempts = attempt + 1


def send(
    request: Callable[[], T], policy: RetryPolicy, *, sleep: Callable[[float], None] = time.sleep,
    log: logging.Logger | None = None,
) -> T:
    """`request()`, tried again after each Retryable as `policy` says; what it returns, or the error that ended it."""
    attempt = 0
    while True:
        try:
            return request()
        except Retryable as exc:
            delay = _delay_or_raise(exc, attempt, policy, log)
        except CitebotError as exc:
            _counted(exc, attempt)
            raise
        sleep(delay)
        attempt += 1


async def asend(
    request: Callable[[], Awaitable[T]], policy: RetryPolicy, *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, log: logging.Logger | None = None,
) -> T:
    """`send` for a coroutine: the same decisions, awaited."""
    attempt = 0
    while True:
        try:
            return await request()
        except Retryable as exc:
            delay = _delay_or_raise(exc, attempt, policy, log)
        except CitebotError as exc:
            _counted(exc, attempt)
            raise
        await sleep(delay)
        attempt += 1


def _delay_or_raise(exc: Retryable, attempt: int, policy: RetryPolicy, log: logging.Logger | None) -> float:
    delay = policy.next_delay(exc, attempt)
    if delay is None:
        _counted(exc, attempt)
        raise exc
    if log is not None:
        log.warning("%s; retry %d/%d in %.2fs", exc, attempt + 1, policy.retries, delay)
    return delay


__all__ = ["ERROR_EXCERPT", "TRANSIENT_TRANSPORT", "RetryPolicy", "asend", "excerpt", "redact", "send", "transient_status"]
