"""Questions handed over to people, and the per-channel count of answers given without a mention.

An `Escalation` is written by the web process when the asker clicks "Still need
help?" (claimed once per thread: a second click finds the claim and does nothing),
completed by the worker once the people in `escalate_to` were mentioned, and
added to when a person answers in the thread. Key names and lifetimes are in
bot.store.keys.
"""

from __future__ import annotations

import time

import redis.asyncio as aioredis
from pydantic import BaseModel, Field

from bot.store import keys

REQUESTED, HANDED_OVER = "requested", "handed over"
# A person's replies kept per hand-over: enough for an answer written in a few messages.
MAX_REPLIES = 10


class PersonReply(BaseModel):
    user: str
    text: str
    ts: str


class Escalation(BaseModel):
    question_id: str
    question: str
    language: str = "en"
    channel: str  # where it was asked (the DM's channel for a DM or the panel)
    thread_ts: str | None = None  # the thread of the bot's reply
    question_ts: str | None = None  # the asker's message, for the reaction (none in the panel)
    is_dm: bool = False
    asker: str | None = None
    requested_by: str
    escalate_to: list[str]
    # The collections the reply drew on (its sources'), else those the channel may search: what
    # `citebot review gaps` counts escalations by. Empty: every collection.
    collections: list[str] = Field(default_factory=list)
    outcome: str = ""  # the reply handed over: answered, refused, uncertain
    status: str = REQUESTED
    at: float = Field(default_factory=time.time)
    # Where the mention of the people was posted (the thread, or the review channel for a DM).
    handover_channel: str | None = None
    handover_ts: str | None = None
    replies: list[PersonReply] = Field(default_factory=list)


# KEYS: escalation key, all escalations, the thread's claim. ARGV: record json, ttl, question id, at.
# The first click in a thread claims it; the record and the set are written with the claim, so a listed
# hand-over always has its record.
CLAIM_LUA = """
if redis.call('SET', KEYS[3], ARGV[3], 'NX', 'EX', ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
  return 1
end
return 0
"""

# KEYS: the channel's auto-answered set. ARGV: now, window start, message ts, cap, ttl.
# 1: answer it (counted now, or counted before: Slack's retry of the same message); 0: over the cap.
WITHIN_CAP_LUA = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


def _claim_key(escalation: Escalation) -> str:
    return keys.escalation_claim_key(escalation.channel, escalation.thread_ts, escalation.question_id)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class Escalations:
    def __init__(self, redis: aioredis.Redis):
        self.redis = redis
        self._claim = redis.register_script(CLAIM_LUA)
        self._within_cap = redis.register_script(WITHIN_CAP_LUA)

    async def claim(self, escalation: Escalation) -> bool:
        """True for the first click in the question's thread (or on a question asked outside a thread);
        False for any later one, on this question's button or another reply's in the same thread."""
        claimed = await self._claim(
            keys=[keys.escalation_key(escalation.question_id), keys.ESCALATIONS_ZSET, _claim_key(escalation)],
            args=[escalation.model_dump_json(), keys.ESCALATION_TTL_S, escalation.question_id, repr(escalation.at)],
        )
        return bool(claimed)

    async def release(self, question_id: str) -> None:
        """The hand-over could not be made (the job could not be queued, Slack refused the post): a later click tries again."""
        escalation = await self.get(question_id)
        if escalation is not None:
            await self.redis.delete(_claim_key(escalation))
        await self.redis.delete(keys.escalation_key(question_id))
        await self.redis.zrem(keys.ESCALATIONS_ZSET, question_id)

    async def save(self, escalation: Escalation) -> None:
        """Rewrites the record, keeping its lifetime; never brings back one that expired."""
        await self.redis.set(keys.escalation_key(escalation.question_id), escalation.model_dump_json(), keepttl=True,
                             xx=True)

    async def get(self, question_id: str) -> Escalation | None:
        raw = await self.redis.get(keys.escalation_key(question_id))
        return Escalation.model_validate_json(raw) if raw else None

    async def link_thread(self, channel: str, thread_ts: str, question_id: str) -> None:
        """People answer in this thread: their replies belong to `question_id`."""
        await self.redis.set(keys.escalated_thread_key(channel, thread_ts), question_id, ex=keys.ESCALATION_TTL_S)

    async def in_thread(self, channel: str, thread_ts: str) -> str | None:
        """The handed-over question a thread belongs to, if any."""
        value = await self.redis.get(keys.escalated_thread_key(channel, thread_ts))
        return _text(value) if value else None

    async def since(self, since: float, limit: int = 1000) -> list[Escalation]:
        """Hand-overs at or after `since` (epoch seconds), oldest first."""
        ids = await self.redis.zrangebyscore(keys.ESCALATIONS_ZSET, since, "+inf", start=0, num=limit)
        found = [await self.get(_text(i)) for i in ids]
        return [e for e in found if e is not None]

    async def within_cap(self, channel: str, message_ts: str, per_hour: int) -> bool:
        """Counts the message against the channel's cap; False when the last hour already has `per_hour`."""
        now = time.time()
        allowed = await self._within_cap(
            keys=[keys.auto_answered_key(channel)],
            args=[repr(now), repr(now - keys.AUTO_ANSWERED_WINDOW_S), message_ts, per_hour,
                  keys.AUTO_ANSWERED_WINDOW_S],
        )
        return bool(allowed)
