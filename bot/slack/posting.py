"""Posting into Slack once per key: an answer per question, a card per review, a decision per review.

The `Poster` is the one place that does it, through the post ledger in Redis
(bot.store.ledger), in three steps a handler calls by name:

    claim_unless_posted   take the right to post under a key; False when its
                          message is in Slack already (recorded, or found)
    release_claim         this try posted nothing (the model failed): the
                          next try gets the claim without looking for a post
    post_and_record       post, and record the post under the key right after
                          Slack confirms it (a refused post releases the claim)

A post whose
outcome is unknown leaves the key in doubt: the call timed out, Slack answered
5xx, or the worker died between post and record.
Such a message may still appear in Slack, and not at once: one that landed
after the client's 15 s timeout was seen to show up seconds later. So every
post carries its key in the message metadata, and before posting again the
next run looks for it, again and again with a growing pause, until the
doubtful post can no longer show up: IN_DOUBT_WINDOW_S after it was sent, or
SETTLE_S after Slack answered it with an error. Only then does it post,
accepting a rare duplicate over a question that is never answered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.slack.calls import SLACK_TIMEOUT_S, SlackError, SlackFailed, SlackRateLimited, SlackUnavailable, call
from bot.store.ledger import PostClaim, PostLedger
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
class LedgerSteps:
    """The steps every poster takes with the ledger alone (Poster here, ResponseUrlPoster)."""

    ledger: PostLedger

    async def release_claim(self, key: str) -> None:
        """Nothing was posted under `key` in this try: the next one need not look for a post."""
        await self.ledger.release_post(key)

    async def where_posted(self, key: str) -> PostRecord | None:
        """Where `key`'s message was posted, while the ledger remembers it."""
        return await self.ledger.posted(key)


@dataclass
class Poster(LedgerSteps):
    """Posts each key's message once: claim, release and record, through the ledger."""

    slack: AsyncWebClient
    ledger: PostLedger
    window: float = IN_DOUBT_WINDOW_S

    async def claim_unless_posted(self, key: str, channel: str, thread_ts: str | None, *,
                                  retried: bool = False) -> bool:
        """Claims `key`; False when its message is in Slack already (recorded, or found).

        `retried`: a try after another one of the same job. Its claim is looked up in Slack even
        when the ledger grants it: a Redis failover can lose the claim and the record of a post
        that no replica had copied yet, and only Slack still knows the message is there."""
        claim = await self.ledger.claim_post(key)
        if claim is PostClaim.POSTED:
            return False
        if claim is PostClaim.IN_DOUBT or (retried and self.ledger.replicated):
            return not await self._find(key, channel, thread_ts)
        return True

    async def post_and_record(
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
                # In doubt (see _find()); Slack's answer shortens how long to look.
                if exc.code not in UNANSWERED:
                    await self.ledger.mark_attempt(key, time.time() + SETTLE_S)
                raise
            await self.ledger.record_posted(key, response["channel"], response["ts"])
            return response, msg
        raise ValueError("post_and_record() needs at least one form of the message")

    async def _find(self, key: str, channel: str, thread_ts: str | None) -> bool:
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
