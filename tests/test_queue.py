"""The job queue against a real Redis (DB of its own, flushed per test)."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from bot.jobs.consumer import Consumer
from bot.jobs.queue import Job, JobLost, JobQueue, QueueStats, QueueUnavailable
from bot.store.connection import connect
from bot.store.keys import JOBS_STREAM
from bot.store.ledger import PostClaim, PostLedger
from citebot_core.errors import Retryable
from tests.polling import wait_until_async
from tests.queue_worker_proc import FAKE_SLACK_LIST, PROC_STARTED_PREFIX, fake_post

ROOT = Path(__file__).resolve().parent.parent

# Short timings so the whole file runs in seconds; the production defaults
# live in bot.jobs.consumer.
VISIBILITY_S = 1.5
FAST = {
    "visibility_timeout": VISIBILITY_S,
    "backoff_base": 0.1,
    "backoff_max": 0.4,
    "heartbeat_interval": 0.5,
    "read_block": 0.05,
    "shutdown_grace": 2.0,
}
EMPTY = QueueStats(waiting=0, in_flight=0, delayed=0, dead=0)
DEAD = QueueStats(waiting=0, in_flight=0, delayed=0, dead=1)
# A dead worker's job is taken over once its lease (VISIBILITY_S) runs out and
# the next reclaim scan finds it: about 2 s here, 60 s and more on the default
# lease. A bound between the two, far from both, cannot flake on a loaded machine.
TAKEOVER_LIMIT_S = VISIBILITY_S * 8


class Calls:
    """Records what a handler or on_dead callback saw, with the time."""

    def __init__(self) -> None:
        self.items: list[tuple[float, Any]] = []

    def add(self, *item: Any) -> None:
        self.items.append((time.monotonic(), item if len(item) > 1 else item[0]))

    @property
    def values(self) -> list[Any]:
        return [value for _, value in self.items]

    @property
    def times(self) -> list[float]:
        return [t for t, _ in self.items]

    def __len__(self) -> int:
        return len(self.items)


def answer_job(question_id: str = "q1", **payload: Any) -> Job:
    return Job(kind="answer", payload={"question_id": question_id, **payload})


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[JobQueue]:
    async with JobQueue(redis_url) as job_queue:
        yield job_queue


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = connect(redis_url, timeout=5.0)
    yield client
    await client.aclose()


@pytest.fixture
async def ledger(redis_url: str) -> AsyncIterator[PostLedger]:
    post_ledger = PostLedger(redis_url)
    yield post_ledger
    await post_ledger.close()


@pytest.fixture
async def dead_calls() -> Calls:
    return Calls()


@pytest.fixture
async def start_consumer(redis_url: str, dead_calls: Calls) -> AsyncIterator[Callable[..., Awaitable[Consumer]]]:
    """A factory: `await start_consumer(handler, **Consumer options)` -> a running Consumer."""
    running: list[tuple[Consumer, asyncio.Task[None]]] = []

    async def record_dead(job: Job, error: BaseException) -> None:
        dead_calls.add(job, error)

    async def factory(handler: Callable[[Job], Awaitable[None]], **options: Any) -> Consumer:
        options = {**FAST, "on_dead": record_dead, **options}
        consumer = Consumer(handler, redis_url=redis_url, **options)
        task = asyncio.create_task(consumer.run())
        running.append((consumer, task))
        ready = asyncio.create_task(consumer.started())
        await asyncio.wait([ready, task], return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            ready.cancel()
            task.result()  # raises what stopped the worker
        return consumer

    yield factory
    for consumer, _ in running:
        consumer.stop()
    for consumer, task in running:
        await _stopped(consumer, task)


# A consumer stops within its shutdown grace and a socket timeout. One that has not
# after this long is reported with every task's stack, and cancelled, rather than
# left to hang the run: once in a full run a consumer's task was seen not to finish
# after stop(), and its cause is not found yet.
STOP_WAIT_S = 20.0


async def _stopped(consumer: Consumer, task: asyncio.Task[None]) -> None:
    done, _ = await asyncio.wait([task], timeout=STOP_WAIT_S)
    if done:
        task.result()
        return
    stacks = io.StringIO()
    for each in asyncio.all_tasks():
        each.print_stack(file=stacks)
    # Past the capture (filterwarnings is "error"): seen in the run's output, the test's result left as it was.
    sys.__stderr__.write(f"\nconsumer {consumer.worker_id} did not stop within {STOP_WAIT_S:g}s after stop(); "
                         f"cancelled. Its tasks:\n{stacks.getvalue()}\n")
    task.cancel()
    await asyncio.wait([task], timeout=STOP_WAIT_S)


def spawn_worker_process(redis_url: str, log_path: Path) -> subprocess.Popen[bytes]:
    log_file = log_path.open("wb")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.queue_worker_proc", redis_url, str(VISIBILITY_S)],
            cwd=ROOT,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    finally:
        log_file.close()  # the child has its own descriptor


async def kill_when_mid_job(proc: subprocess.Popen[bytes], raw: aioredis.Redis, job: Job, log_path: Path) -> None:
    """Waits until the process is inside the job's handler, then SIGKILLs it."""

    async def started() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"worker process exited early:\n{log_path.read_text()}")
        return await raw.get(PROC_STARTED_PREFIX + job.id) == str(proc.pid)

    try:
        await wait_until_async(started, timeout=15.0, what="the worker process to start the job")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


# --- enqueue, take, ack --------------------------------------------------------------


async def test_enqueued_job_is_run_once_and_acked(queue: JobQueue, start_consumer: Any, dead_calls: Calls) -> None:
    job = answer_job(text="How many vacation days?")
    assert await queue.enqueue(job, dedupe_id="Ev1") is True
    assert await queue.stats() == QueueStats(waiting=1, in_flight=0, delayed=0, dead=0)
    assert await queue.depth() == 1

    handled = Calls()

    async def handler(got: Job) -> None:
        handled.add(got)

    await start_consumer(handler)
    await wait_until_async(lambda: len(handled), what="the job to run")
    await wait_until_async(lambda: _stats_are(queue, EMPTY), what="the job to be acked")

    (got,) = handled.values
    assert (got.id, got.kind, got.payload, got.attempt) == (job.id, "answer", job.payload, 1)
    assert len(dead_calls) == 0


async def test_slack_retries_of_one_event_make_one_job(queue: JobQueue, start_consumer: Any) -> None:
    # Each Slack delivery is parsed anew, so each builds its own Job object.
    added = [await queue.enqueue(answer_job(), dedupe_id="Ev42") for _ in range(3)]
    assert added == [True, False, False]
    assert await queue.depth() == 1

    handled = Calls()

    async def handler(job: Job) -> None:
        handled.add(job)

    await start_consumer(handler)
    await wait_until_async(lambda: _stats_are(queue, EMPTY), what="the job to finish")
    assert len(handled) == 1
    # A retry that arrives after the job finished is still a duplicate.
    assert await queue.enqueue(answer_job(), dedupe_id="Ev42") is False
    assert await queue.enqueue(answer_job(), dedupe_id="Ev43") is True


# --- retries and dead letters ---------------------------------------------------------


async def test_transient_failure_is_retried_with_backoff_then_succeeds(
    queue: JobQueue, start_consumer: Any, dead_calls: Calls
) -> None:
    tries = Calls()

    async def handler(job: Job) -> None:
        tries.add(job.attempt)
        if job.attempt < 3:
            raise Retryable("LLM 503")

    await queue.enqueue(answer_job(), dedupe_id="Ev1")
    await start_consumer(handler)
    await wait_until_async(lambda: tries.values == [1, 2, 3], what="three tries")
    await wait_until_async(lambda: _stats_are(queue, EMPTY), what="the job to be acked")

    first_gap, second_gap = (b - a for a, b in pairwise(tries.times))
    # backoff_base 0.1 s, doubled per try, equal jitter: at least half of it.
    assert first_gap >= 0.05
    assert second_gap >= 0.1
    assert len(dead_calls) == 0


async def test_redis_trouble_inside_the_handler_is_retried(queue: JobQueue, start_consumer: Any) -> None:
    tries = Calls()

    async def handler(job: Job) -> None:
        tries.add(job.attempt)
        if job.attempt == 1:
            raise QueueUnavailable("post ledger: ConnectionError")

    await queue.enqueue(answer_job(), dedupe_id="Ev1")
    await start_consumer(handler)
    await wait_until_async(lambda: tries.values == [1, 2], what="the retry")


async def test_retry_after_is_honoured(queue: JobQueue, start_consumer: Any) -> None:
    tries = Calls()

    async def handler(job: Job) -> None:
        tries.add(job.attempt)
        if job.attempt == 1:
            raise Retryable("Slack 429", retry_after=0.8)

    await queue.enqueue(answer_job(), dedupe_id="Ev1")
    await start_consumer(handler)
    await wait_until_async(lambda: len(tries) == 1, what="the first try")
    await wait_until_async(lambda: _stats_are(queue, QueueStats(waiting=0, in_flight=0, delayed=1, dead=0)), what="the delayed retry")
    await wait_until_async(lambda: len(tries) == 2, what="the second try")

    # backoff_base alone would have retried after at most 0.1 s.
    assert tries.times[1] - tries.times[0] >= 0.8


async def tries_until_dead(queue: JobQueue, start_consumer: Any, job: Job, error: BaseException,
                           **options: Any) -> Calls:
    """Runs `job` with a handler that always raises `error` until the job is a dead letter; the tries it saw."""
    tries = Calls()

    async def handler(got: Job) -> None:
        tries.add(got.attempt)
        raise error

    await queue.enqueue(job, dedupe_id="Ev1")
    await start_consumer(handler, **options)
    await wait_until_async(lambda: _stats_are(queue, DEAD), what="the dead letter")
    return tries


async def test_last_try_goes_to_dead_letter_and_on_dead_runs_once(
    queue: JobQueue, start_consumer: Any, dead_calls: Calls
) -> None:
    job = answer_job()
    tries = await tries_until_dead(queue, start_consumer, job, Retryable("LLM down"), max_tries=3)

    # Nothing is left that could run the job or on_dead again.
    assert tries.values == [1, 2, 3]
    ((dead_job, error),) = dead_calls.values
    assert (dead_job.id, dead_job.attempt) == (job.id, 3)
    assert isinstance(error, Retryable)
    (letter,) = await queue.dead_letters()
    assert (letter.job.id, letter.job.attempt, letter.error) == (job.id, 3, "Retryable: LLM down")


async def test_other_errors_go_to_dead_letter_without_retry(
    queue: JobQueue, start_consumer: Any, dead_calls: Calls
) -> None:
    tries = await tries_until_dead(queue, start_consumer, answer_job(), ValueError("malformed question"))
    await wait_until_async(lambda: len(dead_calls), what="on_dead")

    assert tries.values == [1]
    ((_, error),) = dead_calls.values
    assert isinstance(error, ValueError)


async def test_a_failing_on_dead_still_records_the_dead_letter(queue: JobQueue, start_consumer: Any) -> None:
    async def on_dead(job: Job, error: BaseException) -> None:
        raise RuntimeError("Slack is down too")

    tries = await tries_until_dead(queue, start_consumer, answer_job(), ValueError("bad"), on_dead=on_dead)
    assert tries.values == [1]


# --- concurrency, liveness, shutdown ----------------------------------------------------


async def test_one_worker_runs_n_jobs_at_once(queue: JobQueue, start_consumer: Any) -> None:
    gate = asyncio.Event()
    running: set[str] = set()
    most = 0
    done = Calls()

    async def handler(job: Job) -> None:
        nonlocal most
        running.add(job.id)
        most = max(most, len(running))
        await gate.wait()
        running.discard(job.id)
        done.add(job.id)

    for n in range(4):
        await queue.enqueue(answer_job(f"q{n}"), dedupe_id=f"Ev{n}")
    worker = await start_consumer(handler, concurrency=3)

    await wait_until_async(lambda: len(running) == 3, what="three jobs in flight")
    assert worker.in_flight == 3
    # The fourth stays in the stream for any worker with a free slot.
    assert await queue.stats() == QueueStats(waiting=1, in_flight=3, delayed=0, dead=0)

    gate.set()
    await wait_until_async(lambda: len(done) == 4, what="all four jobs")
    assert most == 3


async def test_worker_heartbeat_is_visible_while_it_runs(
    queue: JobQueue, raw: aioredis.Redis, start_consumer: Any
) -> None:
    done = Calls()

    async def handler(job: Job) -> None:
        done.add(job.id)

    worker = await start_consumer(handler, concurrency=2)
    (info,) = await queue.workers()
    assert (info.worker_id, info.pid, info.concurrency) == (worker.worker_id, os.getpid(), 2)
    await queue.enqueue(answer_job(), dedupe_id="Ev1")
    await wait_until_async(lambda: len(done), what="the job")
    assert not await _lacks_consumer(raw, worker.worker_id)

    worker.stop()
    await wait_until_async(lambda: _no_workers(queue), what="the heartbeat to go away")
    # A cleanly stopped worker leaves no consumer behind in the group.
    await wait_until_async(lambda: _lacks_consumer(raw, worker.worker_id), what="the consumer to be removed")


async def test_consumers_of_gone_workers_are_swept(raw: aioredis.Redis, start_consumer: Any) -> None:
    await raw.xgroup_create(JOBS_STREAM, "citebot-workers", id="0", mkstream=True)
    await raw.xgroup_createconsumer(JOBS_STREAM, "citebot-workers", "gone-worker")

    async def handler(job: Job) -> None:
        pass

    await start_consumer(handler, stale_consumer_after=0.0)
    await wait_until_async(lambda: _lacks_consumer(raw, "gone-worker"), what="the gone worker's consumer to be removed")


async def test_stopping_worker_hands_unfinished_job_back(queue: JobQueue, start_consumer: Any) -> None:
    started = Calls()
    finished = Calls()

    async def stuck(job: Job) -> None:
        started.add(job.attempt)
        await asyncio.Event().wait()

    async def quick(job: Job) -> None:
        finished.add(job.attempt)

    await queue.enqueue(answer_job(), dedupe_id="Ev1")
    first = await start_consumer(stuck, shutdown_grace=0.1)
    await wait_until_async(lambda: len(started), what="the first worker to start the job")
    first.stop()
    # Handed back at once: with no worker left to reclaim it, a job still
    # leased would stay in flight. And a shutdown does not use up a try.
    await wait_until_async(lambda: _stats_are(queue, QueueStats(waiting=1, in_flight=0, delayed=0, dead=0)),
                           what="the hand-back")
    await start_consumer(quick)
    await wait_until_async(lambda: len(finished), what="the second worker to finish it")
    assert finished.values == [1]


async def test_live_worker_keeps_a_job_longer_than_the_visibility_timeout(
    queue: JobQueue, start_consumer: Any
) -> None:
    runs = Calls()

    async def slow(job: Job) -> None:
        runs.add(job.attempt)
        await asyncio.sleep(VISIBILITY_S * 1.5)  # the slow LLM this test is about

    await queue.enqueue(answer_job(), dedupe_id="Ev1")
    await start_consumer(slow)
    await wait_until_async(lambda: len(runs), what="the job to start")
    await start_consumer(slow)  # a second worker that would take over an expired lease
    await wait_until_async(lambda: _stats_are(queue, EMPTY), what="the job to finish")
    assert runs.values == [1]


# --- crashes ---------------------------------------------------------------------------


@pytest.mark.e2e
async def test_job_of_a_sigkilled_worker_is_finished_by_another(
    redis_url: str,
    queue: JobQueue,
    raw: aioredis.Redis,
    start_consumer: Any,
    tmp_path: Path,
) -> None:
    job = answer_job(mode="block")
    await queue.enqueue(job, dedupe_id="Ev1")
    proc = spawn_worker_process(redis_url, tmp_path / "worker.log")
    await kill_when_mid_job(proc, raw, job, tmp_path / "worker.log")

    finished = Calls()

    async def handler(got: Job) -> None:
        finished.add(got)

    await start_consumer(handler)
    # Recovery: the lease runs out (visibility timeout), then the next reclaim
    # scan (at most half of it) finds the entry.
    await wait_until_async(lambda: len(finished), timeout=TAKEOVER_LIMIT_S, what="another worker to finish the job")
    await wait_until_async(lambda: _stats_are(queue, EMPTY), what="the job to be acked")

    (got,) = finished.values
    assert (got.id, got.attempt) == (job.id, 2)  # the killed run counts as a try
    # The killed worker's heartbeat expires: it no longer looks alive.
    await wait_until_async(lambda: _only_worker_pid_is(queue, os.getpid()), what="the dead worker's heartbeat to expire")


@pytest.mark.e2e
async def test_post_record_survives_redelivery(
    redis_url: str,
    queue: JobQueue,
    raw: aioredis.Redis,
    ledger: PostLedger,
    start_consumer: Any,
    tmp_path: Path,
) -> None:
    # The worst moment: worker A has posted and recorded it, then dies
    # before acking the job.
    job = answer_job("q7", mode="post-then-block")
    await queue.enqueue(job, dedupe_id="Ev1")
    proc = spawn_worker_process(redis_url, tmp_path / "worker.log")
    await kill_when_mid_job(proc, raw, job, tmp_path / "worker.log")

    claims = Calls()

    async def handler(got: Job) -> None:
        claims.add(await fake_post(ledger, raw, got, ts="second-worker"))

    await start_consumer(handler)
    await wait_until_async(lambda: len(claims), timeout=TAKEOVER_LIMIT_S, what="the redelivered job")

    assert claims.values == [PostClaim.POSTED]
    assert await raw.lrange(FAKE_SLACK_LIST, 0, -1) == [f"q7 proc-{proc.pid}"]
    record = await ledger.posted("q7")
    assert record is not None and (record.channel, record.ts) == ("C1", f"proc-{proc.pid}")


async def test_job_that_keeps_killing_workers_ends_in_on_dead(
    queue: JobQueue, raw: aioredis.Redis, start_consumer: Any, dead_calls: Calls
) -> None:
    # The last try's worker died: the next delivery must not run the job
    # again, and must not drop it silently either.
    job = answer_job()
    await queue.enqueue(job, dedupe_id="Ev1")
    await raw.xgroup_create(JOBS_STREAM, "citebot-workers", id="0")
    await raw.xreadgroup("citebot-workers", "dead-worker", {JOBS_STREAM: ">"}, count=1)

    async def handler(got: Job) -> None:
        raise AssertionError("the job must not run again")

    await start_consumer(handler, max_tries=1, visibility_timeout=0.2)
    await wait_until_async(lambda: len(dead_calls), what="on_dead for the lost job")
    ((dead_job, error),) = dead_calls.values
    assert (dead_job.id, dead_job.attempt) == (job.id, 2)
    assert isinstance(error, JobLost)


# --- Redis trouble at enqueue ----------------------------------------------------------------


async def test_enqueue_with_redis_unreachable_fails_within_its_timeout() -> None:
    port = _closed_port()
    async with JobQueue(f"redis://127.0.0.1:{port}/15", enqueue_timeout=0.5) as job_queue:
        started = time.monotonic()
        with pytest.raises(QueueUnavailable, match=rf"could not enqueue job .*127\.0\.0\.1:{port}"):
            await job_queue.enqueue(answer_job(), dedupe_id="Ev1")
    # Unbounded, connecting would be retried on and on: ten times the timeout
    # tells that apart without flaking on a loaded machine.
    assert time.monotonic() - started < 10 * 0.5


async def test_enqueue_with_redis_hanging_fails_within_its_timeout() -> None:
    # A server that accepts connections and never answers: a Redis stuck in a
    # long command or behind a dead load balancer.
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with JobQueue(f"redis://127.0.0.1:{port}/15", enqueue_timeout=0.3) as job_queue:
            started = time.monotonic()
            with pytest.raises(QueueUnavailable, match="did not answer within 0.3s"):
                await job_queue.enqueue(answer_job(), dedupe_id="Ev1")
            # Unbounded, the call would hang for good: ten times the timeout cannot flake.
            assert time.monotonic() - started < 10 * 0.3
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


# --- helpers ---------------------------------------------------------------------------------


async def _stats_are(queue: JobQueue, expected: QueueStats) -> bool:
    return await queue.stats() == expected


async def _no_workers(queue: JobQueue) -> bool:
    return not await queue.workers()


async def _only_worker_pid_is(queue: JobQueue, pid: int) -> bool:
    return [w.pid for w in await queue.workers()] == [pid]


async def _lacks_consumer(raw: aioredis.Redis, name: str) -> bool:
    return name not in [c["name"] for c in await raw.xinfo_consumers(JOBS_STREAM, "citebot-workers")]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
