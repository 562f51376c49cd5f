"""The cost of the access check per question (bot.access): Slack calls and time, cold and cached.

Resolves the scope of questions against the fake Slack Web API (real HTTP) and real Redis, as the worker
does: a DM (the asker's own access) and a channel post (every member's access), for a workspace whose
collections name a user group and a channel. Cold: nothing cached (the first question after the cache's
lifetime or an event); cached: the next questions.

    python bench/access.py [--questions 200] [--members 50] [--redis redis://127.0.0.1:6379/14]

Goal (issue: access): at most 1 Slack call per question once cached, at most 5 ms added. A cold large channel
is read in bulk (users.list, 200 a page): `--members 1000` shows its cold calls. The Redis
database given is flushed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.access.resolver import AccessResolver  # noqa: E402
from bot.access.scope import conversation_scope, private_scope  # noqa: E402
from bot.slack.calls import make_client  # noqa: E402
from kb_index.collection import EVERY_MEMBER, Audience, CollectionAccess  # noqa: E402
from tests.fakes.slack_server import BOT_USER_ID, FakeSlackServer  # noqa: E402

ACCESSES = {
    "handbook": EVERY_MEMBER,
    "payroll": CollectionAccess(audience=Audience(groups=("payroll-team",), channels=("CPAYROLL",))),
    "visitors": CollectionAccess(guests=True),
    "partners": CollectionAccess(external=True),
}


async def measure(slack: FakeSlackServer, redis: aioredis.Redis, questions: int, channel: str | None
                  ) -> tuple[float, int, list[float], float]:
    """(cold ms, cold Slack calls, cached ms per question, cached Slack calls per question)."""
    await redis.flushdb()
    resolver = AccessResolver(make_client("xoxb-bench", slack.url), redis)

    async def one() -> None:
        if channel is None:
            await private_scope(resolver, ACCESSES, "UPAYROLL")
        else:
            await conversation_scope(resolver, ACCESSES, "UPAYROLL", channel, bot_user_id=BOT_USER_ID)

    before = len(slack.calls())
    t0 = time.perf_counter()
    await one()
    cold_ms = (time.perf_counter() - t0) * 1000
    cold_calls = len(slack.calls()) - before
    before = len(slack.calls())
    cached: list[float] = []
    for _ in range(questions):
        t0 = time.perf_counter()
        await one()
        cached.append((time.perf_counter() - t0) * 1000)
    return cold_ms, cold_calls, cached, (len(slack.calls()) - before) / questions


async def main_async(args: argparse.Namespace) -> None:
    redis = aioredis.Redis.from_url(args.redis)
    with FakeSlackServer() as slack:
        members = [BOT_USER_ID, "UPAYROLL"] + [f"UMEMBER{i:04d}" for i in range(args.members - 2)]
        slack.channels["CBIG"] = {"id": "CBIG", "name": "big", "is_member": True, "members": members}
        print(f"{args.questions} questions after the first; a channel of {args.members} members; "
              "fake Slack over HTTP, real Redis")
        print(f"{'where':<28} {'cold ms':>8} {'cold calls':>10} {'cached p50 ms':>14} {'cached p99 ms':>14} "
              f"{'calls/question':>15}")
        for label, channel in (("DM (asker only)", None), (f"channel, {args.members} members", "CBIG")):
            cold_ms, cold_calls, cached, per_q = await measure(slack, redis, args.questions, channel)
            p99 = statistics.quantiles(cached, n=100)[98]
            print(f"{label:<28} {cold_ms:>8.1f} {cold_calls:>10} {statistics.median(cached):>14.2f} {p99:>14.2f} "
                  f"{per_q:>15.2f}")
    await redis.flushdb()
    await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--members", type=int, default=50)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
