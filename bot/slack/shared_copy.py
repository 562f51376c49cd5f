"""After "Post in channel": the asker's ephemeral copy replaced by the answer and where it went.

The copy only its asker sees is the one with the button. Left as it was, it
keeps offering to post an answer that is in the channel already (a second
click posts nothing, the post ledger sees to that, but it looks as if it
might). Slack has no chat.update for an ephemeral message; the click's own
response_url can replace it (replace_original), which is what this does,
once the post is in the ledger: a copy that says "posted" is never shown
for a post that did not happen.
"""

from __future__ import annotations

import logging

from bot.i18n import Key, message
from bot.slack import replies
from bot.slack.calls import SlackError, SlackFailed
from bot.slack.mrkdwn import channel_link, escape
from bot.slack.response_url import replace_original, send
from bot.slack.workspace import Workspace, message_link
from bot.store.records import AnswerRecord, PostRecord

log = logging.getLogger(__name__)


async def mark_posted(response_url: str, record: AnswerRecord, posted: PostRecord, workspace: Workspace) -> None:
    """Replaces the asker's copy of `record` with the answer and a line linking the post.

    SlackUnavailable goes up (the job is tried again, and the ledger keeps the post
    single); SlackFailed (the URL used five times, or older than 30 minutes) leaves
    the copy as it is, which is harmless, and is logged."""
    if record.message is None:
        return
    base = await workspace.url()
    link = message_link(base, posted.channel, posted.ts) if base else None
    msg = replies.posted_copy(record.message, channel=posted.channel, link=link, language=record.language)
    try:
        await replace_original(response_url, msg, "mark the asker's copy as posted in the channel")
    except SlackFailed as exc:
        log.warning("answer %s is in the channel, but its asker's copy still shows the button: %s",
                    record.answer_id, exc)


async def tell_refused(response_url: str, channel: str, reason: str, language: str) -> None:
    """citebot would not post it (the clicker did not ask, or not everyone in the channel may read its sources):
    the clicker alone hears why, under their copy, which stays as it is. Best effort, like tell_not_posted."""
    text = message(Key.SHARE_REFUSED, language, channel=channel_link(channel), reason=reason)
    try:
        await send(response_url, {"response_type": "ephemeral", "replace_original": False, "text": text},
                   "tell the clicker why the answer was not posted")
    except SlackError as exc:
        log.warning("could not tell the clicker why an answer was not posted in %s: %s", channel, exc)


async def tell_not_posted(response_url: str, record: AnswerRecord, reason: str) -> None:
    """Slack refused the post (the bot is not in the channel): the asker hears why, under
    their copy, which stays as it is. Best effort: the job's failure is logged anyway."""
    text = message(Key.NOT_POSTED_IN_CHANNEL, record.language, channel=channel_link(record.channel),
                   reason=f"`{escape(reason)}`")
    try:
        await send(response_url, {"response_type": "ephemeral", "replace_original": False, "text": text},
                   "tell the asker the answer was not posted")
    except SlackError as exc:
        log.warning("could not tell the asker of answer %s that it was not posted: %s", record.answer_id, exc)
