"""What `serve` and `worker` check with Slack before they take any work.

A wrong token, a revoked app or a review channel given by name used to show
up only later: as a Socket Mode loop retrying for ever, as every answer failing
with `invalid_auth`, or as every reviewer click ignored because Slack sends the
channel's ID while the settings held its name. So at start:

- `auth.test` with the bot token; a failure ends the process with one line
  that says which token and what Slack answered (`StartupError`);
- in Socket Mode, `apps.connections.open` with the app-level token, the same way;
- the review channel is resolved to its ID (a name is looked up with
  `conversations.list`), and the bot's membership is checked: not being a
  member is a warning that says how to invite it, since the channel may be
  joined after start.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import SlackError, SlackFailed, SlackUnavailable, call
from citebot_core.errors import Permanent

log = logging.getLogger(__name__)

# A channel ID: public (C), private or old group (G), as Slack's interactivity payloads carry them.
CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{6,}")
# conversations.list pages; a workspace with more channels than this many pages is
# asked to give the ID instead of the name.
LIST_PAGE_SIZE = 1000
LIST_MAX_PAGES = 20

# What Slack's auth errors mean for the person reading the log.
_AUTH_HINTS = {
    "invalid_auth": "the token is not valid (copied wrongly, or from another app)",
    "not_authed": "no token was sent",
    "account_inactive": "the app was uninstalled or the token revoked; reinstall the app and copy the new token",
    "token_revoked": "the token was revoked; reinstall the app and copy the new token",
    "token_expired": "the token expired (token rotation is on); use a fresh token",
    "not_allowed_token_type": "this is not the kind of token this setting takes",
}


class StartupError(Permanent):
    """Slack refused what the process needs: the message is the one line to print before exiting."""


@dataclass(frozen=True)
class BotIdentity:
    user_id: str
    team: str
    bot_name: str


async def check_bot_token(slack: AsyncWebClient) -> BotIdentity:
    """`auth.test` with SLACK_BOT_TOKEN, or a StartupError naming the variable."""
    try:
        reply = await call(slack.auth_test(), "auth.test")
    except SlackUnavailable as exc:
        raise StartupError(f"cannot reach Slack at start ({exc}); check CITEBOT_SLACK_API_URL and the network") from exc
    except SlackError as exc:
        raise StartupError(f"SLACK_BOT_TOKEN: Slack refused it at auth.test: {_explained(exc)}") from exc
    identity = BotIdentity(
        user_id=str(reply.get("user_id") or ""), team=str(reply.get("team") or ""), bot_name=str(reply.get("user") or "")
    )
    log.info("Slack: signed in as @%s (%s) in %s", identity.bot_name, identity.user_id, identity.team or "?")
    return identity


async def check_app_token(slack: AsyncWebClient, app_token: str) -> None:
    """`apps.connections.open` with SLACK_APP_TOKEN: Socket Mode will work, or a StartupError.

    The URL it returns is not used (the Socket Mode client asks for its own);
    this call is how Slack says whether the token may open one."""
    try:
        await call(slack.apps_connections_open(app_token=app_token), "apps.connections.open")
    except SlackError as exc:
        raise StartupError(
            f"SLACK_APP_TOKEN: Slack refused to open a Socket Mode connection: {_explained(exc)}"
            " (the app-level token needs the connections:write scope, and Socket Mode must be on)"
        ) from exc


async def resolve_review_channel(slack: AsyncWebClient, value: str | None, bot: BotIdentity) -> str | None:
    """CITEBOT_REVIEW_CHANNEL as the channel ID that clicks carry; warns if the bot is not in it."""
    if not value:
        log.info("no review channel (CITEBOT_REVIEW_CHANNEL): rejected drafts are kept, not shown to reviewers")
        return None
    if CHANNEL_ID.fullmatch(value):
        info = await _channel_info(slack, value)
    else:
        info = await _channel_by_name(slack, value.lstrip("#"))
    channel_id = str(info["id"])
    if not info.get("is_member"):
        log.warning(
            "the bot is not a member of the review channel #%s (%s): review cards cannot be posted there; "
            "invite it with `/invite @%s` in that channel",
            info.get("name", "?"), channel_id, bot.bot_name or "citebot",
        )
    else:
        log.info("review channel: #%s (%s)", info.get("name", "?"), channel_id)
    return channel_id


async def _channel_info(slack: AsyncWebClient, channel_id: str) -> dict:
    try:
        reply = await call(slack.conversations_info(channel=channel_id), "conversations.info")
    except SlackFailed as exc:
        if exc.code == "channel_not_found":
            raise StartupError(
                f"CITEBOT_REVIEW_CHANNEL: no channel {channel_id} that the bot can see"
                " (a private channel must invite the bot first)"
            ) from exc
        raise StartupError(f"CITEBOT_REVIEW_CHANNEL: cannot look up {channel_id}: {_explained(exc)}") from exc
    except SlackError as exc:
        raise StartupError(f"CITEBOT_REVIEW_CHANNEL: cannot look up {channel_id}: {_explained(exc)}") from exc
    return dict(reply["channel"])


async def _channel_by_name(slack: AsyncWebClient, name: str) -> dict:
    cursor = None
    for _ in range(LIST_MAX_PAGES):
        try:
            reply = await call(
                slack.conversations_list(
                    types="public_channel,private_channel", exclude_archived=True, limit=LIST_PAGE_SIZE, cursor=cursor
                ),
                "conversations.list",
            )
        except SlackError as exc:
            raise StartupError(
                f"CITEBOT_REVIEW_CHANNEL: cannot look up #{name} ({_explained(exc)}); give the channel's ID (C…) instead"
            ) from exc
        for channel in reply.get("channels") or []:
            if channel.get("name") == name:
                return dict(channel)
        cursor = (reply.get("response_metadata") or {}).get("next_cursor")
        if not cursor:
            break
    raise StartupError(
        f"CITEBOT_REVIEW_CHANNEL: no channel named #{name} that the bot can see"
        " (a private channel must invite the bot first); or give the channel's ID (C…)"
    )


def _explained(exc: SlackError) -> str:
    hint = _AUTH_HINTS.get(exc.code)
    return f"{exc.code}: {hint}" if hint else str(exc)
