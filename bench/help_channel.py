"""A help channel's day through citebot's filter: what is answered, what is left alone, and what it costs.

    python bench/help_channel.py [--rounds 25] [--redis redis://127.0.0.1:6379/14]

The 40 labelled messages of bench/help_channel_messages.py (questions, thanks,
chatter, statements and announcements, English and German) go, as the
`message` events Slack sends for a channel with `answer: questions`, signed,
through the web process's Bolt app in this process (bot.inbound.listeners
create_app) against real Redis and a fake Slack Web API. Printed:

- answered, left alone and wrongly treated (a non-question answered, a
  question left alone), each wrong one with the rule that decided it; the
  count of jobs the listener actually queued is checked against it;
- the time an auto-answered question costs outside the model: the listener's
  work from the signed request to its return (signature, Bolt's dispatch, the
  filter, the hourly cap in Redis, the enqueue, the asker's Home-tab index),
  p50 / p95 over --rounds rounds of the 40 messages, beside what a message
  left alone costs and the filter alone. The worker's share outside the model
  (retrieval, verification, the post) is the same as for a mention and is
  measured by bench/pipeline.py.

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

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from help_channel_messages import MESSAGES  # noqa: E402
from slack_bolt.request.async_request import AsyncBoltRequest  # noqa: E402

from bot.channels import ChannelPolicy, ChannelsConfig  # noqa: E402
from bot.config import load_settings  # noqa: E402
from bot.helpdesk.asks import asks  # noqa: E402
from bot.inbound.intake import AppDeps  # noqa: E402
from bot.inbound.listeners import create_app  # noqa: E402
from bot.jobs.queue import JobQueue  # noqa: E402
from bot.store.connection import connect  # noqa: E402
from bot.store.keys import JOBS_STREAM  # noqa: E402
from bot.store.records import Records  # noqa: E402
from tests.fakes.slack_server import BOT_USER_ID, FakeSlackServer  # noqa: E402
from tests.harness import BOT_TOKEN, SIGNING_SECRET, envelope, signed_headers  # noqa: E402

CHANNEL = "CHELPBENCH"


def message_event(text: str, n: int, *, kind: str = "message") -> dict:
    ts = f"{1_700_200_000 + n}.000100"
    event = {"type": kind, "channel_type": "channel", "channel": CHANNEL, "user": "UASKER", "text": text,
             "ts": ts, "event_ts": ts}
    if kind == "app_mention":
        event["text"] = f"<@{BOT_USER_ID}> {text}"
    return envelope(event, f"EvBench{n:07d}", 1_700_200_000 + n)


def signed(payload: dict) -> AsyncBoltRequest:
    body = json.dumps(payload)
    headers = {"content-type": "application/json", **{k.lower(): v for k, v in signed_headers(body).items()}}
    return AsyncBoltRequest(body=body, headers=headers)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def run(redis_url: str, rounds: int) -> dict:
    import os

    with FakeSlackServer(token=BOT_TOKEN) as slack, tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for name, value in {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                            "CITEBOT_SLACK_API_URL": slack.url, "CITEBOT_REDIS_URL": redis_url}.items():
            os.environ[name] = value
        settings = load_settings()
        # A cap no round reaches: its Redis script runs for every question, as in a capped channel.
        policy = ChannelPolicy(answer="questions", max_per_hour=1_000_000, escalate_to=("S0IT",))
        channels = ChannelsConfig(channels={CHANNEL: policy})
        queue = JobQueue(redis_url)
        client = connect(redis_url, timeout=2.0)
        app = create_app(AppDeps(settings=settings, queue=queue, records=Records(client), channels=channels))
        try:
            await app.async_dispatch(signed(message_event("warm-up: how do I log in?", 0)))  # auth.test, scripts
            timings: dict[bool, list[float]] = {True: [], False: []}
            n = 1
            for _ in range(rounds):
                for text, _label in MESSAGES:
                    request = signed(message_event(text, n))
                    n += 1
                    started = time.perf_counter()
                    response = await app.async_dispatch(request)
                    elapsed = (time.perf_counter() - started) * 1000
                    assert response.status == 200, response.body
                    timings[bool(asks(text))].append(elapsed)
            queued = await client.xlen(JOBS_STREAM) - 1  # less the warm-up's
            # The same questions as mentions, for what a mention costs on the same machine.
            mentions: list[float] = []
            for _ in range(rounds):
                for text, _label in MESSAGES:
                    if asks(text):
                        request = signed(message_event(text, n, kind="app_mention"))
                        n += 1
                        started = time.perf_counter()
                        await app.async_dispatch(request)
                        mentions.append((time.perf_counter() - started) * 1000)
        finally:
            await queue.close()
            await client.aclose()
    started = time.perf_counter()
    for _ in range(rounds):
        for text, _label in MESSAGES:
            asks(text)
    filter_us = (time.perf_counter() - started) / (rounds * len(MESSAGES)) * 1e6
    return {"timings": timings, "mentions": mentions, "queued_per_round": queued / rounds, "filter_us": filter_us}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    args = ap.parse_args(argv)

    verdicts = [(text, label, asks(text)) for text, label in MESSAGES]
    answered = [v for v in verdicts if v[2].question]
    wrong = [v for v in verdicts if v[2].question != v[1]]
    questions = sum(label for _, label, _ in verdicts)
    print(f"{len(MESSAGES)} messages ({questions} questions, {len(MESSAGES) - questions} not): "
          f"{len(answered)} answered, {len(MESSAGES) - len(answered)} left alone, {len(wrong)} wrongly treated")
    for text, label, verdict in wrong:
        kind = "question left alone" if label else "non-question answered"
        print(f"  {kind} ({verdict.reason}): {text}")
    reasons: dict[str, int] = {}
    for _, _, verdict in verdicts:
        reasons[verdict.reason] = reasons.get(verdict.reason, 0) + 1
    print("  by rule: " + " · ".join(f"{name} {n}" for name, n in sorted(reasons.items(), key=lambda kv: -kv[1])))

    redis.Redis.from_url(args.redis).flushdb()
    try:
        result = asyncio.run(run(args.redis, args.rounds))
    finally:
        redis.Redis.from_url(args.redis).flushdb()
    auto, alone = result["timings"][True], result["timings"][False]
    print(f"jobs queued per round: {result['queued_per_round']:.0f} (the filter answered {len(answered)})")
    print(f"time in the web process, {args.rounds} rounds (signed request to the listener's return):")
    print(f"  auto-answered question: p50 {statistics.median(auto):.2f} ms, p95 {pct(auto, 95):.2f} ms "
          f"(filter, hourly cap, enqueue, Home-tab index: {len(auto)} requests)")
    print(f"  left alone:             p50 {statistics.median(alone):.2f} ms, p95 {pct(alone, 95):.2f} ms")
    mentions = result["mentions"]
    print(f"  the same as a mention:  p50 {statistics.median(mentions):.2f} ms, p95 {pct(mentions, 95):.2f} ms")
    print(f"  the filter alone:       {result['filter_us']:.0f} µs per message")
    return 0 if result["queued_per_round"] == len(answered) else 1


if __name__ == "__main__":
    sys.exit(main())
