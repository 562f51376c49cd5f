"""Redis job queue, the web process's side: jobs, enqueue with dedupe, stats, dead letters.

The web process calls `JobQueue.enqueue` and acks Slack only once the job is
in Redis (bot.inbound.listeners): when Redis is down the enqueue raises, Slack
gets an error and delivers the event again later, so no question is lost.
Workers run a `Consumer` (bot.jobs.consumer) that takes each `Job` from the
stream and hands it to its handler (bot.wiring `job_handlers`); the handlers post
through the `Poster` (bot.slack.posting) so that a question is answered in
Slack once, even when its job runs twice.

The cut between the two modules follows the processes: this one holds what
both sides share (the values, the errors) and what the web process and the
CLI use; bot.jobs.consumer holds the scripts and timings only a worker uses.
Key names live in bot.store.keys, the Redis connection in bot.store.connection.

Why Redis Streams with a consumer group and not arq: docs/DESIGN.md, section 4.2.

Delivery, in one paragraph
--------------------------
enqueue: a Lua script sets the dedupe key (SET NX) and XADDs the job in one
step, so a Slack retry of the same event id never makes a second job and a
crash between the two cannot swallow the first. take: XREADGROUP ">" (new) or
XAUTOCLAIM (idle longer than the visibility timeout: its worker died). finish:
one Lua script checks that this worker still owns the entry, then XACK + XDEL
and, for a retry, ZADDs the job (attempt + 1) to the delayed set; for a job
handed back at shutdown, XADDs it again; for a dead job, LPUSHes it to the
capped dead-letter list. Workers move due retries back into the stream with
another script. Every step is atomic, so a job is always in exactly one of:
stream, delayed set, dead list, done.

Use
---
web process (one JobQueue per process)::

    async with JobQueue(settings.redis) as queue:
        await queue.enqueue(Job.of(AnswerPayload(question=...)), dedupe_id=event_id)

worker process: bot.wiring `run_worker` builds the handlers and runs a Consumer.

Exactly once in Slack is the handlers' side: the queue delivers at least once,
the Poster's ledger records each post right after it is made.

Errors: `QueueError` is the base; `QueueUnavailable` (Retryable) means Redis
refused, failed or did not answer in time (the web process lets it fail the
request, so that Slack retries); `JobLost` (Permanent) is what `on_dead` gets
for a job whose last try never finished. A handler that wants its job tried
again raises a `Retryable` (citebot_core.errors says what a worker does with
each kind). redis-py exceptions do not leave this module and bot.jobs.consumer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel
from redis.exceptions import RedisError
from redis.typing import EncodableT

from bot.jobs.job import Job
from bot.store.connection import connect, redis_location
from bot.store.keys import (
    CLUSTER_QUEUE_SHARDS,
    HEARTBEAT_PREFIX,
    SINGLE_QUEUE_SHARDS,
    WORKERS_GROUP,
    QueueShard,
    queue_shards,
    shard_of,
)
from bot.store.redis_target import RedisMode, RedisTarget, as_target
from bot.store.replicated import has_replicas, run_replicated
from citebot_core.deadline import time_left
from citebot_core.errors import CitebotError, Permanent, Retryable

# --- Magic numbers of the web side (the worker's are in bot.jobs.consumer) -------------

# Slack retries an event three times within about five minutes; a day covers
# that and a web process replaying its own backlog, and a key costs bytes.
DEDUPE_TTL_S = 24 * 3600
# Slack wants the ack within 3 s; the enqueue must leave room for signature
# checking and the HTTP response, so each try gives up after one second, and
# the whole enqueue too unless a deadline allows more: a Slack request's
# (bot.inbound.web) lets it wait out a failover.
ENQUEUE_TIMEOUT_S = 1.0




def shard_count(target: RedisTarget | str) -> int:
    """How many shards the queue has with this Redis (bot.store.keys says why)."""
    return CLUSTER_QUEUE_SHARDS if as_target(target).resolved_mode is RedisMode.CLUSTER else SINGLE_QUEUE_SHARDS


def shards_of(target: RedisTarget | str) -> list[QueueShard]:
    return queue_shards(shard_count(target))


# --- Errors -----------------------------------------------------------------------


class QueueError(CitebotError):
    """Base of the queue's errors."""


class QueueUnavailable(QueueError, Retryable):
    """Redis did not answer in time, refused the connection, or failed the command."""


class JobTimedOut(QueueError, Retryable):
    """The job's try ran past the worker's job timeout (a hang): worth another try."""


class JobLost(QueueError, Permanent):
    """The job's last try ended without an outcome: its worker was killed or hung."""


# --- Values -----------------------------------------------------------------------


class DeadLetter(BaseModel):
    job: Job
    error: str
    failed_at: float
    worker: str


class QueueStats(BaseModel):
    waiting: int  # in the stream, not taken yet
    in_flight: int  # taken by a worker, not acked
    delayed: int  # waiting out a retry backoff
    dead: int  # in the dead-letter list


class WorkerInfo(BaseModel):
    worker_id: str
    host: str
    pid: int
    concurrency: int
    in_flight: int
    started_at: float
    beat_at: float


# --- Lua: the web side's steps (the worker's are in bot.jobs.consumer) ----------------

# KEYS: dedupe key, stream. ARGV: dedupe ttl, job id, job json.
ENQUEUE_LUA = """
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'EX', ARGV[1]) then return 0 end
redis.call('XADD', KEYS[2], '*', 'job', ARGV[3])
return 1
"""

# KEYS: stream, delayed, dead. ARGV: group. pcall: no group yet means nothing pending.
STATS_LUA = """
local pending = 0
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1])
if type(p) == 'table' and not p.err then pending = p[1] end
return {redis.call('XLEN', KEYS[1]), pending, redis.call('ZCARD', KEYS[2]), redis.call('LLEN', KEYS[3])}
"""


async def _awaited(reply: Any) -> Any:
    # redis-py annotates its commands for the sync and asyncio clients at once.
    return await reply


# --- The web process's side --------------------------------------------------------


class JobQueue:
    """Enqueue jobs and look at the queue. One per process; `close()` when done."""

    def __init__(self, redis_url: RedisTarget | str, *, enqueue_timeout: float = ENQUEUE_TIMEOUT_S):
        self._url = redis_url
        self._timeout = enqueue_timeout
        self._shards = shards_of(redis_url)
        self._replicated = has_replicas(redis_url)
        self._redis = connect(redis_url, timeout=enqueue_timeout)
        self._enqueue = self._redis.register_script(ENQUEUE_LUA)
        self._stats = self._redis.register_script(STATS_LUA)

    async def __aenter__(self) -> JobQueue:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def enqueue(self, job: Job, *, dedupe_id: str) -> bool:
        """Adds `job` unless `dedupe_id` was seen in the last day; False for a duplicate.

        Returns or raises `QueueUnavailable` within `enqueue_timeout`, or by the
        current deadline if one is set, whatever Redis does: the web process
        answers Slack within its 3 seconds either way, with the ack, or with an
        error that makes Slack deliver the event again.
        """
        shard = shard_of(dedupe_id, len(self._shards))
        keys = [shard.dedupe_key(dedupe_id), shard.stream]
        args: list[EncodableT] = [DEDUPE_TTL_S, job.id, job.model_dump_json()]
        if not self._replicated:
            return bool(await self._bounded(self._enqueue(keys=keys, args=args), f"enqueue job {job.id}"))
        done = await self._bounded(run_replicated(self._redis, self._enqueue, keys, args), f"enqueue job {job.id}")
        added = bool(done.reply)
        if added and done.replicas < 1:
            # The ack to Slack is the promise that the question is kept. Not
            # yet on a replica, it would go if the master failed now: no ack,
            # so Slack sends the event again. The job stays and runs; the
            # resent event finds its dedupe key and is acked as a duplicate,
            # unless the master did fail, and then it is enqueued anew.
            raise QueueUnavailable(f"job {job.id} is not on a replica yet (WAIT timed out): Slack will send it again")
        if not added and done.tries > 1:
            # Tried again through a failover, and the dedupe key is there: it may be the write
            # of this very request's first try, whose reply was lost and which no replica
            # confirmed. Not acked, as above; Slack's resend is acked as the duplicate it is.
            raise QueueUnavailable(f"job {job.id}: enqueued before a failover, not confirmed: Slack will send it again")
        return added

    async def stats(self) -> QueueStats:
        """The sums over every shard."""
        replies = await self._bounded(
            asyncio.gather(*(self._stats(keys=[s.stream, s.delayed, s.dead], args=[WORKERS_GROUP]) for s in self._shards)),
            "read queue stats",
        )
        length, pending, delayed, dead = (sum(column) for column in zip(*replies, strict=True))
        return QueueStats(waiting=length - pending, in_flight=pending, delayed=delayed, dead=dead)

    async def depth(self) -> int:
        """Jobs no worker is running yet: waiting plus waiting out a retry backoff."""
        stats = await self.stats()
        return stats.waiting + stats.delayed

    async def dead_letters(self, limit: int = 50) -> list[DeadLetter]:
        """The newest `limit` of every shard's dead letters, newest first."""
        lists = await self._bounded(
            asyncio.gather(*(_awaited(self._redis.lrange(s.dead, 0, limit - 1)) for s in self._shards)),
            "read dead letters",
        )
        letters = [DeadLetter.model_validate_json(item) for raw in lists for item in raw]
        return sorted(letters, key=lambda letter: letter.failed_at, reverse=True)[:limit]

    async def workers(self) -> list[WorkerInfo]:
        """Workers whose heartbeat has not expired."""
        return await self._bounded(self._live_workers(), "read worker heartbeats")

    async def _live_workers(self) -> list[WorkerInfo]:
        # The heartbeats share one hash tag: in a cluster, one node holds
        # them all, and the MGET stays within one slot.
        keys = [key async for key in self._redis.scan_iter(match=HEARTBEAT_PREFIX + "*")]
        values = await self._redis.mget(keys) if keys else []
        # A heartbeat may expire between SCAN and MGET: skip the gap.
        return [WorkerInfo.model_validate_json(v) for v in values if v is not None]

    async def close(self) -> None:
        await self._redis.aclose()

    async def _bounded(self, awaitable: Any, what: str) -> Any:
        # The socket timeouts do not cover DNS or waiting for a pool
        # connection; asyncio.timeout bounds the whole call. Within a deadline
        # (a Slack request's) the call may use what is left of it: a try through
        # a failover (bot.store.connection) is cut off at the deadline too.
        left = time_left()
        bound = self._timeout if left is None else max(left, 0.0)
        try:
            async with asyncio.timeout(bound):
                return await awaitable
        except (TimeoutError, RedisError, OSError) as exc:
            where = redis_location(self._url)
            raise QueueUnavailable(
                f"could not {what}: Redis at {where} did not answer within {bound:.2g}s "
                f"({type(exc).__name__}: {exc or 'timed out'})"
            ) from exc


__all__ = [
    "DeadLetter",
    "Job",
    "JobLost",
    "JobQueue",
    "JobTimedOut",
    "QueueError",
    "QueueStats",
    "QueueUnavailable",
    "WorkerInfo",
    "shard_count",
    "shards_of",
]
