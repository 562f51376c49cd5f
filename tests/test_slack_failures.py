"""Slack failing the bot: never passed off as the model being down, never losing the work.

In-process: the job handlers (bot.wiring `job_handlers`) with a scripted pipeline, real Redis and the fake Slack
Web API. End to end: `citebot serve` + `citebot worker` (tests/citebot_fixtures).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.cli import main
from bot.config import load_settings
from bot.i18n import Key, message
from bot.jobs.queue import Job
from bot.models import Answer, Outcome, Question, SlackQuestion, Source
from bot.review.desk import ReviewDesk
from bot.slack.calls import SlackRateLimited, call, make_client
from bot.store.audit import AuditTrail
from bot.store.connection import connect
from bot.store.ledger import PostLedger
from bot.store.records import Records
from bot.wiring import job_handlers
from citebot_core.errors import Retryable
from tests.citebot_fixtures import answers_in, button_value
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import BOT_TOKEN, REVIEW_CHANNEL, block_action, free_port, mention_event
from tests.polling import wait_until, wait_until_async

pytestmark = pytest.mark.e2e

GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
HALLUCINATED = "You get 45 days of leave [hb-pto-01]."
PTO_QUESTION = "How many days of annual leave do I get?"
PTO_PASSAGE = "Every employee gets 28 days of paid annual leave per calendar year."


# ---------------------------------------------------------------- in-process


class ScriptedPipeline:
    """Stands in for bot.answer.pipeline.Pipeline: hands out the answers it was given, in order."""

    def __init__(self, *answers: Answer):
        self.answers = list(answers)

    async def answer(self, question: Question) -> Answer:
        return self.answers.pop(0)


def a_question(n: int = 1) -> SlackQuestion:
    ts = f"1700000{n:03d}.000100"
    return SlackQuestion(text=PTO_QUESTION, id=f"CGENERAL:{ts}", channel="CGENERAL", ts=ts, user="UASKER")


def answered(question: Question, text: str) -> Answer:
    source = Source(n=1, id="hb-pto-01", title="Annual leave", section="Entitlement", stand="2026-02",
                    url="https://wiki.example.com/pto", passage=PTO_PASSAGE)
    return Answer(question=question.text, answer=text, verified=True, refused=False, citations=["hb-pto-01"],
                  sources=[source], outcome=Outcome.ANSWERED)


def job_for(question: Question) -> Job:
    return Job(kind="answer", payload={"question": question.model_dump(mode="json")})


@pytest.fixture
def slack():
    with FakeSlackServer(token=BOT_TOKEN) as server:
        yield server


@dataclass
class Worker:
    """What a worker does with a job (bot.wiring `job_handlers`), and the records it keeps."""

    answer: Callable[[Job], Awaitable[None]]
    on_dead: Callable[[Job, BaseException], Awaitable[None]]
    records: Records
    ledger: PostLedger


@pytest.fixture
async def make_handlers(slack, redis_url, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no stray .env
    closers = []

    async def make(*answers: Answer, slack_timeout: float | None = None) -> Worker:
        settings = load_settings(env_file=None, CITEBOT_REVIEW_CHANNEL=REVIEW_CHANNEL)
        redis, ledger = connect(redis_url, timeout=5), PostLedger(redis_url)
        closers.extend([ledger.close, redis.aclose])
        client = make_client(BOT_TOKEN, slack.url)
        if slack_timeout is not None:
            client.timeout = slack_timeout
        records = Records(redis)
        reviews = ReviewDesk(settings=settings, slack=client, records=records, ledger=ledger)
        jobs = job_handlers(settings, client, ScriptedPipeline(*answers), records, ledger, reviews,  # type: ignore[arg-type]
                            AuditTrail(redis))
        return Worker(jobs.handle, jobs.on_dead, records, ledger)

    yield make
    for close in closers:
        await close()


async def test_an_answer_slack_finds_too_long_is_posted_shorter_with_footnotes_and_sources(make_handlers, slack):
    question = a_question()
    long_text = " ".join(["Every employee gets 28 days of paid annual leave per calendar year [1]."] * 250)
    handlers = await make_handlers(answered(question, long_text))
    slack.fail(error="msg_too_long", method="chat.postMessage")
    await handlers.answer(job_for(question))
    refused, posted = slack.calls("chat.postMessage")
    assert refused.error == "msg_too_long" and posted.ok and posted.body["thread_ts"] == question.ts
    blocks = json.dumps(posted.body["blocks"], ensure_ascii=False)
    # Shorter: fewer blocks and characters, and it says so ...
    assert len(posted.body["blocks"]) < len(refused.body["blocks"])
    assert len(blocks) < len(json.dumps(refused.body["blocks"])) and len(posted.body["text"]) < len(refused.body["text"])
    assert message(Key.SHORTENED, "en") in blocks
    # ... and still an answer with its footnotes and the Sources button.
    assert "[1]" in posted.body["text"] and "Annual leave" in blocks and "Stand 2026-02" in blocks
    assert "citebot_sources" in blocks
    # The record behind later notes and the Sources button holds what was posted.
    stored = await handlers.records.answer(question.id)
    assert stored.message["blocks"] == posted.body["blocks"]


async def test_a_post_that_lands_after_the_client_timeout_is_found_not_posted_twice(make_handlers, slack):
    question = a_question()
    handlers = await make_handlers(answered(question, GOOD), answered(question, GOOD), slack_timeout=0.5)
    # Slack takes the post but answers after the client gave up; the message shows up then.
    slack.fail(delay=2.5, method="chat.postMessage")
    with pytest.raises(Retryable):
        await handlers.answer(job_for(question))
    gave_up_at = time.time()
    # The queue's retry comes right away; the late message has not shown up yet.
    await handlers.answer(job_for(question))
    late = await wait_until_async(lambda: [c for c in slack.calls("chat.postMessage") if c.at < gave_up_at], 10,
                                  "the late post")
    assert late[0].ok
    assert len(slack.messages("CGENERAL")) == 1
    assert len(slack.calls("chat.postMessage")) == 1
    assert (await handlers.ledger.posted(question.id)).ts == slack.messages("CGENERAL")[0]["ts"]


async def test_slack_down_past_all_tries_gets_the_answer_posted_not_a_model_apology(make_handlers, slack):
    question = a_question()
    handlers = await make_handlers(answered(question, GOOD))
    slack.fail(status=503, method="chat.postMessage", times=3)  # the client's own retries included
    with pytest.raises(Exception) as last_try:
        await handlers.answer(job_for(question))
    await handlers.on_dead(job_for(question), last_try.value)
    [posted] = [c for c in slack.calls("chat.postMessage") if c.ok]
    assert posted.body["text"] != message(Key.LLM_DOWN, "en")
    assert "28 days" in posted.body["text"] and "citebot_sources" in json.dumps(posted.body["blocks"])


async def test_an_answer_slack_refuses_for_good_gets_no_model_apology(make_handlers, slack):
    question = a_question()
    handlers = await make_handlers(answered(question, GOOD))
    slack.fail(error="not_in_channel", method="chat.postMessage")
    with pytest.raises(Exception) as refused:
        await handlers.answer(job_for(question))
    await handlers.on_dead(job_for(question), refused.value)
    assert [c.body["text"] for c in slack.calls("chat.postMessage") if c.ok] == []


async def test_a_rate_limit_past_the_clients_retries_carries_slacks_retry_after(slack):
    # No retry handlers: what make_client's handlers would see after their last retry.
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.url, retry_handlers=[])
    slack.rate_limit(times=1, retry_after=7, method="chat.postMessage")
    with pytest.raises(SlackRateLimited) as limited:
        await call(client.chat_postMessage(channel="CGENERAL", text="x"), "post")
    assert limited.value.code == "ratelimited" and limited.value.retry_after == 7.0
    assert isinstance(limited.value, Retryable)  # the queue tries the job again after that wait


# ---------------------------------------------------------------- end to end


def test_a_review_card_slack_refuses_still_answers_the_asker_and_lists_the_review(
    citebot, redis_url, monkeypatch, capsys
):
    bot = citebot(workers=0)
    metrics_port = free_port()
    bot.start_worker("--metrics-port", str(metrics_port))
    bot.llm.script(HALLUCINATED, HALLUCINATED)
    # The bot was never invited to the review channel: the card is the first post.
    bot.slack.fail(error="not_in_channel", method="chat.postMessage")
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [reply] = answers_in(bot, "CGENERAL", event["event"]["ts"])
    assert reply["text"] == message(Key.UNCERTAIN, "en")
    assert bot.replies(REVIEW_CHANNEL, None) == []
    # The operator sees it: a log line, a metric by Slack's error code, and the review listed with the reason.
    wait_until(lambda: "not_in_channel" in bot.log("worker0"), 10, "the worker's log line")
    metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
    assert 'citebot_slack_errors_total{code="not_in_channel"} 1.0' in metrics
    monkeypatch.setenv("CITEBOT_REDIS_URL", redis_url)
    monkeypatch.chdir(bot.logs)
    assert main(["review", "list"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert PTO_QUESTION[:40] in line and "no card: not_in_channel" in line


def test_a_decision_slack_refuses_is_undone_and_the_reviewer_told(citebot):
    bot = citebot()
    bot.llm.script(HALLUCINATED, HALLUCINATED)
    event = mention_event(PTO_QUESTION)
    thread = event["event"]["ts"]
    bot.send_event(event)
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    answers_in(bot, "CGENERAL", thread)
    review_id = button_value(card, "citebot_review_approve")
    bot.slack.fail(error="channel_not_found", method="chat.postMessage")
    bot.send_action(block_action("citebot_review_approve", review_id, channel=REVIEW_CHANNEL, user="UREVIEWER"))
    [told] = bot.slack.wait_for("chat.postEphemeral", 1, timeout=15)
    assert told.body["user"] == "UREVIEWER" and told.body["channel"] == REVIEW_CHANNEL
    assert "channel_not_found" in told.body["text"]
    # The claim was undone: the next click posts the answer into the asker's thread
    # (a claim left in place would hold the review for days).
    bot.send_action(block_action("citebot_review_approve", review_id, channel=REVIEW_CHANNEL, user="UREVIEWER"))
    posts = answers_in(bot, "CGENERAL", thread, count=2)
    assert "45 days" in posts[1]["text"] and "UREVIEWER" in json.dumps(posts[1]["blocks"])
