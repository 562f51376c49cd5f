"""Sentinel: the queue, the consumer and the ledger follow a failover; what asynchronous
replication can lose, forced by pausing the replica (SIGSTOP) before the master dies.

A real set per test (tests/redis_ha.py): a master, a replica, three Sentinels.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest
from redis.exceptions import RedisError

from bot.inbound.web import SLACK_REDIS_BUDGET_S
from bot.jobs.consumer import Consumer
from bot.jobs.queue import Job, JobQueue, QueueUnavailable
from bot.store.asked import AskedIndex
from bot.store.connection import connect
from bot.store.ledger import PostClaim, PostLedger
from citebot_core.deadline import deadline_in
from tests.polling import wait_until_async
from tests.redis_ha import SentinelSet
from tests.test_queue import FAST, Calls, answer_job

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


async def _run_consumer(url: str, handler: Any) -> tuple[Consumer, asyncio.Task[None]]:
    async def dead(job: Job, error: BaseException) -> None:
        raise AssertionError(f"job {job.id} died: {error}")

    consumer = Consumer(handler, redis_url=url, on_dead=dead, **FAST)
    task = asyncio.create_task(consumer.run())
    await consumer.started()
    return consumer, task


async def test_queue_and_ledger_follow_the_master_through_a_failover(sentinel_set: SentinelSet) -> None:
    url = sentinel_set.url()
    done = Calls()

    async def handler(job: Job) -> None:
        done.add(job.id)

    async with JobQueue(url, enqueue_timeout=3.0) as queue:
        ledger = PostLedger(url)
        assert await queue.enqueue(answer_job("before"), dedupe_id="Ev-before")
        assert await ledger.claim_post("before") is PostClaim.GRANTED
        await ledger.record_posted("before", "C1", "1.1")  # waits for the replica (WAIT 1)

        old = sentinel_set.current_master_port()
        sentinel_set.node(old).kill()
        new = sentinel_set.wait_for_failover(old)
        assert new == sentinel_set.replica.port

        # What was written before is on the promoted replica: the dedupe key
        # (a resent event is a duplicate), the job, the post record.
        assert await _eventually(lambda: queue.enqueue(answer_job("before"), dedupe_id="Ev-before")) is False
        assert (await queue.stats()).waiting == 1
        assert await ledger.claim_post("before") is PostClaim.POSTED
        # Without a replica left, the enqueue still keeps the job but does not
        # let Slack's ack stand for it (tested below); one after is taken as usual.
        consumer, task = await _run_consumer(url, handler)
        try:
            await wait_until_async(lambda: len(done) == 1, timeout=20, what="the job written before the failover")
        finally:
            consumer.stop()
            await task
        await ledger.close()
    assert len(done) == 1


async def test_an_enqueue_no_replica_has_is_not_acked_and_its_resend_survives_the_failover(
    sentinel_set: SentinelSet, caplog: pytest.LogCaptureFixture
) -> None:
    """The lost write, forced: the replica is cut off, the master takes the job and dies
    before the replica could copy it. citebot did not ack, so Slack sends the event again,
    and the resend lands on the promoted replica: the question is answered once."""
    url = sentinel_set.url()
    done = Calls()

    async def handler(job: Job) -> None:
        done.add(job.payload["question_id"])

    async with JobQueue(url, enqueue_timeout=3.0) as queue:
        sentinel_set.cut_replica_off()
        with pytest.raises(QueueUnavailable, match="not on a replica"):
            await queue.enqueue(answer_job("q-lost"), dedupe_id="Ev-lost")
        old = sentinel_set.current_master_port()
        sentinel_set.node(old).kill()  # with the only copy of the job
        sentinel_set.replica.resume()
        sentinel_set.wait_for_failover(old)

        # Slack sends the event it got no ack for again, until one is acked. With
        # no replica left after the failover, the first resend is kept but not
        # acked either; the one after is acked as its duplicate.
        await _eventually(lambda: queue.enqueue(answer_job("q-lost"), dedupe_id="Ev-lost"))
        assert (await queue.stats()).waiting == 1, "the resend put the question back"
        consumer, task = await _run_consumer(url, handler)
        try:
            await wait_until_async(lambda: len(done) == 1, timeout=20, what="the resent question")
            await asyncio.sleep(FAST["visibility_timeout"])  # room for a second run, if any
        finally:
            consumer.stop()
            await task
    assert done.values == ["q-lost"]


async def test_with_the_replica_paused_the_job_still_runs_and_the_resend_is_a_duplicate(
    sentinel_set: SentinelSet, caplog: pytest.LogCaptureFixture
) -> None:
    """The other half: the master does not fail. The job refused to Slack is in the
    stream all the same, and Slack's resend of the event is acked as a duplicate."""
    url = sentinel_set.url()
    async with JobQueue(url, enqueue_timeout=3.0) as queue:
        sentinel_set.replica.pause()
        try:
            with pytest.raises(QueueUnavailable):
                await queue.enqueue(answer_job("q-kept"), dedupe_id="Ev-kept")
        finally:
            sentinel_set.replica.resume()
        assert await queue.enqueue(answer_job("q-kept"), dedupe_id="Ev-kept") is False
        assert (await queue.stats()).waiting == 1


async def test_a_post_record_no_replica_has_is_logged(sentinel_set: SentinelSet, caplog: pytest.LogCaptureFixture) -> None:
    ledger = PostLedger(sentinel_set.url())
    try:
        sentinel_set.replica.pause()
        with caplog.at_level(logging.WARNING, logger="bot.store.ledger"):
            await ledger.record_posted("q9", "C1", "9.9")
        assert "no replica confirmed it" in caplog.text
    finally:
        sentinel_set.replica.resume()
        await ledger.close()


async def test_the_client_closes_its_sentinel_connections(sentinel_set: SentinelSet) -> None:
    client = connect(sentinel_set.url(), timeout=2.0)
    assert await client.ping()
    await client.aclose()
    for sentinel in client.sentinel_manager.sentinels:  # type: ignore[attr-defined]
        assert not sentinel.connection_pool._in_use_connections


def _seen_down(sentinel_set: SentinelSet, old: int) -> bool:
    """A Sentinel finds the master down (or the failover is already done): the failover is under way."""
    with sentinel_set.sentinels[0].client() as c:
        flags = str(c.execute_command("SENTINEL", "MASTER", sentinel_set.NAME))
    return "s_down" in flags or "o_down" in flags or sentinel_set.current_master_port() != old


class _PromotionWatch:
    """Notes when the first Sentinel names the promoted replica, polled from a thread
    while the event loop waits on the write under test."""

    def __init__(self, sentinel_set: SentinelSet, old: int):
        self._set, self._old = sentinel_set, old
        self.at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _PromotionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set() and self.at is None:
            if self._set.current_master_port() != self._old:
                self.at = time.monotonic()
            self._stop.wait(0.02)


async def test_a_command_in_a_slack_request_waits_out_the_sentinel_failover(sentinel_set: SentinelSet) -> None:
    """The asker's list of questions is written before the ack. A write begun once the Sentinels
    found the master down keeps trying within the request's budget: it reaches the promoted
    replica when the promotion comes in time, and otherwise gives up within the budget (the
    event is refused and Slack sends it again), never later. How long the Sentinels take to
    elect a leader and promote varies (a random delay of up to a second is part of it), so
    the test holds the write to what the promotion's moment allows, not to a fixed outcome."""
    client = connect(sentinel_set.url(), timeout=1.0)
    try:
        asked = AskedIndex(client)
        await asked.add("U1", "q1", "before", at=1.0)
        old = sentinel_set.current_master_port()
        killed = time.monotonic()
        sentinel_set.node(old).kill()
        await wait_until_async(lambda: _seen_down(sentinel_set, old), timeout=20, what="a Sentinel to find the master down")
        down = time.monotonic()
        error: Exception | None = None
        with _PromotionWatch(sentinel_set, old) as promotion:
            try:
                with deadline_in(SLACK_REDIS_BUDGET_S):
                    await asked.add("U1", "q2", "during the failover", at=2.0)
            except RedisError as exc:
                error = exc
            written = time.monotonic()
            await wait_until_async(lambda: promotion.at is not None, timeout=30, what="the promotion")
        assert promotion.at is not None
        print(f"\nsentinel failover: kill -> master seen down {down - killed:.2f}s, promoted after "
              f"{promotion.at - down:.2f}s more, the write {'gave up' if error else 'was written'} "
              f"after {written - down:.2f}s")
        assert written - down < SLACK_REDIS_BUDGET_S + 0.2, "the write outlasted the request's budget"
        if error is None:
            assert sentinel_set.current_master_port() == sentinel_set.replica.port
        else:
            # Given up only if the promotion came too late to be found before the budget ran
            # out (one back-off step of the retries, and a connection, before the end).
            assert promotion.at > down + SLACK_REDIS_BUDGET_S - 0.6, (
                f"the write gave up ({error}) though the replica was promoted {promotion.at - down:.2f}s "
                f"into a {SLACK_REDIS_BUDGET_S}s budget")
            # Slack's resend: the first try after the promotion is written.
            with deadline_in(SLACK_REDIS_BUDGET_S):
                await asked.add("U1", "q2", "during the failover", at=2.0)
        assert [a.question_id for a in await asked.recent("U1")] == ["q2", "q1"]
    finally:
        await client.aclose()


async def test_an_enqueue_tried_again_that_finds_its_own_key_is_not_acked(sentinel_set: SentinelSet) -> None:
    """The enqueue's first try runs its script, but its reply (WAIT) never comes back in time;
    tried again, it finds the dedupe key its first try wrote. That is no duplicate of an acked
    event: no replica confirmed the job. So it is not acked, and Slack's resend is."""
    url = sentinel_set.url()
    # Each try gives up before WAIT's 500 ms; the replica is back after a second.
    async with JobQueue(url, enqueue_timeout=0.3) as queue:
        assert await queue.enqueue(answer_job("q-first"), dedupe_id="Ev-first")  # the script is loaded
        sentinel_set.replica.pause()
        resume = threading.Timer(1.0, sentinel_set.replica.resume)
        resume.start()
        try:
            with deadline_in(SLACK_REDIS_BUDGET_S), pytest.raises(QueueUnavailable, match="not confirmed"):
                await queue.enqueue(answer_job("q-own"), dedupe_id="Ev-own")
        finally:
            resume.join()
            sentinel_set.replica.resume()
        assert await queue.enqueue(answer_job("q-own"), dedupe_id="Ev-own") is False, "Slack's resend: a duplicate"
        assert (await queue.stats()).waiting == 2


async def _eventually(make: Any, timeout: float = 15.0) -> Any:
    """The first answer of `make()` once the client has found the new master."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await make()
        except QueueUnavailable:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def test_a_retried_post_whose_record_a_failover_lost_is_found_in_slack(sentinel_set: SentinelSet) -> None:
    """A try posts, the master dies before the replica copied the claim and the record (here: both
    deleted, as the promoted replica would lack them), and the job is tried again. The ledger grants
    the claim as if nothing was posted; a retried try looks in Slack first and finds the message."""
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.slack.posting import Poster
    from bot.store.keys import post_claim_key, posted_key
    from tests.fakes.slack_server import FakeSlackServer

    with FakeSlackServer() as slack:
        ledger = PostLedger(sentinel_set.url())
        poster = Poster(AsyncWebClient(token="xoxb-test", base_url=slack.url, retry_handlers=[]), ledger)
        try:
            assert ledger.replicated
            assert await poster.claim_unless_posted("q-lost", "C1", "1.1")
            await poster.post_and_record("q-lost", "C1", "1.1", {"text": "the answer"}, what="answer")
            client = connect(sentinel_set.url(), timeout=1.0)
            await client.delete(posted_key("q-lost"), post_claim_key("q-lost"))
            await client.aclose()

            assert await poster.claim_unless_posted("q-lost", "C1", "1.1", retried=True) is False
            assert len(slack.messages("C1")) == 1
            # A first try looks nowhere; a retried one whose message is not there may post.
            assert await poster.claim_unless_posted("q-new", "C1", "1.1")
            assert await poster.claim_unless_posted("q-none", "C1", "1.1", retried=True)
        finally:
            await ledger.close()
