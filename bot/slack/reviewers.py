"""Who is a reviewer, and which clicks on a review count: one rule for the Home tab and the buttons.

CITEBOT_REVIEWERS is the one list. Without it nobody is a reviewer: membership
of the review channel is not enough, because whoever can read a card (a guest,
someone added for another reason, a channel shared with another workspace) is
not thereby trusted to post an answer in the knowledge base's name.
The web process checks every click and every submitted answer against it,
so a payload with a review's id from anyone else (a forged one) decides nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.config import Settings

log = logging.getLogger(__name__)


def is_reviewer(settings: Settings, user: str | None) -> bool:
    return bool(user) and user in settings.reviewers


def click_channel(body: dict[str, Any]) -> str | None:
    return (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")


def may_triage(settings: Settings, body: dict[str, Any]) -> bool:
    """A review button counts when a reviewer clicked it on a card in the review channel."""
    user = (body.get("user") or {}).get("id")
    where = click_channel(body)
    if not is_reviewer(settings, user):
        log.warning("review click by %s in %s refused: not in CITEBOT_REVIEWERS", user, where)
        return False
    if where != settings.review_channel:
        log.warning("review click by %s in %s refused: not the review channel", user, where)
        return False
    return True


def missing_reviewers(settings: Settings) -> str | None:
    """What `serve` logs and `citebot doctor` warns about: cards nobody may decide."""
    if settings.review_channel and not settings.reviewers:
        return ("CITEBOT_REVIEWERS is empty: review cards are posted, but nobody may decide them;"
                " list the reviewers' user IDs (U…)")
    return None
