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
from collections.abc import Awaitable
from typing import TypeVar

from citebot_core.deadline import BudgetSpent, deadline_in, time_left

T = TypeVar("T")


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


__all__ = ["BudgetSpent", "time_left", "within_budget"]
