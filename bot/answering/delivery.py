"""Where a question's replies go, and the replies that are the bot's own: help, apology, "not ready".

A reply goes into the question's thread (the Poster, with the 👀 on the question while it is answered), into an
assistant panel thread (the same posting, no 👀), or to the asker alone through /citebot's response_url. Every
post goes through the post ledger (bot.slack.posting), keyed by the question: a job that runs twice posts once.
Every reply is recorded in the audit trail right after its post.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.access.resolver import AccessUnavailable
from bot.answer.budget import BudgetSpent
from bot.answering.errors import ModelUnavailable
from bot.i18n import Key
from bot.jobs.job import AnswerPayload, HelpPayload, Job
from bot.models import Answer, SlackQuestion
from bot.slack import replies
from bot.slack.calls import SlackError, best_effort
from bot.slack.posting import Poster
from bot.slack.response_url import ResponseUrlPoster
from bot.store.audit import AuditTrail, audit_entry
from bot.store.errors import StoreUnavailable
from bot.store.ledger import PostLedger
from bot.store.records import Records
from kb_index import IndexNotFound

log = logging.getLogger(__name__)

PROGRESS_REACTION = "eyes"

# Where a question's replies go: into its thread, or to its asker alone.
Delivery = Poster | ResponseUrlPoster


@dataclass
class Deliveries:
    slack: AsyncWebClient
    ledger: PostLedger
    poster: Poster = field(init=False)
    # The assistant panel's: the same posting once, but no 👀 to add or take back
    # (`delivery is self.poster` says where a reaction goes).
    panel_poster: Poster = field(init=False)

    def __post_init__(self) -> None:
        self.poster = Poster(self.slack, self.ledger)
        self.panel_poster = Poster(self.slack, self.ledger)

    def of(self, payload: AnswerPayload | HelpPayload) -> Delivery:
        if payload.ephemeral is not None:
            return ResponseUrlPoster(self.ledger, payload.ephemeral.response_url)
        return self.panel_poster if payload.assistant else self.poster

    async def react(self, question: SlackQuestion, delivery: Delivery) -> None:
        if delivery is self.poster:
            await best_effort(self.slack.reactions_add(channel=question.channel, timestamp=question.ts,
                                                       name=PROGRESS_REACTION))

    async def unreact(self, question: SlackQuestion, delivery: Delivery) -> None:
        if delivery is self.poster:
            await best_effort(self.slack.reactions_remove(channel=question.channel, timestamp=question.ts,
                                                          name=PROGRESS_REACTION))


@dataclass
class Recorder:
    """The audit entry of each reply, after its post."""

    audit: AuditTrail | None  # None: answers are not recorded (and get no source notes)

    async def record(self, question: SlackQuestion, delivery: Delivery, answer: Answer | None = None, *,
                     error: BaseException | str | None = None) -> None:
        """After the post: the reply is in Slack already, so a lost audit entry is
        logged, not retried (a retry would find the post recorded and stop)."""
        if self.audit is None:
            return
        try:
            posted = await delivery.where_posted(question.id)
            await self.audit.record(audit_entry(question, answer, posted=posted, error=error))
        except (StoreUnavailable, RedisError, OSError) as exc:
            log.error("audit entry of question %s not recorded: %s", question.id, exc)


@dataclass
class OwnReplies:
    """The bot's own replies in a question's place: the help message, the apology, "not ready", and the stored
    reply once more when Slack failed past all tries."""

    deliveries: Deliveries
    records: Records
    recorder: Recorder

    async def help(self, job: Job) -> None:
        """The `help` job: an empty mention or shortcut gets the help message."""
        payload = job.read(HelpPayload)
        question, delivery = payload.question, self.deliveries.of(payload)
        channel, thread = question.channel, question.reply_thread_ts
        if await delivery.claim_unless_posted(question.id, channel, thread):
            await delivery.post_and_record(question.id, channel, thread, replies.help_message(language=question.language),
                                           what="post the help message")

    async def apology(self, question: SlackQuestion, error: BaseException, delivery: Delivery) -> None:
        """The apology, with the claim on the question's post held by the caller."""
        if isinstance(error, AccessUnavailable):
            msg = replies.notice_message(Key.ACCESS_UNCHECKED, language=question.language)
        elif isinstance(error, ModelUnavailable | BudgetSpent):
            msg = replies.error_message(language=question.language)
        else:
            msg = replies.failure_message(language=question.language)
        await delivery.post_and_record(question.id, question.channel, question.reply_thread_ts, msg,
                                       what="post the apology")
        await self._recorded(question, delivery, error)

    async def not_ready(self, question: SlackQuestion, error: IndexNotFound, delivery: Delivery) -> None:
        log.error("question %s not answered: the knowledge base is not ready: %s", question.id, error)
        msg = replies.kb_not_ready_message(language=question.language)
        await delivery.post_and_record(question.id, question.channel, question.reply_thread_ts, msg,
                                       what="post 'not ready'")
        await self._recorded(question, delivery, error)

    async def stored_reply(self, question: SlackQuestion, error: SlackError, delivery: Delivery) -> None:
        """Slack stayed unavailable past all tries: the reply the question earned,
        if it was made, gets one more chance; an apology would blame the model."""
        record = await self.records.answer(question.id)
        if record is None or record.message is None:
            log.error("question %s not answered: Slack stayed unavailable (%s)", question.id, error.code)
            return
        channel, thread = question.channel, question.reply_thread_ts
        if await delivery.claim_unless_posted(question.id, channel, thread):
            await delivery.post_and_record(question.id, channel, thread, record.message, what="post the stored reply")
            log.info("stored reply posted after Slack failed (%s)", error.code)

    async def _recorded(self, question: SlackQuestion, delivery: Delivery, error: BaseException) -> None:
        metrics.QUESTIONS.labels(outcome="error").inc()
        await self.recorder.record(question, delivery, error=error)
        await self.deliveries.unreact(question, delivery)
