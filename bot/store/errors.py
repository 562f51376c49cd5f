"""What a failed Redis command of the records means: `StoreUnavailable`, a Retryable.

The post ledger (bot.store.ledger) raises it itself; for the other records'
commands (answers, reviews, the audit trail) the worker's consumer translates
what redis-py raises into it where the job ends (bot.jobs.consumer), because
a Redis restart must not dead-letter a job and apologise for an LLM that
never failed. It is not a QueueUnavailable: the queue may be fine.
"""

from __future__ import annotations

from citebot_core.errors import Retryable


class StoreUnavailable(Retryable):
    """Redis refused, failed or did not answer a record's command: the job is worth another try."""


__all__ = ["StoreUnavailable"]
