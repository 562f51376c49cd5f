"""A deadline for a piece of work that every request made within it sees: a question's time budget.

A budget counted per request would let a server that hangs keep the caller
waiting for every request's timeout and every retry's backoff in turn. So the
work sets one deadline (bot.answer.budget `within_budget` for a question) and
the HTTP clients read it (`time_left`, `request_timeout`): each request's
timeout is capped by what is left, and a retry that cannot start in time is
not waited for (citebot_core.http).

The deadline lives in a context variable: tasks and threads the work starts
inherit it, so a request made anywhere within it is bounded the same way
without each caller passing it along.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from citebot_core.errors import Permanent

# time.monotonic() by which the current work must be done; None outside any.
_deadline: ContextVar[float | None] = ContextVar("citebot_question_deadline", default=None)


class BudgetSpent(Permanent):
    """The work used up its time budget: the caller hears back now, not after more tries."""


def time_left() -> float | None:
    """Seconds left of the current deadline (negative once past it); None when none is set."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


@contextmanager
def deadline_in(seconds: float) -> Iterator[None]:
    """Everything run inside sees a deadline `seconds` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def request_timeout(configured: float, what: str) -> float:
    """A request's timeout: the configured one, or what is left of the deadline if that is less.
    BudgetSpent when nothing is left for `what`."""
    left = time_left()
    if left is None:
        return configured
    if left <= 0:
        raise BudgetSpent(f"no time left of the question's budget for {what}")
    return min(configured, left)


__all__ = ["BudgetSpent", "deadline_in", "request_timeout", "time_left"]
