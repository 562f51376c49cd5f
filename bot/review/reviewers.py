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


def from_home_tab(body: dict[str, Any]) -> bool:
    """A click on the Home tab: Slack sends the view it was in, and no channel."""
    view = body.get("view")
    return isinstance(view, dict) and view.get("type") == "home"


def click_channel(body: dict[str, Any]) -> str | None:
    return (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")


def may_triage(settings: Settings, body: dict[str, Any]) -> bool:
    """A review button counts when a reviewer clicked it on a card in the review channel,
    or on their Home tab, which offers the buttons of a review whose card Slack refused."""
    user = (body.get("user") or {}).get("id")
    home = from_home_tab(body)
    where = "the Home tab" if home else click_channel(body)
    if not is_reviewer(settings, user):
        log.warning("review click by %s in %s refused: not in CITEBOT_REVIEWERS", user, where)
        return False
    if not home and where != settings.review_channel:
        log.warning("review click by %s in %s refused: not the review channel", user, where)
        return False
    return True


def missing_reviewers(settings: Settings) -> str | None:
    """What `serve` logs and `citebot doctor` warns about: cards nobody may decide."""
    if settings.review_channel and not settings.reviewers:
        return ("CITEBOT_REVIEWERS is empty: review cards are posted, but nobody may decide them;"
                " list the reviewers' user IDs (U…)")
    return None
