"""Restricted answers already in a channel's history when Slack says it is now shared with another organization.

From `channel_shared` on, citebot answers there only from collections with `external: true`. What it posted
while the channel was internal stays in the channel's history, where the other organization's people can now
scroll to it. citebot cannot unpost it on its own (an admin decides: delete or keep), so it says so: the web
process records the channel when the event comes (`note_shared`), and `citebot audit shared` and `citebot doctor`
list each answer of the audit trail that was posted there and cites a collection the channel may not read now.
They are read from the audit trail when asked, not copied at the event: nothing is lost if the web process
stops mid-way, and an answer whose collection becomes `external: true` later drops off the list by itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import redis.asyncio as aioredis

from bot.models import Outcome
from bot.store import keys
from bot.store.audit import AuditEntry, AuditTrail
from bot.store.records import EPHEMERAL_TS, PostRecord
from kb_index.collection import CollectionAccess


@dataclass(frozen=True)
class ExposedAnswer:
    question_id: str
    at: float  # when it was answered
    ts: str  # the message in the channel
    collections: tuple[str, ...]  # the cited ones the channel may not read now


@dataclass(frozen=True)
class SharedChannel:
    channel: str
    shared_at: float
    answers: tuple[ExposedAnswer, ...]


async def note_shared(redis: aioredis.Redis, channel: str, at: float | None = None) -> None:
    await redis.zadd(keys.SHARED_CHANNELS, {channel: time.time() if at is None else at})
    await redis.expire(keys.SHARED_CHANNELS, int(keys.AUDIT_HORIZON_S))


async def note_unshared(redis: aioredis.Redis, channel: str) -> None:
    """No other organization reads the channel any more: its history is nobody's concern again."""
    await redis.zrem(keys.SHARED_CHANNELS, channel)


async def restricted_in_shared_channels(redis: aioredis.Redis, accesses: Mapping[str, CollectionAccess]
                                        ) -> list[SharedChannel]:
    """Each shared channel with the answers posted there that cite a collection without `external: true` (one not
    in the live index any more counts as such: nothing says it may be read there). One pass over the audit trail."""
    shared = {_text(c): float(at) for c, at in await redis.zrange(keys.SHARED_CHANNELS, 0, -1, withscores=True)}
    if not shared:
        return []
    found: dict[str, list[ExposedAnswer]] = {c: [] for c in shared}
    async for entry in AuditTrail(redis).entries(since=0, outcomes={Outcome.ANSWERED}):
        closed = tuple(sorted({c.collection for c in entry.cited
                               if not (accesses.get(c.collection) or CollectionAccess(closed=True)).external}))
        if not closed or entry.is_dm or entry.private_to is not None:
            continue
        where = await _in_channel(redis, entry)
        if where is not None and where.channel in found:
            found[where.channel].append(ExposedAnswer(entry.question_id, entry.at, where.ts, closed))
    return [SharedChannel(c, shared[c], tuple(found[c])) for c in sorted(shared, key=shared.__getitem__)]


async def _in_channel(redis: aioredis.Redis, entry: AuditEntry) -> PostRecord | None:
    """Where the answer is in a channel's history: its own post, or for a /citebot answer only its asker saw,
    the post "Post in channel" made of it (while the post ledger remembers it)."""
    if entry.posted_channel and entry.posted_ts and entry.posted_ts != EPHEMERAL_TS:
        return PostRecord(question_id=entry.question_id, channel=entry.posted_channel, ts=entry.posted_ts,
                          posted_at=entry.at)
    raw = await redis.get(keys.posted_key(f"share:{entry.question_id}"))
    return None if raw is None else PostRecord.model_validate_json(raw)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
