"""Where the asker may read more than everyone in the channel: an answer, or an offer of one, only they see.

A channel's answer draws only on what every member may read. When that answer fell short and the asker may read
more, they get the answer from their own access as a message only they see (`answer`); when it was a good answer
but the best passage for the asker lies in a collection the channel may not read, a note only they see with
"Answer privately" (`offer`), which asks the same question again from their own access (bot.inbound.surfaces).
Restricted text is never posted in the channel.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer.budget import BudgetSpent, within_budget
from bot.answer.llm_http import LLMError
from bot.answer.pipeline import Pipeline
from bot.config import Settings
from bot.i18n import Key
from bot.models import Outcome, SlackQuestion
from bot.slack import replies
from bot.slack.calls import best_effort
from bot.store.audit import AuditTrail, audit_entry
from bot.store.errors import StoreUnavailable
from bot.store.keys import ACCESS_TOLD_PREFIX, ACCESS_TOLD_TTL_S, PRIVATE_OFFER_PREFIX, PRIVATE_OFFER_TTL_S
from bot.store.records import AnswerRecord, Records
from kb_index import IndexNotFound

log = logging.getLogger(__name__)


@dataclass
class PrivateAnswers:
    settings: Settings
    slack: AsyncWebClient
    pipeline: Pipeline
    records: Records
    audit: AuditTrail | None

    async def offer(self, question: SlackQuestion, own: list[str], more: frozenset[str] | set[str]) -> None:
        """The channel's answer was a good one, but the best passage for the asker's own access lies in a
        collection the channel may not read: a note only they see, with "Answer privately". Best effort, once."""
        if not question.user:
            return
        try:
            retrieval = await asyncio.to_thread(self.pipeline.retrieve, question.model_copy(update={"collections": own}))
        except IndexNotFound:
            return
        if not retrieval.hits or retrieval.hits[0].collection not in more:
            return
        if not await self.records.redis.set(f"{PRIVATE_OFFER_PREFIX}{question.id}", question.model_dump_json(),
                                            nx=True, ex=PRIVATE_OFFER_TTL_S):
            return
        msg = replies.better_in_private_message(question.id, language=question.language)
        await best_effort(self.slack.chat_postEphemeral(
            channel=question.channel, user=question.user, thread_ts=question.reply_thread_ts, **msg))
        log.info("private answer offered to the asker", extra={"best_in": retrieval.hits[0].collection})

    async def answer(self, question: SlackQuestion, collections: list[str]) -> None:
        """The answer from what the asker alone may read, as a message only they see in the thread (once per
        question: a redelivered job finds the key). Best effort: the channel has its reply already."""
        if not question.user:
            return
        if not await self.records.redis.set(f"{ACCESS_TOLD_PREFIX}private:{question.id}", "1", nx=True,
                                            ex=ACCESS_TOLD_TTL_S):
            return
        private = question.model_copy(update={"collections": collections})
        try:
            answer = await within_budget(self.pipeline.answer(private), self.settings.question_budget_s)
        except (LLMError, BudgetSpent, IndexNotFound) as exc:
            log.warning("no private answer for question %s: %s", question.id, exc)
            return
        if answer.outcome is not Outcome.ANSWERED:
            return
        ref = f"{question.id}#private"
        msg = replies.answer_message(answer, language=question.language, ref=ref)
        await self.records.save_answer(AnswerRecord(
            answer_id=ref, question_id=question.id, question=question.text, language=question.language,
            channel=question.channel, thread_ts=question.reply_thread_ts, is_dm=False, asker=question.user,
            private_to=question.user, text=answer.text, sources=answer.sources, message=msg))
        intro = replies.notice_message(Key.MORE_IN_PRIVATE, language=question.language)
        await best_effort(self.slack.chat_postEphemeral(
            channel=question.channel, user=question.user, thread_ts=question.reply_thread_ts,
            text=f"{intro['text']}\n\n{msg['text']}", blocks=[*intro["blocks"], *msg["blocks"]]))
        log.info("private answer offered to the asker", extra={"collections": collections})
        if self.audit is None:
            return
        try:
            # Its own entry: what this answer, seen by the asker alone, was allowed (the channel's says the channel's).
            entry = audit_entry(private, answer, posted=None)
            entry.question_id, entry.private_to, entry.posted_channel = ref, question.user, question.channel
            await self.audit.record(entry)
        except (StoreUnavailable, RedisError, OSError) as exc:
            log.error("audit entry of private answer %s not recorded: %s", ref, exc)
