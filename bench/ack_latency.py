"""Ack latency of `citebot serve`: signed app_mention events at a steady rate.

Starts a real `citebot serve` (HTTP mode) against real Redis and a fake Slack
API, sends events at --rate per second for --seconds, and prints the latency
from sending a request to receiving its response (the ack Slack waits for).

    python bench/ack_latency.py [--rate 50] [--seconds 20] [--redis redis://127.0.0.1:6379/14]

The Redis database given is flushed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness import mention_event, signed_headers, start_citebot  # noqa: E402
from tests.kb_fixtures import mini_index  # noqa: E402


async def fire(url: str, rate: float, seconds: float) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
    async with httpx.AsyncClient(limits=limits, timeout=10) as client:

        async def one(payload: dict) -> None:
            nonlocal errors
            body = json.dumps(payload)
            headers = {"Content-Type": "application/json", **signed_headers(body)}
            t0 = time.perf_counter()
            try:
                response = await client.post(f"{url}/slack/events", content=body, headers=headers)
                if response.status_code != 200:
                    errors += 1
            except httpx.HTTPError:
                errors += 1
                return
            latencies.append((time.perf_counter() - t0) * 1000)

        tasks = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            # A fixed schedule (open loop): a slow ack does not slow the senders down.
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(mention_event(f"How many vacation days do I get? #{i}"))))
        await asyncio.gather(*tasks)
    return latencies, errors


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    args = ap.parse_args(argv)
    redis.Redis.from_url(args.redis).flushdb()
    with tempfile.TemporaryDirectory() as tmp:
        bot = start_citebot(Path(tmp) / "logs", redis_url=args.redis, index_dir=mini_index(Path(tmp)), workers=0)
        try:
            bot.send_event(mention_event("warm-up"))
            latencies, errors = asyncio.run(fire(bot.url, args.rate, args.seconds))
        finally:
            bot.stop()
            redis.Redis.from_url(args.redis).flushdb()
    print(f"{len(latencies)} events at {args.rate:g}/s for {args.seconds:g}s, {errors} errors")
    print(f"ack latency: p50 {statistics.median(latencies):.1f} ms  p99 {pct(latencies, 99):.1f} ms  "
          f"max {max(latencies):.1f} ms")
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
