"""Posting into Slack once per key: an answer per question, a card per review, a decision per review.

Two parts: the `PostLedger` in Redis records each post by its key right
after Slack confirms it, and the `Poster` posts through it. A post whose
outcome is unknown leaves the key in doubt: the call timed out, Slack answered
5xx, or the worker died between post and record.
Such a message may still appear in Slack, and not at once: one that landed
after the client's 15 s timeout was seen to show up seconds later. So every
post carries its key in the message metadata, and before posting again the
next run looks for it, again and again with a growing pause, until the
doubtful post can no longer show up: IN_DOUBT_WINDOW_S after it was sent, or
SETTLE_S after Slack answered it with an error. Only then does it post,
accepting a rare duplicate over a question that is never answered.

The ledger's record is short-lived (bot.store.keys says why); where an answer
was posted is kept for longer in its audit entry.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.jobs.queue import QueueUnavailable, connect
from bot.slack.calls import SLACK_TIMEOUT_S, SlackError, SlackFailed, SlackRateLimited, SlackUnavailable, call
from bot.store.keys import POSTED_TTL_S, post_attempt_key, post_claim_key, posted_key
from bot.store.records import PostRecord

log = logging.getLogger(__name__)

METADATA_EVENT = "citebot_post"
# The client gives up after SLACK_TIMEOUT_S; a post Slack accepted around then
# may take a few more seconds to be listed. Past this, it never landed.
IN_DOUBT_WINDOW_S = SLACK_TIMEOUT_S + 15.0
# Slack answered (a 5xx, internal_error): whatever it did is done, and a
# message it made is listed within a few seconds.
SETTLE_S = 5.0
# No answer from Slack came back for these: the request may still be at work there.
UNANSWERED = frozenset({"timeout", "connection_error"})
FIRST_LOOK_PAUSE_S = 0.5  # doubled after every look that found nothing
MAX_LOOK_PAUSE_S = 4.0
# How far back a thread or channel is searched. A channel where more than this
# many messages arrived within the window is rare; it costs a duplicate at worst.
LOOK_LIMIT = 200
# Slack answers these for a message its client cannot show as sent; a simpler
# form of the same message may go through.
TOO_BIG = frozenset({"msg_too_long", "msg_blocks_too_long", "invalid_blocks"})
# Each ledger call is one small command; one that takes longer is a hung connection.
LEDGER_TIMEOUT_S = 10.0

# KEYS: posted key, claim key. ARGV: ttl, claimer.
CLAIM_POST_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'posted' end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[1]) then return 'granted' end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[1])
return 'in_doubt'
"""


class PostClaim(StrEnum):
    GRANTED = "granted"  # nobody posted for this key: post, then record_posted
    POSTED = "posted"  # a post was recorded: do not post again
    # An earlier run claimed but never recorded: it may have posted and died
    # right after. The caller now holds the claim; it should look for its own
    # message in the thread (e.g. by message metadata) before posting.
    IN_DOUBT = "in_doubt"


class PostLedger:
    """Who posted what for which key, so a redelivered job does not post twice.

    The race it closes: worker A posts, then dies before acking the job;
    worker B gets the job again. A calls `record_posted` right after the
    post, so B's `claim_post` says POSTED. Only a death between the post and
    the record (a few milliseconds) leaves IN_DOUBT for B to resolve.

    Redis failures are raised as `QueueUnavailable`: the consumer tries the job again.
    """

    def __init__(self, redis_url: str, *, ttl: float = POSTED_TTL_S, timeout: float = LEDGER_TIMEOUT_S):
        self._ttl = int(ttl)
        self._redis = connect(redis_url, timeout=timeout)
        self._claim = self._redis.register_script(CLAIM_POST_LUA)
        self._claimer = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"

    async def claim_post(self, key: str) -> PostClaim:
        keys = [posted_key(key), post_claim_key(key)]
        result = await self._call(self._claim(keys=keys, args=[self._ttl, self._claimer]))
        return PostClaim(result)

    async def record_posted(self, key: str, channel: str, ts: str) -> None:
        record = PostRecord(question_id=key, channel=channel, ts=ts, posted_at=time.time())
        await self._call(self._redis.set(posted_key(key), record.model_dump_json(), ex=self._ttl))

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
            raise QueueUnavailable(f"post ledger: {type(exc).__name__}: {exc}") from exc


@dataclass
class Poster:
    slack: AsyncWebClient
    ledger: PostLedger
    window: float = IN_DOUBT_WINDOW_S

    async def may_post(self, key: str, channel: str, thread_ts: str | None) -> bool:
        """Claims `key`; False when its message is in Slack already (recorded, or found)."""
        claim = await self.ledger.claim_post(key)
        if claim is PostClaim.POSTED:
            return False
        if claim is PostClaim.IN_DOUBT:
            return not await self.find(key, channel, thread_ts)
        return True

    async def post(
        self, key: str, channel: str, thread_ts: str | None, *forms: dict[str, Any], what: str
    ) -> tuple[AsyncSlackResponse, dict[str, Any]]:
        """Posts the first of `forms` that Slack accepts (the next one only when the one
        before was too big); records it under `key`. Returns (Slack's response, the form posted)."""
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"key": key}}
        for i, msg in enumerate(forms):
            await self.ledger.mark_attempt(key, time.time() + self.window)
            try:
                response = await call(
                    self.slack.chat_postMessage(
                        channel=channel, thread_ts=thread_ts, metadata=metadata,
                        unfurl_links=False, unfurl_media=False, **msg,
                    ),
                    what,
                )
            except SlackFailed as exc:
                if exc.code in TOO_BIG and i + 1 < len(forms):
                    log.warning("%s: Slack said %s; posting a shorter form", what, exc.code)
                    continue
                await self.ledger.release_post(key)  # refused: surely not posted
                raise
            except SlackRateLimited:
                await self.ledger.release_post(key)
                raise
            except SlackUnavailable as exc:
                # In doubt (see find()); Slack's answer shortens how long to look.
                if exc.code not in UNANSWERED:
                    await self.ledger.mark_attempt(key, time.time() + SETTLE_S)
                raise
            await self.ledger.record_posted(key, response["channel"], response["ts"])
            return response, msg
        raise ValueError("post() needs at least one form of the message")

    async def find(self, key: str, channel: str, thread_ts: str | None) -> bool:
        """Is the message of a doubtful post in Slack? If so, it is recorded as posted."""
        # Nothing recorded: the run before died before posting (or ran an
        # older version that recorded nothing): one look is enough.
        deadline = await self.ledger.look_until(key) or time.time()
        pause = FIRST_LOOK_PAUSE_S
        while True:
            ts = await self._look(key, channel, thread_ts)
            if ts is not None:
                await self.ledger.record_posted(key, channel, ts)
                return True
            left = deadline - time.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, MAX_LOOK_PAUSE_S)

    async def _look(self, key: str, channel: str, thread_ts: str | None) -> str | None:
        try:
            if thread_ts:
                resp = await call(
                    self.slack.conversations_replies(channel=channel, ts=thread_ts, include_all_metadata=True, limit=LOOK_LIMIT),
                    "look for a doubtful post",
                )
            else:
                resp = await call(
                    self.slack.conversations_history(channel=channel, include_all_metadata=True, limit=LOOK_LIMIT),
                    "look for a doubtful post",
                )
        except SlackError as exc:
            # Not knowing is "not found yet": the loop looks again until its deadline.
            log.warning("could not look for post %s: %s", key, exc)
            return None
        messages: list[dict[str, Any]] = resp.get("messages", [])
        for msg in messages:
            payload = (msg.get("metadata") or {}).get("event_payload") or {}
            # "question_id": what answers posted before posts carried a general key.
            if key in (payload.get("key"), payload.get("question_id")):
                return msg["ts"]
        return None
