"""Typed jobs (bot.jobs.job): one payload model per kind, jobs already in Redis still parse, stable dedupe ids."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from bot.inbound.intake import feedback_dedupe_id
from bot.jobs.consumer import Consumer
from bot.jobs.job import (
    PAYLOADS,
    AnswerPayload,
    FeedbackPayload,
    HelpPayload,
    Job,
    JobKind,
    JobPayload,
    ReviewDecisionPayload,
    SourceChange,
    SourceChangedPayload,
)
from bot.jobs.queue import JobQueue
from bot.models import SlackQuestion
from bot.store.connection import connect
from bot.store.keys import JOBS_STREAM
from tests.harness import ROOT
from tests.polling import wait_until_async

# A SlackQuestion as bot.inbound.listeners serialised it into every answer job.
QUESTION = {
    "text": "How many vacation days?", "language": "en", "collections": None, "history": [],
    "id": "C1:1700000000.000100", "truncated": False, "channel": "C1", "ts": "1700000000.000100", "user": "U1",
    "thread_ts": None, "is_dm": False,
}


def todays_form(kind: str, payload: dict[str, Any], job_id: str) -> str:
    """A job as the web process wrote it before payloads had models: written by hand, not by the models."""
    return json.dumps({"kind": kind, "payload": payload, "id": job_id, "attempt": 1, "enqueued_at": 1700000000.5})


# Each kind's payload exactly as bot.inbound.listeners and bot.answering.source_changes built it.
TODAYS_JOBS = {
    "answer": {"question": QUESTION, "bot_user_id": "UBOT"},
    "help": {"question": {**QUESTION, "text": ""}, "bot_user_id": None},
    "review_decision": {"review_id": "r1", "decision": "answer", "reviewer": "U2", "text": "Thirty days."},
    "feedback": {"answer_id": "C1:1700000000.000100", "user": "U3", "reason": "outdated"},
    "source_changed": {
        "answer_id": "C1:1700000000.000100", "generation": "gen-000002",
        "changes": [{"entry_id": "hb-pto-01", "n": 1, "change": "changed"}],
    },
    "share_answer": {"answer_id": "C1:cmd-0123456789abcdef", "user": "U1"},
}


def test_every_kind_but_invalid_has_one_payload_model() -> None:
    assert set(PAYLOADS) == set(JobKind) - {JobKind.INVALID}
    assert all(model.KIND is kind for kind, model in PAYLOADS.items())


@pytest.mark.parametrize("kind", sorted(TODAYS_JOBS))
def test_a_model_writes_the_payload_a_job_of_today_carries(kind: str) -> None:
    # A rolling deploy runs old and new processes side by side: both must read what the other writes.
    model = PAYLOADS[JobKind(kind)]
    parsed = model.model_validate(TODAYS_JOBS[kind])
    assert Job.of(parsed).kind == kind
    assert Job.of(parsed).payload == json.loads(json.dumps(TODAYS_JOBS[kind]))


def test_reading_a_job_as_another_kind_is_an_error() -> None:
    job = Job.of(FeedbackPayload(answer_id="a", user="U1", reason="wrong"))
    with pytest.raises(ValueError, match="not 'answer'"):
        job.read(AnswerPayload)
    assert job.read(FeedbackPayload).reason == "wrong"


async def test_jobs_already_in_redis_in_todays_form_are_consumed(redis_url: str) -> None:
    raw = connect(redis_url, timeout=5.0)
    for kind, payload in TODAYS_JOBS.items():
        await raw.xadd(JOBS_STREAM, {"job": todays_form(kind, payload, job_id=f"old-{kind}")})
    read: dict[str, JobPayload] = {}
    dead: list[BaseException] = []

    async def handler(job: Job) -> None:
        read[job.kind] = job.parsed()

    async def on_dead(job: Job, error: BaseException) -> None:
        dead.append(error)

    consumer = Consumer(handler, redis_url=redis_url, on_dead=on_dead, read_block=0.05, heartbeat_interval=0.5)
    task = asyncio.create_task(consumer.run())
    try:
        await wait_until_async(lambda: len(read) == len(TODAYS_JOBS), timeout=10, what="every old job")
    finally:
        consumer.stop()
        await task
        await raw.aclose()
    assert dead == []
    answer = read[JobKind.ANSWER]
    assert isinstance(answer, AnswerPayload) and answer.question == SlackQuestion.model_validate(QUESTION)
    assert answer.bot_user_id == "UBOT"
    assert isinstance(read[JobKind.HELP], HelpPayload) and read[JobKind.HELP].question.text == ""
    assert read[JobKind.REVIEW_DECISION] == ReviewDecisionPayload(review_id="r1", decision="answer", reviewer="U2", text="Thirty days.")
    assert read[JobKind.FEEDBACK] == FeedbackPayload(answer_id="C1:1700000000.000100", user="U3", reason="outdated")
    changed = read[JobKind.SOURCE_CHANGED]
    assert isinstance(changed, SourceChangedPayload)
    assert changed.changes == [SourceChange(entry_id="hb-pto-01", n=1, change="changed")]


async def test_a_typed_job_survives_the_queue_unchanged(redis_url: str) -> None:
    job = Job.of(AnswerPayload(question=SlackQuestion.model_validate(QUESTION), bot_user_id="UBOT"))
    async with JobQueue(redis_url) as queue:
        assert await queue.enqueue(job, dedupe_id="Ev1")
    raw = connect(redis_url, timeout=5.0)
    try:
        [(_, entries)] = await raw.xread({JOBS_STREAM: "0"})
    finally:
        await raw.aclose()
    stored = json.loads(entries[0][1]["job"])
    assert stored["kind"] == "answer" and stored["payload"] == TODAYS_JOBS["answer"]
    assert Job.model_validate(stored).read(AnswerPayload).question.id == QUESTION["id"]


def test_the_feedback_dedupe_id_is_the_same_in_every_process() -> None:
    # str hashes are salted per process (PYTHONHASHSEED): two web processes seeing the same
    # click must still compute one id, or the reviewers get two cards for it.
    code = "from bot.inbound.intake import feedback_dedupe_id; print(feedback_dedupe_id('C1:1.2', 'U3', 'outdated'))"
    ids = {
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for seed in ("1", "2", "random")
    }
    assert ids == {feedback_dedupe_id("C1:1.2", "U3", "outdated")}
    assert feedback_dedupe_id("C1:1.2", "U3", "other reason") not in ids

