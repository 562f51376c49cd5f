"""A worker process for the crash tests: killed with SIGKILL while it is mid-job.

    python -m tests.queue_worker_proc REDIS_URL VISIBILITY_TIMEOUT_S

Its handler never finishes a job. Depending on `payload["mode"]` it first
"posts" the answer the way the real worker does (claim, post, record) or not,
then writes `PROC_STARTED_PREFIX + job id` = its pid, so the test knows it is
mid-job, and waits for a kill.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from bot.jobs.consumer import Consumer
from bot.jobs.queue import Job
from bot.store.connection import connect
from bot.store.ledger import PostClaim, PostLedger

PROC_STARTED_PREFIX = "test:proc-started:"
FAKE_SLACK_LIST = "test:slack-posts"  # one item per chat.postMessage


async def fake_post(ledger: PostLedger, redis_client: object, job: Job, ts: str) -> PostClaim:
    """What the real worker does around chat.postMessage, with a Redis list as Slack."""
    question_id = job.payload["question_id"]
    claim = await ledger.claim_post(question_id)
    if claim is PostClaim.GRANTED:
        await redis_client.rpush(FAKE_SLACK_LIST, f"{question_id} {ts}")  # type: ignore[attr-defined]
        await ledger.record_posted(question_id, channel="C1", ts=ts)
    return claim


async def main(redis_url: str, visibility: float) -> None:
    ledger = PostLedger(redis_url)
    raw = connect(redis_url, timeout=5.0)

    async def handler(job: Job) -> None:
        if job.payload.get("mode") == "post-then-block":
            await fake_post(ledger, raw, job, ts=f"proc-{os.getpid()}")
        await raw.set(PROC_STARTED_PREFIX + job.id, os.getpid())
        await asyncio.Event().wait()  # mid-job until SIGKILL

    async def on_dead(job: Job, error: BaseException) -> None:
        raise AssertionError(f"no job should die in this process: {job.id} {error!r}")

    try:
        # No signal handling: the test ends this process with SIGKILL.
        await Consumer(
            handler,
            on_dead=on_dead,
            redis_url=redis_url,
            concurrency=2,
            visibility_timeout=visibility,
            heartbeat_interval=0.5,
            read_block=0.05,
        ).run()
    finally:
        await ledger.close()
        await raw.aclose()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
