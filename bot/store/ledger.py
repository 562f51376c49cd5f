"""The post ledger: which key's message is in Slack, so that a redelivered job does not post it twice.

The race it closes: worker A posts, then dies before acking the job; worker B
gets the job again. A records the post right after Slack confirmed it, so
B's claim says POSTED. Only a death between the post and the record (a few
milliseconds) leaves IN_DOUBT for B to resolve, by looking for the message in
Slack (bot.slack.posting `Poster`, the one user of this ledger, says how).

The record is short-lived (bot.store.keys says why); where an answer was
posted is kept for longer in its audit entry. Redis failures are raised as
`StoreUnavailable`, a Retryable: the consumer tries the job again.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from enum import StrEnum
from typing import Any

from redis.exceptions import RedisError
from redis.typing import EncodableT

from bot.store.connection import connect
from bot.store.errors import StoreUnavailable
from bot.store.keys import POSTED_TTL_S, post_attempt_key, post_claim_key, posted_key
from bot.store.records import PostRecord
from bot.store.redis_target import RedisTarget
from bot.store.replicated import has_replicas, run_replicated

# Each ledger call is one small command; one that takes longer is a hung connection.
LEDGER_TIMEOUT_S = 10.0

# KEYS: posted key, claim key (one hash tag: the post key). ARGV: ttl, claimer.
CLAIM_POST_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'posted' end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[1]) then return 'granted' end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[1])
return 'in_doubt'
"""


# KEYS: posted key. ARGV: record json, ttl. A script so that it can be run replicated.
RECORD_POST_LUA = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
"""

log = logging.getLogger(__name__)


class PostClaim(StrEnum):
    GRANTED = "granted"  # nobody posted for this key: post, then record_posted
    POSTED = "posted"  # a post was recorded: do not post again
    # An earlier run claimed but never recorded: it may have posted and died
    # right after. The caller now holds the claim; it should look for its own
    # message in the thread (e.g. by message metadata) before posting.
    IN_DOUBT = "in_doubt"


class PostLedger:
    """Claims, attempts and records of posts in Redis, by key."""

    def __init__(self, redis_url: RedisTarget | str, *, ttl: float = POSTED_TTL_S, timeout: float = LEDGER_TIMEOUT_S):
        self._ttl = int(ttl)
        self._redis = connect(redis_url, timeout=timeout)
        self._claim = self._redis.register_script(CLAIM_POST_LUA)
        self._record = self._redis.register_script(RECORD_POST_LUA)
        self._replicated = has_replicas(redis_url)
        self._claimer = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"

    @property
    def replicated(self) -> bool:
        """Is Redis replicated (Sentinel, a cluster with replicas)? Then a failover can lose what no replica
        had copied yet."""
        return self._replicated

    async def claim_post(self, key: str) -> PostClaim:
        keys = [posted_key(key), post_claim_key(key)]
        result = await self._call(self._claim(keys=keys, args=[self._ttl, self._claimer]))
        return PostClaim(result)

    async def record_posted(self, key: str, channel: str, ts: str) -> None:
        record = PostRecord(question_id=key, channel=channel, ts=ts, posted_at=time.time())
        keys = [posted_key(key)]
        args: list[EncodableT] = [record.model_dump_json(), self._ttl]
        if not self._replicated:
            await self._call(self._record(keys=keys, args=args))
            return
        # On a replica before the job is acked: a failover right after must not
        # forget that the message is in Slack, or the redelivered job posts it again.
        done = await self._call(run_replicated(self._redis, self._record, keys, args))
        if done.replicas < 1:
            log.warning("post %s recorded, but no replica confirmed it: a failover now could repeat it", key)

    async def release_post(self, key: str) -> None:
        """Drops this run's claim when the post surely did not happen (a 429,
        a refused connection), so the retry gets GRANTED, not IN_DOUBT."""
        await self._call(self._redis.delete(post_claim_key(key), post_attempt_key(key)))

    async def mark_attempt(self, key: str, look_until: float) -> None:
        """Before a post is sent, and again when its outcome stays unknown: until when
        (epoch seconds) its message may still show up in Slack, for the next run to look."""
        await self._call(self._redis.set(post_attempt_key(key), repr(look_until), ex=self._ttl))

    async def look_until(self, key: str) -> float | None:
        """Until when a doubtful post may still show up; None if none was sent since the last release."""
        raw = await self._call(self._redis.get(post_attempt_key(key)))
        return None if raw is None else float(raw)

    async def posted(self, key: str) -> PostRecord | None:
        raw = await self._call(self._redis.get(posted_key(key)))
        return None if raw is None else PostRecord.model_validate_json(raw)

    async def close(self) -> None:
        await self._redis.aclose()

    async def _call(self, awaitable: Any) -> Any:
        try:
            return await awaitable
        except RedisError as exc:
            raise StoreUnavailable(f"post ledger: {type(exc).__name__}: {exc}") from exc


__all__ = ["LEDGER_TIMEOUT_S", "PostClaim", "PostLedger"]
