"""Redis job queue: enqueue with dedupe, reliable take, retry, dead letter; all key names.

The web process calls `JobQueue.enqueue` and acks Slack; workers run a
`Consumer` (bot.jobs.consumer) that hands each `Job` to the answering handler;
the handler uses `PostLedger` so that a question is posted to Slack once, even
when its job runs twice.

Why Redis Streams with a consumer group, not arq
------------------------------------------------
arq 0.28.0 was read first (arq/worker.py, arq/connections.py). It cannot give
our guarantees without as much code around it as the Streams version needs:

* Recovery after SIGKILL is tied to the longest job run time. A started job is
  marked by `arq:in-progress:<id>`, set once with TTL `max(job_timeout) + 10`
  (worker.py `in_progress_timeout_s`, `start_jobs` psetex) and never renewed;
  only when it expires does another worker pick the job up. "Finished by
  another worker within two minutes" therefore forces `job_timeout` <= 110 s,
  while one answer may legitimately take longer (bot.answer.backends: 60 s per attempt,
  three attempts, plus one regeneration). arq issues #402 and #407 (heartbeat /
  renewable in-progress key) are open.
* A job that hits `job_timeout` fails for good: the `asyncio.TimeoutError`
  lands in the "failed" branch of `run_job`, it is not retried (issue #401).
* A question is lost in silence when its last try is killed: on redelivery
  `run_job` increments `arq:retry:<id>` and, when `job_try > max_tries`, calls
  `finish_failed_job` and returns before `on_job_start` or any user code runs;
  `on_job_end(ctx)` does not see the outcome either. No hook could apologise.
* Liveness is one `arq:queue:health-check` key per queue, not per worker, and
  `_job_id` dedupe only holds while the job or its result key exists.

Streams give the missing pieces directly: a delivered entry stays in the
group's pending list (PEL) until XACK, whoever holds it; XAUTOCLAIM with a
minimum idle time hands entries of a dead worker to a live one; XCLAIM ... JUSTID
on its own entries lets a live worker renew its lease without bumping the
delivery counter; the counter itself tells a redelivery after a crash apart
from a first run. So recovery time (`visibility_timeout`) is independent of
how long a job may run (`job_timeout`).

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

    queue = JobQueue(settings.redis_url)
    try:
        await queue.enqueue(Job(kind="answer", payload=...), dedupe_id=event_id)
    except QueueUnavailable:
        log.exception(...)      # ack Slack anyway
    ...
    await queue.close()

worker process::

    await run_worker(handle, on_dead=apologise, redis_url=..., concurrency=4)

`handle(job)` raises `Transient(retry_after=...)` for LLM/Slack hiccups and
posts through `PostLedger`: claim_post -> chat.postMessage -> record_posted.

Exactly once in Slack is the handler's side: the queue delivers at least once,
`PostLedger` records each post by question id right after it is made.

Errors: `QueueError` is the base; `QueueUnavailable` means Redis refused, failed
or did not answer in time (the web process logs it and acks Slack anyway);
`JobLost` is what `on_dead` gets for a job whose last try never finished.
`Transient` is raised by handlers, not by the queue. redis-py exceptions do not
leave this module and bot.jobs.consumer.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from pydantic import BaseModel, Field
from redis.exceptions import RedisError
from redis.typing import EncodableT

from bot.store.keys import (
    DEAD_LIST,
    DELAYED_ZSET,
    HEARTBEAT_PREFIX,
    JOBS_STREAM,
    WORKERS_GROUP,
    dedupe_key,
    post_attempt_key,
    post_claim_key,
    posted_key,
)

# --- Magic numbers: the one place (key names are in bot.store.keys) -------------------


# Slack retries an event three times within about five minutes; a day covers
# that and a web process replaying its own backlog, and a key costs bytes.
DEDUPE_TTL_S = 24 * 3600
# Slack wants the ack within 3 s; the enqueue must leave room for signature
# checking and the HTTP response, so it gives up after one second.
ENQUEUE_TIMEOUT_S = 1.0
# A job whose worker stopped renewing its lease this long ago is taken over.
# docs/DESIGN.md 4 promises "another worker finishes it within two minutes":
# 60 s + one reclaim interval leaves a minute for the job itself.
VISIBILITY_TIMEOUT_S = 60.0
# How often a worker looks for jobs of dead workers (capped at half the
# visibility timeout, so short test timeouts stay short).
RECLAIM_INTERVAL_S = 5.0
# Tries in all, the first included: with the backoff below the asker hears
# back (answer or apology) within about half a minute plus the tries' run time.
MAX_TRIES = 5
BACKOFF_BASE_S = 2.0  # before the second try; doubled per try, with jitter
BACKOFF_MAX_S = 60.0
# A hang is the only thing that should reach this: one answer may take two
# generations of three 60 s LLM attempts each (bot.answer.backends), about six minutes.
JOB_TIMEOUT_S = 600.0
# Workers write their heartbeat this often; the key lives three beats, so one
# slow beat does not make a live worker look dead.
HEARTBEAT_INTERVAL_S = 5.0
HEARTBEAT_TTL_FACTOR = 3
DEAD_LETTER_CAP = 1000  # bounded: a broken LLM for a day must not fill Redis
# Redelivery comes within minutes, but an operator may replay a dead letter
# days later: the post record must outlive that.
POSTED_TTL_S = 7 * 24 * 3600
# How long an idle worker blocks in XREADGROUP: bounds how late it notices a
# stop request or a retry that became due.
READ_BLOCK_S = 1.0
# Kubernetes sends SIGKILL 30 s after SIGTERM; finish in-flight jobs in 20 s,
# hand the rest back to the queue in the remaining time.
SHUTDOWN_GRACE_S = 20.0
# Worker commands may block up to READ_BLOCK_S; anything much longer is a hung
# connection and is treated as a Redis failure.
WORKER_SOCKET_TIMEOUT_S = 10.0
# Due retries moved into the stream per loop turn: Redis runs nothing else
# while a script runs, so one call must stay short.
PROMOTE_BATCH = 100
# After a Redis error the worker loop waits this long before trying again.
ERROR_PAUSE_S = 1.0
# Every worker process is a new consumer in the group. One with nothing
# pending and silent for an hour is gone (live ones read every READ_BLOCK_S);
# removing it keeps XINFO CONSUMERS readable. Checked once a minute.
STALE_CONSUMER_S = 3600.0
CONSUMER_SWEEP_INTERVAL_S = 60.0




# --- Errors -----------------------------------------------------------------------


class QueueError(Exception):
    """Base of the queue's errors."""


class QueueUnavailable(QueueError):
    """Redis did not answer in time, refused the connection, or failed the command."""


class Transient(Exception):
    """Raised by a job handler: try the job again later.

    `retry_after` (seconds) is honoured as given, e.g. Slack's Retry-After on a
    429; without it the worker backs off exponentially.
    """

    def __init__(self, message: str = "transient failure", *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class JobLost(QueueError):
    """The job's last try ended without an outcome: its worker was killed or hung."""


# --- Values -----------------------------------------------------------------------


class Job(BaseModel):
    """One unit of work. `payload` stays generic so the queue never imports the pipeline."""

    kind: str  # "answer", "review_decision", ...
    payload: dict[str, Any] = Field(default_factory=dict)
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    # 1 for the first try. Counts retries and redeliveries after a crash; the
    # worker fills it in on delivery.
    attempt: int = 1
    enqueued_at: float = Field(default_factory=time.time)


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


# --- Lua: each script is one atomic step of a job's life ---------------------------

# KEYS: dedupe key, stream. ARGV: dedupe ttl, job id, job json.
ENQUEUE_LUA = """
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'EX', ARGV[1]) then return 0 end
redis.call('XADD', KEYS[2], '*', 'job', ARGV[3])
return 1
"""

# KEYS: stream, delayed, dead. ARGV: group, consumer, entry id, action
# ("ack" | "retry" | "requeue" | "dead"), data (job json | dead-letter json),
# retry delay ms, dead cap. Due times come from the server's clock (TIME), so
# workers with skewed clocks agree on when a retry is due.
# Only the current owner may finish an entry: a worker whose lease was taken
# over must not ack the entry the new owner is working on.
# Milliseconds by the server's clock, for due times.
SERVER_MS_LUA = """
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

FINISH_LUA = SERVER_MS_LUA + """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #p == 0 or p[1][2] ~= ARGV[2] then return 0 end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('XDEL', KEYS[1], ARGV[3])
if ARGV[4] == 'retry' then
  redis.call('ZADD', KEYS[2], server_ms() + tonumber(ARGV[6]), ARGV[5])
elseif ARGV[4] == 'requeue' then
  redis.call('XADD', KEYS[1], '*', 'job', ARGV[5])
elseif ARGV[4] == 'dead' then
  redis.call('LPUSH', KEYS[3], ARGV[5])
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[7]) - 1)
end
return 1
"""

# KEYS: stream. ARGV: group, consumer, entry ids... Resets the idle time of
# entries this consumer still owns; returns those another consumer took over.
RENEW_LUA = """
local lost = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p > 0 then
    if p[1][2] == ARGV[2] then
      redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    else
      table.insert(lost, ARGV[i])
    end
  end
end
return lost
"""

# KEYS: delayed, stream. ARGV: max jobs. Moves due retries into the stream;
# returns milliseconds until the next one is due, or false.
PROMOTE_LUA = SERVER_MS_LUA + """
local now = server_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, job in ipairs(due) do
  redis.call('ZREM', KEYS[1], job)
  redis.call('XADD', KEYS[2], '*', 'job', job)
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if nxt[2] == nil then return false end
return math.max(tonumber(nxt[2]) - now, 0)
"""

# KEYS: stream. ARGV: group, consumer. DELCONSUMER drops the consumer's
# pending entries with it, which would lose their jobs: only an empty one goes.
FORGET_CONSUMER_LUA = """
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

# KEYS: stream, delayed, dead. ARGV: group. pcall: no group yet means nothing pending.
STATS_LUA = """
local pending = 0
local p = redis.pcall('XPENDING', KEYS[1], ARGV[1])
if type(p) == 'table' and not p.err then pending = p[1] end
return {redis.call('XLEN', KEYS[1]), pending, redis.call('ZCARD', KEYS[2]), redis.call('LLEN', KEYS[3])}
"""

# KEYS: posted key, claim key. ARGV: ttl, claimer.
CLAIM_POST_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'posted' end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[1]) then return 'granted' end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[1])
return 'in_doubt'
"""


# --- Connections ------------------------------------------------------------------


def redis_location(redis_url: str) -> str:
    """host:port/db for messages: never the password a URL may carry."""
    parts = urlsplit(redis_url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}{parts.path or '/0'}"


def connect(redis_url: str, *, timeout: float | None) -> aioredis.Redis:
    """A client whose connect and every command give up after `timeout` seconds."""
    return aioredis.Redis.from_url(
        redis_url,
        decode_responses=True,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )


# --- The web process's side --------------------------------------------------------


class JobQueue:
    """Enqueue jobs and look at the queue. One per process; `close()` when done."""

    def __init__(self, redis_url: str, *, enqueue_timeout: float = ENQUEUE_TIMEOUT_S):
        self._url = redis_url
        self._timeout = enqueue_timeout
        self._redis = connect(redis_url, timeout=enqueue_timeout)
        self._enqueue = self._redis.register_script(ENQUEUE_LUA)
        self._stats = self._redis.register_script(STATS_LUA)

    async def __aenter__(self) -> JobQueue:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def enqueue(self, job: Job, *, dedupe_id: str) -> bool:
        """Adds `job` unless `dedupe_id` was seen in the last day; False for a duplicate.

        Returns or raises `QueueUnavailable` within `enqueue_timeout`, whatever
        Redis does: the caller acks Slack either way.
        """
        keys = [dedupe_key(dedupe_id), JOBS_STREAM]
        args: list[EncodableT] = [DEDUPE_TTL_S, job.id, job.model_dump_json()]
        added = await self._bounded(self._enqueue(keys=keys, args=args), f"enqueue job {job.id}")
        return bool(added)

    async def stats(self) -> QueueStats:
        keys = [JOBS_STREAM, DELAYED_ZSET, DEAD_LIST]
        length, pending, delayed, dead = await self._bounded(
            self._stats(keys=keys, args=[WORKERS_GROUP]), "read queue stats"
        )
        return QueueStats(waiting=length - pending, in_flight=pending, delayed=delayed, dead=dead)

    async def depth(self) -> int:
        """Jobs no worker is running yet: waiting plus waiting out a retry backoff."""
        stats = await self.stats()
        return stats.waiting + stats.delayed

    async def dead_letters(self, limit: int = 50) -> list[DeadLetter]:
        raw = await self._bounded(self._redis.lrange(DEAD_LIST, 0, limit - 1), "read dead letters")
        return [DeadLetter.model_validate_json(item) for item in raw]

    async def workers(self) -> list[WorkerInfo]:
        """Workers whose heartbeat has not expired."""
        return await self._bounded(self._live_workers(), "read worker heartbeats")

    async def _live_workers(self) -> list[WorkerInfo]:
        keys = [key async for key in self._redis.scan_iter(match=HEARTBEAT_PREFIX + "*")]
        values = await self._redis.mget(keys) if keys else []
        # A heartbeat may expire between SCAN and MGET: skip the gap.
        return [WorkerInfo.model_validate_json(v) for v in values if v is not None]

    async def close(self) -> None:
        await self._redis.aclose()

    async def _bounded(self, awaitable: Any, what: str) -> Any:
        # The socket timeouts do not cover DNS or waiting for a pool
        # connection; asyncio.timeout bounds the whole call.
        try:
            async with asyncio.timeout(self._timeout):
                return await awaitable
        except (TimeoutError, RedisError, OSError) as exc:
            where = redis_location(self._url)
            raise QueueUnavailable(
                f"could not {what}: Redis at {where} did not answer within {self._timeout:g}s "
                f"({type(exc).__name__}: {exc or 'timed out'})"
            ) from exc


# --- Posting exactly once -----------------------------------------------------------


class PostClaim(StrEnum):
    GRANTED = "granted"  # nobody posted for this question: post, then record_posted
    POSTED = "posted"  # a post was recorded: do not post again
    # An earlier run claimed but never recorded: it may have posted and died
    # right after. The caller now holds the claim; it should look for its own
    # message in the thread (e.g. by message metadata) before posting.
    IN_DOUBT = "in_doubt"


class PostRecord(BaseModel):
    question_id: str
    channel: str
    ts: str
    posted_at: float


class PostLedger:
    """Who posted what for which question, so a redelivered job does not post twice.

    The race it closes: worker A posts, then dies before acking the job;
    worker B gets the job again. A calls `record_posted` right after the
    post, so B's `claim_post` says POSTED. Only a death between the post and
    the record (a few milliseconds) leaves IN_DOUBT for B to resolve.
    """

    def __init__(self, redis_url: str, *, ttl: float = POSTED_TTL_S, timeout: float = WORKER_SOCKET_TIMEOUT_S):
        self._ttl = int(ttl)
        self._redis = connect(redis_url, timeout=timeout)
        self._claim = self._redis.register_script(CLAIM_POST_LUA)
        self._claimer = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"

    async def claim_post(self, question_id: str) -> PostClaim:
        keys = [posted_key(question_id), post_claim_key(question_id)]
        result = await self._call(self._claim(keys=keys, args=[self._ttl, self._claimer]))
        return PostClaim(result)

    async def record_posted(self, question_id: str, channel: str, ts: str) -> None:
        record = PostRecord(question_id=question_id, channel=channel, ts=ts, posted_at=time.time())
        await self._call(self._redis.set(posted_key(question_id), record.model_dump_json(), ex=self._ttl))

    async def release_post(self, question_id: str) -> None:
        """Drops this run's claim when the post surely did not happen (a 429,
        a refused connection), so the retry gets GRANTED, not IN_DOUBT."""
        await self._call(self._redis.delete(post_claim_key(question_id), post_attempt_key(question_id)))

    async def mark_attempt(self, question_id: str, look_until: float) -> None:
        """Before a post is sent, and again when its outcome stays unknown: until when
        (epoch seconds) its message may still show up in Slack, for the next run to look."""
        await self._call(self._redis.set(post_attempt_key(question_id), repr(look_until), ex=self._ttl))

    async def look_until(self, question_id: str) -> float | None:
        """Until when a doubtful post may still show up; None if none was sent since the last release."""
        raw = await self._call(self._redis.get(post_attempt_key(question_id)))
        return None if raw is None else float(raw)

    async def posted(self, question_id: str) -> PostRecord | None:
        raw = await self._call(self._redis.get(posted_key(question_id)))
        return None if raw is None else PostRecord.model_validate_json(raw)

    async def close(self) -> None:
        await self._redis.aclose()

    async def _call(self, awaitable: Any) -> Any:
        try:
            return await awaitable
        except RedisError as exc:
            raise QueueUnavailable(f"post ledger: {type(exc).__name__}: {exc}") from exc


def dumps_dead_letter(job: Job, error: BaseException, worker: str) -> str:
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return DeadLetter(job=job, error=text, failed_at=time.time(), worker=worker).model_dump_json()


def loads_job(fields: dict[str, str]) -> Job:
    return Job.model_validate_json(fields["job"])


__all__ = [
    "DeadLetter",
    "Job",
    "JobLost",
    "JobQueue",
    "PostClaim",
    "PostLedger",
    "PostRecord",
    "QueueError",
    "QueueStats",
    "QueueUnavailable",
    "Transient",
    "WorkerInfo",
]
