"""What several commands use: Redis for one command, the audiences' names Slack does not know, a shared
channel's restricted history as lines."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot.commands import CliError
from bot.config import Settings
from bot.slack.calls import SlackFailed, call
from bot.store.connection import connect, redis_location
from kb_index.collection import CollectionAccess


def with_redis(settings: Settings, use):
    """Runs `use(redis)` against CITEBOT_REDIS_URL; a Redis that does not answer is one clear line."""
    async def run():
        redis = connect(settings.redis, timeout=5.0)
        try:
            return await use(redis)
        finally:
            await redis.aclose()

    try:
        return asyncio.run(run())
    except (OSError, RedisError) as exc:
        raise CliError(f"cannot reach Redis at {redis_location(settings.redis)}: {exc}") from None




async def unknown_audience_names(slack: AsyncWebClient, accesses: Mapping[str, CollectionAccess]
                                 ) -> list[tuple[str, str]]:
    """(collection, what is wrong) for each group or channel an audience names that Slack does not know: it
    grants nobody access. SlackError when Slack cannot be asked."""
    groups_of = {name: {g for au in a.audiences() for g in au.groups} for name, a in accesses.items()}
    channels_of = {name: {c for au in a.audiences() for c in au.channels} for name, a in accesses.items()}
    found: list[tuple[str, str]] = []
    if any(groups_of.values()):
        listed = (await call(slack.usergroups_list(), "usergroups.list")).get("usergroups") or []
        known = {g.get("id") for g in listed} | {g.get("handle") for g in listed}
        found += [(name, f"the user group {g} an audience names is unknown to Slack: it grants nobody access")
                  for name, groups in sorted(groups_of.items()) for g in sorted(groups - known)]
    for name, channels in sorted(channels_of.items()):
        for channel in sorted(channels):
            try:
                await call(slack.conversations_info(channel=channel), "conversations.info")
            except SlackFailed as exc:
                found.append((name, f"the channel {channel} an audience names cannot be read ({exc.code}): "
                                    "it grants nobody access"))
    return found


def shared_history_lines(found) -> list[str]:
    """One line per shared channel, then one per answer still in its history (`citebot audit shared`, doctor)."""
    lines = []
    for shared in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(shared.shared_at))
        lines.append(f"{shared.channel} shared with another organization since {when} UTC: "
                     f"{len(shared.answers)} answer(s) in its history cite collections without external: true")
        lines += [f"  {a.question_id}  ts {a.ts}  cites {', '.join(a.collections)}" for a in shared.answers]
    return lines


def granted_scopes(reply: Any) -> set[str] | None:
    """The scopes auth.test's X-OAuth-Scopes header says the token has; None when Slack did not say."""
    header = next((v for k, v in (reply.headers or {}).items() if k.lower() == "x-oauth-scopes"), None)
    if isinstance(header, list):
        header = header[0] if header else None
    return None if header is None else {s.strip() for s in str(header).split(",")}
