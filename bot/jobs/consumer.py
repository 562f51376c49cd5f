"""Consumer: takes jobs from the Redis stream and runs them, several at a time.

One Consumer runs in each worker process (`citebot worker`, built by
bot.wiring `run_worker`); it hands every job to the job handlers
(bot.jobs.dispatch, filled by bot.wiring `job_handlers`). bot.jobs.queue explains the delivery
protocol; the scripts and timings only a worker needs are here.

A job ends in one of three ways:

* the handler returns            -> acked, gone;
* the handler raises `Retryable` -> back to the queue after a backoff (its
  `retry_after` if given), try number + 1, until `max_tries`;
* `Permanent`, anything else, or the last try -> `on_dead(job, error)` (the
  handlers post an apology), then the job goes to the dead-letter list.

citebot_core.errors defines the two kinds. What the handler raises that is
not citebot's own (a redis-py error of the records, the job's own timeout) is
translated into a Retryable once, in `_handle`, so `_run` decides by kind alone.

A worker that dies holds its entries in the group's pending list; a live
worker takes them over once they have been idle for `visibility_timeout`. A
live worker renews the idle time of its own entries every third of that, so a
slow job is never taken from a healthy worker. A redelivery counts as a try:
a job that keeps killing its workers ends as `JobLost` in `on_dead` instead of
looping. `on_dead` therefore runs at least once per dead job, and exactly once
unless a worker dies inside it: the apology is posted through the ledger too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Container, Coroutine
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError, ResponseError
from redis.typing import EncodableT

from bot.jobs.job import Job, JobKind
from bot.jobs.queue import DeadLetter, JobLost, JobTimedOut, QueueUnavailable, WorkerInfo, shards_of
from bot.store.connection import connect, redis_location
from bot.store.errors import StoreUnavailable
from bot.store.keys import WORKERS_GROUP, QueueShard, heartbeat_key
from bot.store.migrate import migrate_untagged_keys
from bot.store.redis_target import RedisMode, RedisTarget, as_target
from citebot_core.errors import Retryable
from citebot_core.retry import backoff_delay

# --- Magic numbers of a worker (the web side's are in bot.jobs.queue) -------------------

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
# "Equal jitter": a retry waits between half its backoff and all of it, so the
# backoff still grows, and workers that failed together do not return together.
BACKOFF_JITTER = -0.5
# A hang is the only thing that should reach this: one answer may take two
# generations of three 60 s LLM attempts each (bot.answer.backends), about six minutes.
JOB_TIMEOUT_S = 600.0
# Workers write their heartbeat this often; the key lives three beats, so one
# slow beat does not make a live worker look dead.
HEARTBEAT_INTERVAL_S = 5.0
HEARTBEAT_TTL_FACTOR = 3
DEAD_LETTER_CAP = 1000  # bounded: a broken LLM for a day must not fill Redis
# How long an idle worker blocks in XREADGROUP: bounds how late it notices a
# stop request or a retry that became due.
READ_BLOCK_S = 1.0
# In a cluster the queue has 16 shards (bot.store.keys) and a worker reads each
# with a slot of its own: a worker with fewer free slots than shards reads them
# in turns, each read blocking this long, so a job waits about
# (shards / free slots) x this before a reader of its shard comes by.
SHARED_READ_BLOCK_S = 0.05
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

# --- Lua: each script is one atomic step of a taken job's life -------------------------

# Milliseconds by the server's clock, for due times: workers with skewed
# clocks agree on when a retry is due.
SERVER_MS_LUA = """
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# KEYS: stream, delayed, dead. ARGV: group, consumer, entry id, action
# ("ack" | "retry" | "requeue" | "dead"), data (job json | dead-letter json),
# retry delay ms, dead cap. Only the current owner may finish an entry: a
# worker whose lease was taken over must not ack the entry the new owner is
# working on.
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

log = logging.getLogger(__name__)

Handler = Callable[[Job], Awaitable[None]]
OnDead = Callable[[Job, BaseException], Awaitable[None]]


@dataclass(frozen=True)
class _Entry:
    """A stream entry: ids are unique within a shard's stream only."""

    shard: QueueShard
    id: str


@dataclass
class _Running:
    job: Job
    task: asyncio.Task[None]
    lease_lost: bool = False


@dataclass
class _ShardScan:
    """Where a shard's scan for entries of dead workers stands."""

    cursor: str = "0-0"
    last_pass: float = float("-inf")  # the first pass runs at once


@dataclass
class _Outcomes:
    """What becomes of a taken entry once its job ran: acked, retried after a backoff, dead-lettered (after its
    kind's last word), or handed back; the FINISH script first checks that the entry is still this worker's."""

    worker_id: str
    script: AsyncScript
    on_dead: OnDead
    max_tries: int
    backoff: tuple[float, float]

    async def retry_or_die(self, entry: _Entry, job: Job, exc: Retryable) -> None:
        if job.attempt >= self.max_tries:
            await self.dead(entry, job, exc)
            return
        delay = self.delay(job.attempt, exc.retry_after)
        log.info("job %s try %d: %s; retrying in %.1fs", job.id, job.attempt, exc, delay)
        retry = job.model_copy(update={"attempt": job.attempt + 1})
        await self.finish(entry, "retry", retry.model_dump_json(), delay_ms=int(delay * 1000))

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, retry_after)
        base, cap = self.backoff
        # Try `attempt` failed: what follows is retry number attempt - 1, counted from 0.
        return backoff_delay(attempt - 1, base=base, cap=cap, jitter=BACKOFF_JITTER)

    async def dead(self, entry: _Entry, job: Job, error: BaseException) -> None:
        log.error("job %s failed for good on try %d: %s: %s", job.id, job.attempt, type(error).__name__, error, exc_info=error)
        try:
            await self.on_dead(job, error)
        except Exception:
            # The dead letter is still recorded: an operator can replay it.
            log.exception("on_dead failed for job %s", job.id)
        await self.finish(entry, "dead", self.dead_letter(job, error))

    async def bury(self, entry: _Entry, fields: dict[str, str], error: Exception) -> None:
        # Not a Job: there is no question to apologise to, only a record to keep.
        log.error("entry %s is not a job (%s); dead-lettered", entry.id, error)
        job = Job(kind=JobKind.INVALID, payload={"fields": fields})
        await self.finish(entry, "dead", self.dead_letter(job, error))

    def dead_letter(self, job: Job, error: BaseException) -> str:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        return DeadLetter(job=job, error=text, failed_at=time.time(), worker=self.worker_id).model_dump_json()

    async def finish(self, entry: _Entry, action: str, data: str = "", delay_ms: int = 0) -> None:
        shard, entry_id = entry.shard, entry.id
        keys = [shard.stream, shard.delayed, shard.dead]
        args: list[EncodableT] = [WORKERS_GROUP, self.worker_id, entry_id, action, data, delay_ms, DEAD_LETTER_CAP]
        try:
            owned = await self.script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            # Still pending under our name: redelivered after the visibility
            # timeout, and the post ledger keeps the second run from posting again.
            log.error("worker %s could not %s entry %s: %s", self.worker_id, action, entry_id, exc)
            return
        if not owned:
            log.warning("entry %s was taken over by another worker before %s", entry_id, action)


@dataclass
class _Liveness:
    """That this worker lives, said to Redis: its leases renewed (a lost one cancels its job), its heartbeat,
    silent consumers of dead workers swept away, and its own entries forgotten when it stops."""

    worker_id: str
    redis: aioredis.Redis
    shards: list[QueueShard]
    renew_script: AsyncScript
    forget_script: AsyncScript
    concurrency: int
    heartbeat_interval: float
    stale_after: float
    started_at: float
    last_sweep: float = float("-inf")

    async def renew(self, running: dict[_Entry, _Running]) -> None:
        by_shard: dict[QueueShard, list[str]] = {}
        for entry, r in running.items():
            if not r.lease_lost:
                by_shard.setdefault(entry.shard, []).append(entry.id)
        for shard, entry_ids in by_shard.items():
            lost = await self.renew_script(keys=[shard.stream], args=[WORKERS_GROUP, self.worker_id, *entry_ids])
            for entry_id in lost:
                job = running.get(_Entry(shard, entry_id))
                if job is None:
                    continue
                # Another worker runs it now; two runs in parallel would race to post.
                log.warning("worker %s lost the lease on entry %s; cancelling its job", self.worker_id, entry_id)
                job.lease_lost = True
                job.task.cancel()

    async def beat(self, in_flight: int) -> None:
        info = WorkerInfo(
            worker_id=self.worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            concurrency=self.concurrency,
            in_flight=in_flight,
            started_at=self.started_at,
            beat_at=time.time(),
        )
        ttl_ms = int(self.heartbeat_interval * HEARTBEAT_TTL_FACTOR * 1000)
        await self.redis.set(heartbeat_key(self.worker_id), info.model_dump_json(), px=ttl_ms)

    async def sign_off(self) -> None:
        # Best effort: if Redis is gone, the heartbeat expires and the sweep
        # of another worker removes the consumer.
        with contextlib.suppress(RedisError, OSError):
            await self.redis.delete(heartbeat_key(self.worker_id))
            for shard in self.shards:
                await self.forget_script(keys=[shard.stream], args=[WORKERS_GROUP, self.worker_id])

    async def sweep(self) -> None:
        if time.monotonic() - self.last_sweep < CONSUMER_SWEEP_INTERVAL_S:
            return
        self.last_sweep = time.monotonic()
        for shard in self.shards:
            for consumer in await self.redis.xinfo_consumers(shard.stream, WORKERS_GROUP):
                name = consumer["name"]
                if name == self.worker_id or consumer["pending"] or consumer["idle"] < self.stale_after * 1000:
                    continue
                if await self.forget_script(keys=[shard.stream], args=[WORKERS_GROUP, name]):
                    log.info("worker %s removed consumer %s: nothing pending, silent", self.worker_id, name)


@dataclass
class _Taker:
    """Entries taken from a shard: due retries moved back first, then entries of dead workers (idle past the
    visibility timeout), then new ones, blocking a while for them."""

    worker_id: str
    redis: aioredis.Redis
    shards: list[QueueShard]
    promote_script: AsyncScript
    liveness: _Liveness
    visibility: float
    read_block: float
    reclaim_interval: float
    scans: dict[QueueShard, _ShardScan] = field(default_factory=dict)

    async def ensure_group(self, shard: QueueShard | None = None) -> None:
        for each in [shard] if shard else self.shards:
            try:
                # "0", not "$": jobs enqueued before the first worker ever started
                # must be delivered too.
                await self.redis.xgroup_create(each.stream, WORKERS_GROUP, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    async def take(self, shard: QueueShard, free: int, *, waiting: bool, running: Container[_Entry]) -> list[tuple[str, dict[str, str], int]]:
        try:
            next_due_in_ms = await self.promote_script(keys=[shard.delayed, shard.stream], args=[PROMOTE_BATCH])
            reclaimed = await self._reclaim(shard, free, running)
            if reclaimed:
                return reclaimed
            block = self.read_block
            if waiting:
                # More shards than free slots: hand the slot on soon, so a job in
                # a shard without a blocked reader waits SHARED_READ_BLOCK_S at most per turn.
                block = min(block, SHARED_READ_BLOCK_S)
            if next_due_in_ms is not None:
                block = min(block, max(int(next_due_in_ms) / 1000, 0.001))
            return await self._read_new(shard, free, block)
        except ResponseError as exc:
            # Someone deleted the stream (or flushed Redis): make the group again.
            if "NOGROUP" not in str(exc):
                raise
            await self.ensure_group(shard)
            return []

    async def _read_new(self, shard: QueueShard, count: int, block: float) -> list[tuple[str, dict[str, str], int]]:
        reply = await self.redis.xreadgroup(
            WORKERS_GROUP, self.worker_id, {shard.stream: ">"}, count=count, block=max(1, int(block * 1000))
        )
        return [(entry_id, fields, 1) for _, entries in reply or [] for entry_id, fields in entries]

    async def _reclaim(self, shard: QueueShard, count: int, running: Container[_Entry]) -> list[tuple[str, dict[str, str], int]]:
        """Entries of workers that stopped renewing them: their worker is dead."""
        scan = self.scans[shard]
        if time.monotonic() - scan.last_pass < self.reclaim_interval:
            return []
        cursor, entries, *_ = await self.redis.xautoclaim(
            shard.stream,
            WORKERS_GROUP,
            self.worker_id,
            min_idle_time=int(self.visibility * 1000),
            start_id=scan.cursor,
            count=count,
        )
        # Continue the scan where it stopped; a full pass ends the interval.
        scan.cursor = cursor
        if cursor == "0-0":
            scan.last_pass = time.monotonic()
            await self.liveness.sweep()
        taken = []
        for entry_id, fields in entries:
            if fields is None:  # deleted under Redis 6.2: nothing to run
                await self.redis.xack(shard.stream, WORKERS_GROUP, entry_id)
                continue
            if _Entry(shard, entry_id) in running:
                # Our own entry, idle too long (a Redis hiccup stopped the
                # renewals): the claim just renewed it; it is running already.
                continue
            deliveries = await self._deliveries(shard, entry_id)
            log.warning("worker %s took over entry %s of %s (delivery %d)", self.worker_id, entry_id, shard.stream, deliveries)
            taken.append((entry_id, fields, deliveries))
        return taken

    async def _deliveries(self, shard: QueueShard, entry_id: str) -> int:
        pending = await self.redis.xpending_range(shard.stream, WORKERS_GROUP, entry_id, entry_id, 1)
        return int(pending[0]["times_delivered"]) if pending else 1


class Consumer:
    """Runs `handler(job)` for jobs from the queue, at most `concurrency` at once.

    `run()` returns after `stop()`: in-flight jobs get `shutdown_grace` seconds
    to finish, the rest go back to the queue for another worker.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        redis_url: RedisTarget | str,
        on_dead: OnDead,
        concurrency: int = 4,
        max_tries: int = MAX_TRIES,
        visibility_timeout: float = VISIBILITY_TIMEOUT_S,
        job_timeout: float = JOB_TIMEOUT_S,
        backoff_base: float = BACKOFF_BASE_S,
        backoff_max: float = BACKOFF_MAX_S,
        heartbeat_interval: float = HEARTBEAT_INTERVAL_S,
        read_block: float = READ_BLOCK_S,
        shutdown_grace: float = SHUTDOWN_GRACE_S,
        stale_consumer_after: float = STALE_CONSUMER_S,
        worker_id: str | None = None,
    ):
        if concurrency < 1 or max_tries < 1:
            raise ValueError("concurrency and max_tries must be at least 1")
        if not 0 < read_block < WORKER_SOCKET_TIMEOUT_S:
            raise ValueError(f"read_block must be between 0 and {WORKER_SOCKET_TIMEOUT_S}s")
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._handler = handler
        self._on_dead = on_dead
        self._url = redis_url
        self._concurrency = concurrency
        self._max_tries = max_tries
        self._visibility = visibility_timeout
        self._job_timeout = job_timeout
        self._backoff = (backoff_base, backoff_max)
        self._heartbeat_interval = heartbeat_interval
        self._read_block = read_block
        self._grace = shutdown_grace
        self._reclaim_interval = min(RECLAIM_INTERVAL_S, visibility_timeout / 2)
        self._stale_consumer_after = stale_consumer_after
        self._shards = shards_of(redis_url)
        self._clustered = as_target(redis_url).resolved_mode is RedisMode.CLUSTER
        # Each shard has a reader; one reader takes at most its share of the
        # free slots, so that readers blocked on quiet shards leave room for busy ones.
        self._per_shard = max(1, -(-concurrency // len(self._shards)))
        self._reserved = 0  # slots readers hold for the entries they are reading
        self._waiting = 0  # readers waiting for a slot: the blocked ones then block briefly
        self._running: dict[_Entry, _Running] = {}
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()  # a slot freed up, or stop() was called
        self._ready = asyncio.Event()
        self._started_at = time.time()

    # --- lifecycle ---------------------------------------------------------------

    async def run(self) -> None:
        self._redis = connect(self._url, timeout=WORKER_SOCKET_TIMEOUT_S)
        self._outcomes = _Outcomes(self.worker_id, self._redis.register_script(FINISH_LUA), self._on_dead,
                                   self._max_tries, self._backoff)
        self._liveness = _Liveness(self.worker_id, self._redis, self._shards, self._redis.register_script(RENEW_LUA),
                                   self._redis.register_script(FORGET_CONSUMER_LUA), self._concurrency,
                                   self._heartbeat_interval, self._stale_consumer_after, self._started_at)
        self._taker = _Taker(self.worker_id, self._redis, self._shards, self._redis.register_script(PROMOTE_LUA),
                             self._liveness, self._visibility, self._read_block, self._reclaim_interval,
                             {shard: _ShardScan() for shard in self._shards})
        try:
            await self._start_up()
            keepalive = asyncio.create_task(self._keepalive_loop(), name=f"keepalive {self.worker_id}")
            try:
                await self._read_loop()
                await self._drain()
            finally:
                await _cancel_and_wait([keepalive, *(r.task for r in self._running.values())])
                await self._liveness.sign_off()
        finally:
            await self._redis.aclose()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    async def started(self) -> None:
        """Returns once the group exists and the first heartbeat is written."""
        await self._ready.wait()

    @property
    def in_flight(self) -> int:
        return len(self._running)

    async def _start_up(self) -> None:
        # A worker that cannot reach Redis at start should fail loudly, not
        # sit in a retry loop looking healthy.
        try:
            if not self._clustered:
                # A deployment upgraded in place: its queue, ledger and records
                # get their hash-tagged names before anything reads them.
                await migrate_untagged_keys(self._redis)
            await self._taker.ensure_group()
            await self._liveness.beat(len(self._running))
        except (RedisError, OSError) as exc:
            where = redis_location(self._url)
            raise QueueUnavailable(f"worker cannot start: Redis at {where}: {exc}") from exc
        log.info("worker %s started, concurrency %d", self.worker_id, self._concurrency)
        self._ready.set()

    async def _drain(self) -> None:
        if not self._running:
            return
        log.info("worker %s stopping: waiting up to %gs for %d jobs", self.worker_id, self._grace, len(self._running))
        tasks = [r.task for r in self._running.values()]
        _, pending = await asyncio.wait(tasks, timeout=self._grace)
        # Cancelled jobs hand themselves back to the queue (see _run).
        await _cancel_and_wait(list(pending))

    # --- taking jobs ---------------------------------------------------------------

    async def _read_loop(self) -> None:
        # One reader per shard: in a cluster the shards' streams live on
        # different nodes, and one XREADGROUP can only block on one slot.
        await asyncio.gather(*(self._shard_loop(shard) for shard in self._shards))

    async def _shard_loop(self, shard: QueueShard) -> None:
        while not self._stopping.is_set():
            free = self._concurrency - len(self._running) - self._reserved
            if free <= 0:
                # No await since len() above: a job finishing now sets _wake after clear().
                self._wake.clear()
                self._waiting += 1
                try:
                    await self._wake.wait()
                finally:
                    self._waiting -= 1
                continue
            want = min(free, self._per_shard)
            self._reserved += want
            try:
                batch = await self._taker.take(shard, want, waiting=bool(self._waiting), running=self._running)
            except (RedisError, OSError) as exc:
                log.warning("worker %s: Redis error while taking jobs: %s", self.worker_id, exc)
                batch = None
            finally:
                self._reserved -= want
            if batch is None:
                await self._pause(ERROR_PAUSE_S)
                continue
            for entry_id, fields, deliveries in batch:
                self._start(_Entry(shard, entry_id), fields, deliveries)
            if len(batch) < want:
                # Slots this reader did not fill: the readers of other shards
                # waiting for one go first, so every shard is read in turn
                # even when there are more shards than slots.
                self._wake.set()
                await asyncio.sleep(0)

    def _start(self, entry: _Entry, fields: dict[str, str], deliveries: int) -> None:
        try:
            stored = Job.model_validate_json(fields["job"])
        except (KeyError, ValidationError) as exc:
            coro: Coroutine[Any, Any, None] = self._outcomes.bury(entry, fields, exc)
            job = Job(kind=JobKind.INVALID, payload={"fields": fields})
        else:
            # Each delivery after the first is a try whose worker died.
            job = stored.model_copy(update={"attempt": stored.attempt + deliveries - 1})
            if job.attempt > self._max_tries:
                coro = self._outcomes.dead(entry, job, JobLost(f"try {job.attempt - 1} of {self._max_tries} never finished"))
            else:
                coro = self._run(entry, job)
        task = asyncio.create_task(coro, name=f"job {job.id} try {job.attempt}")
        self._running[entry] = _Running(job=job, task=task)
        task.add_done_callback(lambda _task: self._finished(entry))

    def _finished(self, entry: _Entry) -> None:
        self._running.pop(entry, None)
        self._wake.set()

    # --- running one job -------------------------------------------------------------

    async def _run(self, entry: _Entry, job: Job) -> None:
        try:
            await self._handle(job)
        except Retryable as exc:
            await self._outcomes.retry_or_die(entry, job, exc)
        except asyncio.CancelledError:
            await asyncio.shield(self._release(entry, job))
            raise
        except Exception as exc:
            # Permanent, or not citebot's at all (a bug): another try would end the same way.
            await self._outcomes.dead(entry, job, exc)
        else:
            await self._outcomes.finish(entry, "ack")

    async def _handle(self, job: Job) -> None:
        """The handler within the job timeout; what it raises that is not citebot's, translated."""
        try:
            async with asyncio.timeout(self._job_timeout):
                await self._handler(job)
        except RedisError as exc:
            # The handler's records (answers, reviews, audit) lost Redis for a
            # moment: a Redis restart must not dead-letter the job and
            # apologise for an LLM that never failed.
            raise StoreUnavailable(f"Redis: {type(exc).__name__}: {exc}") from exc
        except TimeoutError as exc:
            # A hang (ours) or a timeout the handler did not translate: both
            # are worth another try.
            raise JobTimedOut(f"timed out (job timeout {self._job_timeout:g}s)") from exc

    async def _release(self, entry: _Entry, job: Job) -> None:
        running = self._running.get(entry)
        if running is not None and running.lease_lost:
            return  # another worker owns the entry now
        # Handed back with the same try number: a shutdown is not the job's fault.
        await self._outcomes.finish(entry, "requeue", job.model_dump_json())

    # --- leases and heartbeat --------------------------------------------------------

    async def _keepalive_loop(self) -> None:
        # Renew three times per visibility timeout: two missed renewals still
        # keep the lease.
        tick = min(self._visibility / 3, self._heartbeat_interval)
        while True:
            await asyncio.sleep(tick)
            try:
                await self._liveness.renew(self._running)
                await self._liveness.beat(len(self._running))
            except (RedisError, OSError) as exc:
                log.warning("worker %s: Redis error in keepalive: %s", self.worker_id, exc)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stopping.wait()


async def _cancel_and_wait(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["Consumer", "Handler", "OnDead"]
