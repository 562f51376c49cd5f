"""Publishing a user's Home tab: read what it shows, build the view, views.publish.

One function for both places a tab is published: the web process when the
user opens it (app_home_opened), and a worker after a reviewer decided a
review from it, so the tab they are looking at shows the decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.home import view as home
from bot.home.data import read_home
from bot.review.reviewers import is_reviewer
from bot.slack.calls import call
from bot.slack.workspace import Workspace

if TYPE_CHECKING:
    from bot.access.gate import AccessGate


async def publish_home(slack: AsyncWebClient, user: str, *, settings: Settings, redis: aioredis.Redis,
                       workspace: Workspace, access: AccessGate | None = None) -> None:
    # What a reviewer may read decides which restricted reviews and which gaps their tab shows.
    reads = await access.user_reads(user) if access is not None and is_reviewer(settings, user) else None
    data = await read_home(user, settings=settings, redis=redis, reads=reads)
    if data.reviews:
        data.workspace_url = await workspace.url()
    view = home.home_view(data, language=settings.language)
    await call(slack.views_publish(user_id=user, view=view), "publish the Home tab")
