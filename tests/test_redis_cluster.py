"""The queue, the post ledger, the consumer and the records on a real Redis Cluster.

A 3-master, 3-replica cluster on free localhost ports (tests/redis_ha.py), started
once per session. The key tests of tests/test_queue.py and tests/test_posting.py run
here again, unchanged: this module's `redis_url` is the cluster's, so every
fixture they use (the queue, the consumer factory, the ledger) talks to the
cluster. A script or MULTI on keys of two slots would fail here with CROSSSLOT.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.crc import key_slot

from bot.jobs.queue import Job, JobQueue, QueueStats, shard_count, shards_of
from bot.models import Outcome
from bot.store import keys
from bot.store.asked import AskedIndex
from bot.store.audit import AuditEntry, AuditTrail
from bot.store.connection import connect
from bot.store.records import Records, ReviewRecord, ReviewStatus
from bot.store.redis_target import RedisMode, RedisTarget
from tests.polling import wait_until_async
from tests.redis_ha import RedisClusterServers
from tests.test_doctor import doctor  # noqa: F401

# The tests of the single-server modules that run here too: delivery, dedupe,
# retry, dead letters, concurrency, heartbeats, hand-back at shutdown, leases, the ledger.
from tests.test_posting import (  # noqa: F401
    test_claim_without_record_is_in_doubt,
    test_post_ledger_grants_one_claim_and_remembers_the_post,
    test_released_claim_is_granted_again,
)
from tests.test_queue import (  # noqa: F401
    Calls,
    answer_job,
    dead_calls,
    ledger,
    queue,
    raw,
    start_consumer,
    test_enqueued_job_is_run_once_and_acked,
    test_last_try_goes_to_dead_letter_and_on_dead_runs_once,
    test_live_worker_keeps_a_job_longer_than_the_visibility_timeout,
    test_one_worker_runs_n_jobs_at_once,
    test_slack_retries_of_one_event_make_one_job,
    test_stopping_worker_hands_unfinished_job_back,
    test_transient_failure_is_retried_with_backoff_then_succeeds,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def redis_url(cluster_url: str) -> str:
    return cluster_url


def test_the_url_of_several_nodes_is_a_cluster_with_sixteen_shards(redis_url: str) -> None:
    assert RedisTarget(redis_url).resolved_mode is RedisMode.CLUSTER
    assert shard_count(redis_url) == keys.CLUSTER_QUEUE_SHARDS
    one = "redis://127.0.0.1:6379/13"
    assert shard_count(one) == 1 and shard_count(RedisTarget(one, mode=RedisMode.CLUSTER)) == 16


def test_every_script_s_keys_share_one_slot() -> None:
    for shard in shards_of("redis://a:1,b:2"):
        slots = {key_slot(k.encode()) for k in (shard.stream, shard.delayed, shard.dead, shard.dedupe_key("Ev1"))}
        assert len(slots) == 1, shard
    post = {key_slot(k(q).encode()) for q in ("C1:1.2", "share:abc") for k in (keys.posted_key, keys.post_claim_key, keys.post_attempt_key)}
    assert len(post) == 2
    audit = {key_slot(k.encode()) for k in (keys.AUDIT_STREAM, keys.audit_question_key("q"), keys.cited_by_key("lb-1"))}
    assert len(audit) == 1
    assert key_slot(keys.review_key("r1").encode()) == key_slot(keys.OPEN_REVIEWS_ZSET.encode())


def test_the_shards_spread_over_every_master(redis_cluster: RedisClusterServers) -> None:
    masters = {redis_cluster.master_of(shard.stream).port for shard in shards_of(redis_cluster.url)}
    assert len(masters) == 3


async def test_jobs_land_on_every_master_and_are_all_run(
    redis_url: str, redis_cluster: RedisClusterServers, queue: JobQueue, start_consumer: Any  # noqa: F811
) -> None:
    done = Calls()

    async def handler(job: Job) -> None:
        done.add(job.id)

    for n in range(60):
        assert await queue.enqueue(answer_job(f"q{n}"), dedupe_id=f"Ev{n}")
    busy = set()
    for node in redis_cluster.masters():
        with node.client() as c:
            if c.dbsize():
                busy.add(node.port)
    assert len(busy) == 3, "every master holds some of the queue"
    assert (await queue.stats()).waiting == 60

    await start_consumer(handler, concurrency=8)
    await start_consumer(handler, concurrency=8)
    await wait_until_async(lambda: len(done) == 60, timeout=30, what="all 60 jobs")
    await wait_until_async(lambda: _empty(queue), what="every shard acked")
    assert sorted(done.values) == sorted({j for j in done.values})


async def test_worker_heartbeats_are_found_on_the_cluster(queue: JobQueue, start_consumer: Any) -> None:  # noqa: F811
    first = await start_consumer(_nothing, concurrency=2)
    second = await start_consumer(_nothing, concurrency=3)
    found = {w.worker_id: w.concurrency for w in await queue.workers()}
    assert found == {first.worker_id: 2, second.worker_id: 3}


async def _nothing(job: Job) -> None:
    return None


async def _empty(job_queue: JobQueue) -> bool:
    return await job_queue.stats() == QueueStats(waiting=0, in_flight=0, delayed=0, dead=0)


@pytest.fixture
async def cluster_client(redis_url: str) -> AsyncIterator[Any]:
    client = connect(redis_url, timeout=5.0)
    yield client
    await client.aclose()


async def test_records_audit_and_asked_work_without_transactions(cluster_client: Any) -> None:
    records = Records(cluster_client)
    review = ReviewRecord(question_id="q1", question="Wie viele Urlaubstage?", channel="C1")
    await records.save_review(review)
    assert [r.review_id for r in await records.open_reviews()] == [review.review_id]
    await records.save_review(review.model_copy(update={"status": ReviewStatus.DISMISSED}))
    assert await records.open_reviews() == []

    first = await records.question_started("q1")
    await asyncio.sleep(0.01)
    assert await records.question_started("q1") == first

    trail = AuditTrail(cluster_client)
    await trail.record(AuditEntry(question_id="q1", outcome=Outcome.REFUSED, question="?"))
    entry = await trail.get("q1")
    assert entry is not None and entry.outcome is Outcome.REFUSED

    asked = AskedIndex(cluster_client, keep=2)
    for n in range(3):
        await asked.add("U1", f"q{n}", f"question {n}", at=time.time() + n)
    assert [a.question_id for a in await asked.recent("U1")] == ["q2", "q1"]


def test_doctor_names_the_cluster_and_catches_a_node_named_as_one_server(doctor, capsys, redis_cluster) -> None:  # noqa: F811
    _, found, findings = doctor(capsys, CITEBOT_REDIS_URL=redis_cluster.url)
    ((status, detail),) = found["redis"]
    assert status == "ok" and detail.startswith("Redis 7.") and "(cluster, no TLS) at cluster 127.0.0.1:" in detail
    one_node = f"redis://127.0.0.1:{redis_cluster.nodes[0].port}/0"
    _, found, _ = doctor(capsys, CITEBOT_REDIS_URL=one_node)
    ((status, detail),) = found["redis"]
    assert status == "warn" and "CITEBOT_REDIS_MODE=cluster" in detail
    _, found, _ = doctor(capsys, CITEBOT_REDIS_URL=one_node, CITEBOT_REDIS_MODE="cluster")
    assert found["redis"][0][0] == "ok"
