"""The worker's access check: the collections a question may draw on where its reply is shown.

`AccessGate.scope` is called by the answer handler (bot.jobs.handlers) after the
claim on the question's post and before retrieval; `tell_external_once` is the
private note in a channel shared with another organization where no collection
may be used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.access.resolver import AccessResolver
from bot.access.scope import Accesses, Scope, conversation_scope, private_scope
from bot.i18n import Key, message
from bot.models import SlackQuestion
from bot.slack.calls import best_effort
from bot.store.keys import ACCESS_TOLD_PREFIX, ACCESS_TOLD_TTL_S

log = logging.getLogger(__name__)


@dataclass
class AccessGate:
    resolver: AccessResolver
    accesses: Accesses

    @classmethod
    def of(cls, slack: AsyncWebClient, redis: aioredis.Redis, index_dir: Path) -> AccessGate:
        return cls(AccessResolver(slack, redis), Accesses(index_dir))

    async def scope(self, question: SlackQuestion, *, private: bool, bot_user_id: str | None) -> Scope:
        """AccessUnavailable when Slack does not say; IndexNotFound without an index."""
        accesses = self.accesses.current()
        if private:
            return await private_scope(self.resolver, accesses, question.user)
        return await conversation_scope(self.resolver, accesses, question.user, question.channel,
                                        bot_user_id=bot_user_id)

    async def tell_once(self, question: SlackQuestion, key: Key, *, per_question: bool = False) -> None:
        """A note only the asker sees, once per channel and asker (or per question: a redelivered job
        is not told again)."""
        if not question.user:
            return
        told = f"{ACCESS_TOLD_PREFIX}{key}:{question.id if per_question else question.channel}:{question.user}"
        if await self.resolver.redis.set(told, "1", nx=True, ex=ACCESS_TOLD_TTL_S):
            await best_effort(self.resolver.slack.chat_postEphemeral(
                channel=question.channel, user=question.user, text=message(key, question.language)))
