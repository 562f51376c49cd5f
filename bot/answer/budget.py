"""The question's time budget (CITEBOT_QUESTION_BUDGET_S), as a deadline every model call sees.

The budget is counted per question, not per request: a model that hangs would
otherwise keep the asker waiting for every request's timeout and every
retry's backoff in turn. So `within_budget` sets a deadline for everything
the question runs, and the chat backends read it (`time_left`): each
request's timeout is capped by what is left, and a retry that cannot start in
time is not waited for. `BudgetSpent` says the question is out of time,
wherever that was found out; the asyncio timeout around the whole run is the
backstop for the parts that do not look at the deadline (retrieval,
verification).

The deadline lives in a context variable: tasks and threads the question
starts inherit it, so a model call made anywhere within it is bounded the
same way without each caller passing it along.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

# time.monotonic() by which the current question must be done; None outside a question.
_deadline: ContextVar[float | None] = ContextVar("citebot_question_deadline", default=None)


class BudgetSpent(Exception):
    """The question used up its time budget: the asker hears back now, not after more tries."""


def time_left() -> float | None:
    """Seconds left of the current question's budget (negative once past it); None when no budget is set."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


async def within_budget(work: Awaitable[T], seconds: float) -> T:
    """`work`, given `seconds` in all; BudgetSpent when they run out."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        async with asyncio.timeout(seconds) as scope:
            return await work
    except TimeoutError:
        if not scope.expired():
            raise
        raise BudgetSpent("the question's time ran out while it was being answered") from None
    finally:
        _deadline.reset(token)
