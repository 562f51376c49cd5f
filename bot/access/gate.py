"""The worker's access check: the collections a question may draw on where its reply is shown.

`AccessGate.scope` is called by the answer handler (bot.answering.answerer) after the
claim on the question's post and before retrieval; `tell_once` is the
private note in a channel shared with another organization where no collection
may be used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.access.resolver import AccessResolver, AccessUnavailable
from bot.access.scope import Accesses, Scope, channel_reads, conversation_scope, private_scope
from bot.i18n import Key, message
from bot.models import SlackQuestion
from bot.slack.calls import best_effort
from bot.store.keys import ACCESS_TOLD_PREFIX, ACCESS_TOLD_TTL_S, ACCESS_TTL_S
from kb_index.index import IndexNotFound

log = logging.getLogger(__name__)


@dataclass
class AccessGate:
    resolver: AccessResolver
    accesses: Accesses

    @classmethod
    def of(cls, slack: AsyncWebClient, redis: aioredis.Redis, index_dir: Path, *, cache_s: int = ACCESS_TTL_S) -> AccessGate:
        """`cache_s`: CITEBOT_ACCESS_CACHE_S, how long what Slack said is cached."""
        return cls(AccessResolver(slack, redis, ttl_s=cache_s), Accesses(index_dir))

    async def scope(self, question: SlackQuestion, *, private: bool, bot_user_id: str | None) -> Scope:
        """AccessUnavailable when Slack does not say; IndexNotFound without an index."""
        accesses = self.accesses.current()
        if private:
            return await private_scope(self.resolver, accesses, question.user)
        return await conversation_scope(self.resolver, accesses, question.user, question.channel,
                                        bot_user_id=bot_user_id)

    async def user_reads(self, user: str | None) -> frozenset[str]:
        """What `user` may read; nothing when Slack or the index cannot say (a click is not retried: never a guess)."""
        try:
            return (await private_scope(self.resolver, self.accesses.current(), user)).collections
        except (AccessUnavailable, IndexNotFound) as exc:
            log.warning("access of %s not checked, so nothing is shown: %s", user, exc)
            return frozenset()

    async def channel_reads(self, channel: str) -> frozenset[str]:
        """What every member of `channel` may read (bots aside); nothing when Slack or the index cannot say."""
        try:
            everyone, _ = await channel_reads(self.resolver, self.accesses.current(), channel)
        except (AccessUnavailable, IndexNotFound) as exc:
            log.warning("who reads %s not checked, so it counts as reading nothing: %s", channel, exc)
            return frozenset()
        return everyone

    async def tell_once(self, question: SlackQuestion, key: Key) -> None:
        """A note only the asker sees, once per channel and asker (a redelivered job or the next question
        is not told again)."""
        if not question.user:
            return
        told = f"{ACCESS_TOLD_PREFIX}{key}:{question.channel}:{question.user}"
        if await self.resolver.redis.set(told, "1", nx=True, ex=ACCESS_TOLD_TTL_S):
            await best_effort(self.resolver.slack.chat_postEphemeral(
                channel=question.channel, user=question.user, text=message(key, question.language)))
