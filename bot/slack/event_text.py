"""A Slack message's text as question text: storable, the bot's own mention out, others kept.

Event text is the user's, so it may hold anything JSON can: lone UTF-16
surrogates that no UTF-8 encoder takes are replaced first.

"@citebot what does <@U0HR42> need from me for parental leave?" asks about a
person; dropping that mention would leave "what does need from me". Only the
mention that addresses the bot is noise. Other mentions become "@U0HR42", the
way a person reading the question would say it, and no `<@…>` control
sequence travels into the prompt.
"""

from __future__ import annotations

import re

_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def question_text(text: str, bot_user_id: str | None) -> str:
    """`text` with the mentions of `bot_user_id` removed and others written as "@U…".

    Without a known bot user id nothing is removed: a stray "@U…" costs less
    than a person's name cut out of the question.
    """

    def replace(match: re.Match[str]) -> str:
        user = match.group(1)
        return " " if bot_user_id and user == bot_user_id else f"@{user}"

    return _MENTION.sub(replace, text)


def scrubbed(text: str) -> str:
    """Lone UTF-16 surrogates (a JSON "\\ud800" without its pair) as U+FFFD: they cannot
    be encoded as UTF-8, so Redis, JSON and Slack would all refuse the text."""
    return _SURROGATE.sub("\ufffd", text)
