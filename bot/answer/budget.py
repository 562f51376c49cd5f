"""The question's time budget (CITEBOT_QUESTION_BUDGET_S), as a deadline every model call sees.

The budget is counted per question, not per request: `within_budget` sets the
deadline (citebot_core.deadline, which says why it is one deadline for all)
for everything the question runs, and the chat backends read it. `BudgetSpent`
says the question is out of time, wherever that was found out; the asyncio
timeout around the whole run is the backstop for the parts that do not look
at the deadline (retrieval, verification).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from citebot_core.deadline import BudgetSpent, deadline_in, time_left

T = TypeVar("T")

# What a question needs after its last model call (the answer assembled and handed back to be
# posted): the judge and the regeneration give up this long before the question's deadline, so
# that a draft already made is answered with ("not sure", on the review card), not lost to the apology.
BUDGET_RESERVE_S = 1.0


async def within_budget(work: Awaitable[T], seconds: float) -> T:
    """`work`, given `seconds` in all; BudgetSpent when they run out."""
    with deadline_in(seconds):
        try:
            async with asyncio.timeout(seconds) as scope:
                return await work
        except TimeoutError:
            if not scope.expired():
                raise
            raise BudgetSpent("the question's time ran out while it was being answered") from None


async def before_reserve(work: Callable[[], Awaitable[T]]) -> T | None:
    """`work()`, or None when it cannot be done BUDGET_RESERVE_S before the question's deadline."""
    left = time_left()
    if left is None:
        return await work()
    if left <= BUDGET_RESERVE_S:
        return None
    try:
        async with asyncio.timeout(left - BUDGET_RESERVE_S) as scope:
            return await work()
    except BudgetSpent:
        return None
    except TimeoutError:
        if not scope.expired():
            raise
        return None


__all__ = ["BUDGET_RESERVE_S", "BudgetSpent", "before_reserve", "time_left", "within_budget"]
