"""A job handed to the handler its kind registered (bot.wiring `job_handlers`), and a dead job to its kind's
last word: the Consumer (bot.jobs.consumer) takes `handle` and `on_dead` from here."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from bot.jobs.job import Job, JobKind
from bot.logs import about_question

log = logging.getLogger(__name__)

Handler = Callable[[Job], Awaitable[None]]
OnDead = Callable[[Job, BaseException], Awaitable[None]]


@dataclass
class Dispatcher:
    handlers: Mapping[JobKind, Handler]
    # What whoever waits hears when a job of this kind failed for good; a kind without one is only logged.
    last_words: Mapping[JobKind, OnDead] = field(default_factory=dict)

    async def handle(self, job: Job) -> None:
        with about_question(_question_id(job)):
            handler = self.handlers.get(job.kind)
            if handler is None:
                raise ValueError(f"unknown job kind {job.kind!r}")
            await handler(job)

    async def on_dead(self, job: Job, error: BaseException) -> None:
        """The last try failed: whoever waits hears about it, never silence."""
        with about_question(_question_id(job)):
            log.error("job %s (%s) failed for good: %s", job.id, job.kind, error)
            if (last_word := self.last_words.get(job.kind)) is not None:
                await last_word(job, error)


def _question_id(job: Job) -> str | None:
    try:
        return job.parsed().about
    except ValueError:
        return None  # not readable: the handler says why, with the job id
