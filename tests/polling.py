"""Waiting for something another thread or process does: one poll with a deadline.

`wait_until(predicate, timeout, what)` calls `predicate` until it returns
something truthy and returns that; past `timeout` seconds it raises
`WaitTimeout` (an AssertionError, so pytest reports it as a failed check)
naming `what`. `wait_until_async` is the same for async tests: the predicate
may be a coroutine function, and the wait yields to the event loop.

The timeout bounds only a failure: a passing test returns as soon as the
predicate holds, so a generous timeout costs nothing and keeps a loaded
machine from turning into a flaky test.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

POLL_INTERVAL_S = 0.05


class WaitTimeout(AssertionError):
    """What a wait raises when its deadline passes."""


def _polls(timeout: float, what: str) -> Iterator[None]:
    """Yields once per poll, at least once; raises WaitTimeout once the deadline has passed."""
    deadline = time.monotonic() + timeout
    while True:
        yield
        if time.monotonic() > deadline:
            raise WaitTimeout(f"timed out after {timeout}s waiting for {what}")


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition",
               interval: float = POLL_INTERVAL_S) -> Any:
    for _ in _polls(timeout, what):
        if value := predicate():
            return value
        time.sleep(interval)


async def wait_until_async(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition",
                           interval: float = POLL_INTERVAL_S) -> Any:
    for _ in _polls(timeout, what):
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(interval)
