"""Worker throughput: N questions through one `citebot worker` against a slow fake LLM.

Enqueues --questions answer jobs into real Redis, runs one real worker process
(--concurrency jobs in flight) against a fake LLM that takes --llm-seconds per
call and the fake Slack API, and prints answers per second and the worker's
peak memory.

    python bench/worker_throughput.py [--questions 500] [--llm-seconds 2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.jobs.queue import Job, JobQueue  # noqa: E402
from bot.models import SlackQuestion  # noqa: E402
from tests.fakes import Reply  # noqa: E402
from tests.harness import start_citebot  # noqa: E402
from tests.kb_fixtures import mini_index  # noqa: E402
from tests.polling import wait_until  # noqa: E402

ANSWER = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def enqueue(redis_url: str, n: int) -> None:
    async with JobQueue(redis_url, enqueue_timeout=5) as queue:
        for i in range(n):
            ts = f"1800000{i:04d}.000100"
            question = SlackQuestion(id=f"CBENCH:{ts}", text=f"How many days of annual leave do I get? ({i})",
                                     channel="CBENCH", user="UBENCH", ts=ts)
            job = Job(kind="answer", payload={"question": question.model_dump(mode="json")})
            await queue.enqueue(job, dedupe_id=f"bench-{i}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--llm-seconds", type=float, default=2.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    args = ap.parse_args(argv)
    r = redis.Redis.from_url(args.redis)
    r.flushdb()
    with tempfile.TemporaryDirectory() as tmp:
        bot = start_citebot(Path(tmp) / "logs", redis_url=args.redis, index_dir=mini_index(Path(tmp)), web=False,
                            workers=0)
        bot.llm.set_script([], default=Reply(text=ANSWER, delay=args.llm_seconds))
        worker = bot.start_worker("--concurrency", str(args.concurrency))
        try:
            bot.wait_workers(1)
            t0 = time.perf_counter()
            asyncio.run(enqueue(args.redis, args.questions))

            def answered() -> int:
                return sum(1 for c in bot.slack.calls("chat.postMessage") if c.ok)

            wait_until(lambda: answered() >= args.questions, 600, f"{args.questions} answers")
            elapsed = time.perf_counter() - t0
            memory = peak_rss_mb(worker.pid)
            posts = answered()
        finally:
            bot.stop()
            r.flushdb()
    print(f"{posts} answers for {args.questions} questions in {elapsed:.1f} s with one worker "
          f"(concurrency {args.concurrency}, LLM {args.llm_seconds:g} s per call)")
    print(f"throughput: {args.questions / elapsed:.1f} answers/s; worker peak memory {memory:.0f} MB")
    return 0 if posts == args.questions else 1


if __name__ == "__main__":
    sys.exit(main())
