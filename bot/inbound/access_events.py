"""Slack's events that change who may read what: the cached answer is dropped at once (bot.access.cache).

Without them someone removed from a group would keep reading its collections until the cache's lifetime
ran out; with them the next question sees the change. Only a Redis script that bumps versions and deletes runs here: the ack stays fast.
"""

from __future__ import annotations

import logging
from typing import Any

import redis.asyncio as aioredis
from slack_bolt.async_app import AsyncApp

from bot.access.cache import forget
from bot.store.shared_history import note_shared, note_unshared

log = logging.getLogger(__name__)

# Each needs a scope (manifest.yml): subteam_* usergroups:read, member_*_channel and channel_*shared
# channels:read / groups:read, user_change users:read.
ACCESS_EVENTS = ("subteam_members_changed", "subteam_created", "subteam_updated", "member_joined_channel",
                 "member_left_channel", "user_change", "channel_shared", "channel_unshared")


def register_access_events(app: AsyncApp, redis: aioredis.Redis) -> None:
    async def on_access_change(event: dict[str, Any]) -> None:
        dropped = await forget(redis, event)
        log.info("access cache: %s dropped %d entr%s", event.get("type"), dropped, "y" if dropped == 1 else "ies")
        channel = str(event.get("channel") or "")
        if event.get("type") == "channel_shared" and channel:
            # What citebot posted there while it was internal is still in its history: an admin decides.
            await note_shared(redis, channel)
            log.warning("channel %s is now shared with another organization: answers from collections without "
                        "external: true posted there before stay in its history; `citebot audit shared` lists them",
                        channel)
        elif event.get("type") == "channel_unshared" and channel:
            await note_unshared(redis, channel)

    for name in ACCESS_EVENTS:
        app.event(name)(on_access_change)
