"""An in-place upgrade: keys written before they carried hash tags get their new names
when the first worker starts, and the queued job, its dedupe key and a post record
(with its TTL) keep working under them."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.jobs.queue import Job, JobQueue
from bot.store import keys
from bot.store.connection import connect
from bot.store.ledger import PostClaim, PostLedger
from bot.store.migrate import MIGRATED_KEY, migrate_untagged_keys
from tests.polling import wait_until_async
from tests.test_queue import Calls, answer_job, dead_calls, start_consumer  # noqa: F401


async def test_old_keys_are_renamed_once_and_keep_working(redis_url: str, start_consumer: Any) -> None:  # noqa: F811
    raw = connect(redis_url, timeout=5.0)
    try:
        job = answer_job("old-q")
        # The layout before hash tags, as the previous release wrote it.
        await raw.set("citebot:dedupe:Ev-old", job.id, ex=3600)
        await raw.xadd("citebot:jobs", {"job": job.model_dump_json()})
        await raw.xgroup_create("citebot:jobs", keys.WORKERS_GROUP, id="0")
        await raw.set("citebot:posted:C1:1.1", '{"question_id": "C1:1.1", "channel": "C1", "ts": "1.1", "posted_at": 1}', ex=600)
        await raw.xadd("citebot:audit", {"q": "x", "outcome": "refused", "data": "{}"})
        await raw.set("citebot:audit:q:x", "1-0")

        done = Calls()

        async def handler(got: Job) -> None:
            done.add(got.id)

        await start_consumer(handler)
        await wait_until_async(lambda: len(done) == 1, what="the job queued before the upgrade")
        assert done.values == [job.id]
        assert not await raw.exists("citebot:jobs", "citebot:dedupe:Ev-old", "citebot:posted:C1:1.1", "citebot:audit")
        assert 0 < await raw.ttl(keys.posted_key("C1:1.1")) <= 600
        assert await raw.get(keys.audit_question_key("x")) == "1-0" and await raw.xlen(keys.AUDIT_STREAM) == 1

        async with JobQueue(redis_url) as queue:
            assert await queue.enqueue(answer_job("old-q"), dedupe_id="Ev-old") is False  # Slack's retry
        ledger = PostLedger(redis_url)
        try:
            assert await ledger.claim_post("C1:1.1") is PostClaim.POSTED
        finally:
            await ledger.close()

        # Once done, a start does not scan again.
        assert await raw.get(MIGRATED_KEY) == "2"
        await raw.set("citebot:posted:late", "{}")
        assert await migrate_untagged_keys(raw) == 0 and await raw.exists("citebot:posted:late")
        await asyncio.sleep(0)
    finally:
        await raw.aclose()
