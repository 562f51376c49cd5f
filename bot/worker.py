"""The worker: the one place that wires the stages together for a job.

A job arrives at least once (bot.queue); everything it does in Slack happens
exactly once because every post goes through the PostLedger, keyed by what it
answers: the question, or the review decision.

Jobs:
    answer           a question from a mention or a DM
    help             an empty mention
    review_decision  a reviewer approved, answered or dismissed a rejected draft
    feedback         a 👎 with a reason: goes to the review channel
    source_changed   `citebot index` changed an entry a posted answer cited: a note under it

Every answer, refusal, uncertain reply and apology is recorded in the audit
trail (bot.audit) right after its post.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.audit import AuditTrail, audit_entry
from bot.config import Settings
from bot.llm import LLMError
from bot.logs import about_question
from bot.models import Answer, Outcome, Question
from bot.pipeline import Pipeline
from bot.queue import Job, PostClaim, PostLedger, QueueUnavailable, Transient
from bot.records import AnswerRecord, Records
from bot.review import ReviewDesk
from bot.slack import render
from bot.slack.calls import SlackRateLimited, best_effort, call
from bot.source_changes import note_source_changes

log = logging.getLogger(__name__)

PROGRESS_REACTION = "eyes"
# Earlier messages of a thread that a follow-up question takes along.
THREAD_HISTORY_MESSAGES = 6
METADATA_EVENT = "citebot_answer"
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")


@dataclass
class Worker:
    settings: Settings
    slack: AsyncWebClient
    pipeline: Pipeline
    records: Records
    ledger: PostLedger
    reviews: ReviewDesk
    audit: AuditTrail | None = None  # None: answers are not recorded (and get no source notes)

    async def handle(self, job: Job) -> None:
        with about_question(_question_id(job)):
            await self._dispatch(job)

    async def _dispatch(self, job: Job) -> None:
        handler = {
            "answer": self.answer,
            "help": self.help,
            "review_decision": self.reviews.decide,
            "feedback": self.reviews.feedback,
            "source_changed": self.source_changed,
        }.get(job.kind)
        if handler is None:
            raise ValueError(f"unknown job kind {job.kind!r}")
        await handler(job)

    async def on_dead(self, job: Job, error: BaseException) -> None:
        """The last try failed: the asker hears about it, never silence."""
        with about_question(_question_id(job)):
            log.error("job %s (%s) failed for good: %s", job.id, job.kind, error)
            if job.kind == "answer":
                await self._apologise(job, error)

    async def _apologise(self, job: Job, error: BaseException | None = None) -> None:
        question = Question.model_validate(job.payload["question"])
        claim = await self.ledger.claim_post(question.id)
        if claim is PostClaim.POSTED or (claim is PostClaim.IN_DOUBT and await self._find_posted(question)):
            return
        await self._post_reply(question, render.error_message(language=question.language))
        metrics.QUESTIONS.labels(outcome="error").inc()
        await self._audit(question, error=error)
        await best_effort(self.slack.reactions_remove(channel=question.channel, timestamp=question.ts, name=PROGRESS_REACTION))

    # ---------------------------------------------------------------- answer

    async def answer(self, job: Job) -> None:
        question = Question.model_validate(job.payload["question"])
        claim = await self.ledger.claim_post(question.id)
        if claim is PostClaim.POSTED:
            return  # a redelivery of a job that already posted
        if claim is PostClaim.IN_DOUBT and await self._find_posted(question):
            return
        await best_effort(self.slack.reactions_add(channel=question.channel, timestamp=question.ts, name=PROGRESS_REACTION))
        question = await self._with_thread_history(question)
        try:
            answer = await self.pipeline.answer(question)
        except LLMError as exc:
            metrics.LLM_ERRORS.labels(kind=type(exc).__name__).inc()
            await self.ledger.release_post(question.id)
            raise Transient(f"LLM: {exc}", retry_after=getattr(exc, "retry_after", None)) from exc

        msg = self._render(answer, question)
        await self.records.save_answer(
            AnswerRecord(
                answer_id=question.id,
                question_id=question.id,
                question=question.text,
                language=question.language,
                channel=question.channel,
                thread_ts=self._thread_of(question),
                is_dm=question.is_dm,
                text=answer.answer,
                sources=answer.sources,
                message=msg,
            )
        )
        if answer.outcome is Outcome.UNCERTAIN:
            # The card first: once the asker's reply is recorded, a retry of
            # this job ends early and would never post a card that failed.
            await self.reviews.open_review(question, answer)
        started = time.perf_counter()
        await self._post_reply(question, msg)
        answer.timings_ms["post"] = round((time.perf_counter() - started) * 1000, 3)
        metrics.observe_answer(answer.outcome, answer.timings_ms, answer.regenerations)
        log.info(
            "answered: %s",
            answer.outcome,
            extra={"citations": answer.citations, "violations": [v.kind for v in answer.violations],
                   "regenerations": answer.regenerations, "timings_ms": answer.timings_ms},
        )
        await self._audit(question, answer)
        await best_effort(self.slack.reactions_remove(channel=question.channel, timestamp=question.ts, name=PROGRESS_REACTION))

    def _render(self, answer: Answer, question: Question) -> dict[str, Any]:
        language = question.language
        limit = self.settings.max_question_chars if question.truncated else None
        if answer.outcome is Outcome.UNCERTAIN:
            return render.uncertain_message(language=language, question_limit=limit)
        if answer.outcome is Outcome.REFUSED:
            return render.refusal_message(language=language, question_limit=limit)
        return render.answer_message(answer, language=language, ref=question.id)

    async def _audit(self, question: Question, answer: Answer | None = None, *, error: BaseException | None = None) -> None:
        """After the post: the reply is in Slack already, so a lost audit entry is
        logged, not retried (a retry would find the post recorded and stop)."""
        if self.audit is None:
            return
        try:
            posted = await self.ledger.posted(question.id)
            await self.audit.record(audit_entry(question, answer, posted=posted, error=error))
        except (QueueUnavailable, RedisError, OSError) as exc:
            log.error("audit entry of question %s not recorded: %s", question.id, exc)

    async def source_changed(self, job: Job) -> None:
        await note_source_changes(job, slack=self.slack, records=self.records, ledger=self.ledger, audit=self.audit)

    async def help(self, job: Job) -> None:
        question = Question.model_validate(job.payload["question"])
        claim = await self.ledger.claim_post(question.id)
        if claim is PostClaim.POSTED or (claim is PostClaim.IN_DOUBT and await self._find_posted(question)):
            return
        await self._post_reply(question, render.help_message(language=question.language))

    # ---------------------------------------------------------------- posting

    @staticmethod
    def _thread_of(question: Question) -> str | None:
        """Channels: always in a thread. DMs: in the DM itself, unless the question was in a thread."""
        if question.is_dm:
            return question.thread_ts
        return question.thread_ts or question.ts

    async def _post_reply(self, question: Question, msg: dict[str, Any]) -> None:
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"question_id": question.id}}
        try:
            response = await call(
                self.slack.chat_postMessage(
                    channel=question.channel,
                    thread_ts=self._thread_of(question),
                    metadata=metadata,
                    unfurl_links=False,
                    unfurl_media=False,
                    **msg,
                ),
                "post the answer",
            )
        except SlackRateLimited:
            # Refused, so surely not posted: the retry may post without doubt.
            # (After a timeout the post may have happened; the claim stays,
            # and the retry looks for the message in the thread first.)
            await self.ledger.release_post(question.id)
            raise
        await self.ledger.record_posted(question.id, response["channel"], response["ts"])

    async def _find_posted(self, question: Question) -> bool:
        """After a crash between post and record: is our message already in the thread?"""
        thread = self._thread_of(question)
        try:
            if thread:
                resp = await self.slack.conversations_replies(
                    channel=question.channel, ts=thread, include_all_metadata=True, limit=200
                )
            else:
                resp = await self.slack.conversations_history(
                    channel=question.channel, oldest=question.ts, include_all_metadata=True, limit=200
                )
        except Exception as exc:  # noqa: BLE001 - see below
            # Only a worker that died between its post and the ledger record
            # leads here; if Slack cannot tell us, we post, accepting that
            # rare duplicate over a question that would never be answered.
            log.warning("could not check thread for question %s: %s", question.id, exc)
            return False
        for msg in resp.get("messages", []):
            payload = (msg.get("metadata") or {}).get("event_payload") or {}
            if payload.get("question_id") == question.id:
                await self.ledger.record_posted(question.id, question.channel, msg["ts"])
                return True
        return False

    async def _with_thread_history(self, question: Question) -> Question:
        """A follow-up ("and for part-timers?") takes the thread's earlier questions along."""
        if not question.thread_ts or question.thread_ts == question.ts or question.history:
            return question
        try:
            resp = await self.slack.conversations_replies(
                channel=question.channel, ts=question.thread_ts, limit=THREAD_HISTORY_MESSAGES * 3
            )
        except Exception as exc:  # noqa: BLE001 - history is a nicety; answer without it
            log.warning("no thread history for question %s: %s", question.id, exc)
            return question
        earlier = [
            _MENTION.sub("", m.get("text", "")).strip()
            for m in resp.get("messages", [])
            if not m.get("bot_id") and float(m.get("ts", 0)) < float(question.ts or time.time())
        ]
        history = [text for text in earlier if text][-THREAD_HISTORY_MESSAGES:]
        return question.model_copy(update={"history": history})


def _question_id(job: Job) -> str | None:
    question = job.payload.get("question") or {}
    return question.get("id") or job.payload.get("review_id") or job.payload.get("answer_id")
