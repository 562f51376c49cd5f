"""The Bolt app in-process: signed BoltRequests (or signed HTTP into the web app), a fake
Slack API, real or unreachable Redis."""

from __future__ import annotations

import json
import time

import pytest
from aiohttp.test_utils import TestClient, TestServer
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.channels import ChannelsConfig
from bot.config import load_settings
from bot.inbound.intake import AppDeps
from bot.inbound.listeners import create_app
from bot.inbound.web import create_web_app
from bot.jobs.queue import JobQueue
from bot.models import SlackQuestion
from bot.store.connection import connect
from bot.store.keys import JOBS_STREAM
from bot.store.records import Records
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import BOT_TOKEN, SIGNING_SECRET, mention_event, signed_headers

DEAD_REDIS = "redis://127.0.0.1:1/15"  # nothing listens on port 1


@pytest.fixture
def slack():
    with FakeSlackServer(token=BOT_TOKEN) as server:
        yield server


@pytest.fixture
async def make_app(slack, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    made = []

    async def make(url: str, **env):
        for name, value in {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                            "CITEBOT_SLACK_API_URL": slack.url, "CITEBOT_REDIS_URL": url, **env}.items():
            monkeypatch.setenv(name, value)
        settings = load_settings()
        queue = JobQueue(url)
        redis = connect(url, timeout=1.0)
        made.extend([queue.close, redis.aclose])
        app = create_app(AppDeps(settings=settings, queue=queue, records=Records(redis), channels=ChannelsConfig()))
        return app

    yield make
    for close in made:
        await close()


def signed(payload: dict) -> AsyncBoltRequest:
    body = json.dumps(payload)
    headers = {"content-type": "application/json", **{k.lower(): v for k, v in signed_headers(body).items()}}
    return AsyncBoltRequest(body=body, headers=headers)


async def test_a_mention_becomes_one_job(make_app, redis_url):
    app = await make_app(redis_url)
    response = await app.async_dispatch(signed(mention_event("How many vacation days?")))
    assert response.status == 200
    check = connect(redis_url, timeout=1.0)
    try:
        [(_, fields)] = await check.xrange(JOBS_STREAM)
    finally:
        await check.aclose()
    job = json.loads(fields["job"])
    assert job["kind"] == "answer"
    assert job["payload"]["question"]["text"] == "How many vacation days?"
    assert job["payload"]["question"]["id"].startswith("CGENERAL:")


# The question of an answer job as the web process wrote it before Question and
# SlackQuestion were two types: jobs waiting in Redis across an upgrade.
EARLIER_QUESTION_PAYLOAD = {
    "text": "How many vacation days?", "language": "en", "collections": None, "history": [],
    "id": "CGENERAL:1700000001.000100", "channel": "CGENERAL", "user": "UASKER", "ts": "1700000001.000100",
    "thread_ts": None, "is_dm": False, "truncated": False,
}


def test_an_answer_job_keeps_its_flat_question_payload():
    question = SlackQuestion.model_validate(EARLIER_QUESTION_PAYLOAD)
    assert (question.channel, question.user, question.reply_thread_ts) == ("CGENERAL", "UASKER", "1700000001.000100")
    assert question.model_dump(mode="json") == EARLIER_QUESTION_PAYLOAD


async def test_redis_down_fails_the_request_fast_so_slack_retries(make_app):
    app = await make_app(DEAD_REDIS)
    started = time.monotonic()
    response = await app.async_dispatch(signed(mention_event("How many vacation days?")))
    assert response.status >= 500  # not acked: Slack will deliver it again
    assert time.monotonic() - started < 2.5  # well inside Slack's 3 seconds


async def queued_jobs(url: str) -> list[dict]:
    check = connect(url, timeout=1.0)
    try:
        return [json.loads(fields["job"]) for _, fields in await check.xrange(JOBS_STREAM)]
    finally:
        await check.aclose()


async def test_only_the_bots_own_mention_leaves_the_question(make_app, redis_url):
    app = await make_app(redis_url)
    response = await app.async_dispatch(signed(mention_event("does <@U0HR42|anna> sign off leave for <@U0TEAM>?")))
    assert response.status == 200
    [job] = await queued_jobs(redis_url)
    assert job["payload"]["question"]["text"] == "does @U0HR42 sign off leave for @U0TEAM?"


@pytest.fixture
async def web(make_app, redis_url):
    """The web process's HTTP front, in-process, as Slack reaches it."""
    app = create_web_app(await make_app(redis_url), signing_secret=SIGNING_SECRET)
    async with TestClient(TestServer(app)) as client:

        async def post(payload: dict, **headers: str) -> int:
            body = json.dumps(payload)
            all_headers = {"Content-Type": "application/json", **signed_headers(body), **headers}
            async with client.post("/slack/events", data=body, headers=all_headers) as response:
                return response.status

        yield post


async def test_a_timestamp_that_is_not_a_number_is_refused_like_a_bad_signature(web, redis_url):
    assert await web(mention_event("How many vacation days?"), **{"X-Slack-Request-Timestamp": "abc"}) == 401
    assert await queued_jobs(redis_url) == []


async def test_odd_events_are_acknowledged_and_never_fail(web, redis_url):
    # A 500 makes Slack send the same event again and again, and the question is
    # dropped in silence: every one of these must be acked.
    lone_surrogate = mention_event("How many vacation \ud800 days?")
    no_ts, no_channel, number = mention_event("a"), mention_event("b"), mention_event("c")
    del no_ts["event"]["ts"], no_channel["event"]["channel"]
    number["event"]["text"] = 42
    statuses = [await web(event) for event in (lone_surrogate, no_ts, no_channel, number)]
    assert statuses == [200, 200, 200, 200]
    jobs = await queued_jobs(redis_url)
    # Nothing to answer into without a channel or ts; text that is not text gets the help message.
    assert [(j["kind"], j["payload"]["question"]["text"]) for j in jobs] == [
        ("answer", "How many vacation \ufffd days?"), ("help", ""),
    ]
