"""Links to messages, built from the workspace's address instead of asked for one by one.

chat.getPermalink costs a Web API call per message, and the Home tab lists up
to a hundred reviews each time it is opened. Slack's permalinks have a fixed
form, `https://<domain>.slack.com/archives/<channel>/p<ts without its dot>`,
and the domain is the `url` auth.test returns, which does not change while a
process runs: so it is asked for once and kept. A top-level message (a review
card, a post in a channel) needs nothing more; a thread reply would also need
`?thread_ts=…&cid=…`, and no link built here points at one.
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import SlackError, call

log = logging.getLogger(__name__)


def message_link(workspace_url: str, channel: str, ts: str) -> str:
    """The permalink of the top-level message `ts` in `channel`, as chat.getPermalink gives it."""
    return f"{workspace_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"


class Workspace:
    """The workspace's address (`https://acme.slack.com/`), from one auth.test per process."""

    def __init__(self, slack: AsyncWebClient, url: str | None = None):
        self._slack = slack
        self._url = url
        self._lock = asyncio.Lock()

    async def url(self) -> str | None:
        """The address, or None while Slack cannot say (asked again next time: links are a nicety)."""
        if self._url is not None:
            return self._url
        async with self._lock:  # many Home tabs opened at once ask Slack once
            if self._url is None:
                try:
                    reply = await call(self._slack.auth_test(), "auth.test for the workspace's address")
                except SlackError as exc:
                    log.warning("no links to messages for now: %s", exc)
                    return None
                self._url = str(reply.get("url") or "") or None
        return self._url
