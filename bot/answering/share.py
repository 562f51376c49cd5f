""""Post in channel" under a /citebot answer only its asker saw: the stored answer, posted for everyone.

No model call: the answer record is posted as it was verified, once per answer (the post ledger's key
`share:<answer id>`), and only where every member of the channel may read its sources. A click that is refused
(not the asker, the answer gone or private, the channel not open to its sources) is told to the clicker alone,
and forgotten, so that a later click is a job of its own again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bot.access.gate import AccessGate
from bot.config import Settings
from bot.i18n import Key, message
from bot.jobs.job import Job, ShareAnswerPayload, share_dedupe_id
from bot.jobs.queue import shard_count
from bot.slack import replies
from bot.slack.calls import SlackFailed
from bot.slack.posting import Poster
from bot.slack.shared_copy import mark_posted, tell_not_posted, tell_refused
from bot.slack.workspace import Workspace
from bot.store.keys import dedupe_key
from bot.store.ledger import PostLedger
from bot.store.records import AnswerRecord, Records

log = logging.getLogger(__name__)


def share_key(answer_id: str) -> str:
    """The post ledger's key of an answer posted in its channel with "Post in channel"."""
    return f"share:{answer_id}"


@dataclass
class Shares:
    settings: Settings
    slack: AsyncWebClient
    records: Records
    ledger: PostLedger
    access: AccessGate | None = None
    poster: Poster = field(init=False)
    workspace: Workspace = field(init=False)

    def __post_init__(self) -> None:
        self.poster = Poster(self.slack, self.ledger)
        self.workspace = Workspace(self.slack)

    async def share(self, job: Job) -> None:
        """A /citebot answer posted for everyone: the stored record, no model call, once per answer."""
        payload = job.read(ShareAnswerPayload)
        record = await self.records.answer(payload.answer_id)
        # The button is only on the asker's own copy; a click that names an answer
        # that is gone, private, or someone else's is not ours to post.
        if record is None or record.message is None or record.is_dm or record.asker != payload.user:
            log.warning("post in channel of answer %s ignored: no such shareable answer of %s", payload.answer_id, payload.user)
            gone = record is None or record.message is None or record.is_dm
            await self._refuse_share(payload, record, Key.ANSWER_NOT_SHAREABLE if gone else Key.NOT_YOURS_TO_POST)
            return
        key = share_key(record.answer_id)
        cited = {s.collection for s in record.sources}
        if self.access is not None and cited and await self.poster.where_posted(key) is None \
                and not cited <= await self.access.channel_reads(record.channel):
            # Answered from what the asker alone may read: the channel gets it only if everyone in it may.
            log.warning("post in channel of answer %s refused: not everyone in %s may read %s",
                        record.answer_id, record.channel, ", ".join(sorted(cited)))
            await self._refuse_share(payload, record, Key.NOT_OPEN_TO_CHANNEL)
            return
        if await self.poster.claim_unless_posted(key, record.channel, None):
            msg = replies.shared_message(record.message, asker=record.asker, language=record.language)
            try:
                await self.poster.post_and_record(key, record.channel, None, msg, what="post the answer in the channel")
            except SlackFailed as exc:
                if payload.response_url:
                    await tell_not_posted(payload.response_url, record, exc.code)
                raise
        # Also when posted by an earlier try: that try may have died before the copy was replaced.
        if payload.response_url and (posted := await self.poster.where_posted(key)) is not None:
            await mark_posted(payload.response_url, record, posted, self.workspace)

    async def _refuse_share(self, payload: ShareAnswerPayload, record: AnswerRecord | None, reason: Key) -> None:
        """The clicker hears why, privately; their click is forgotten, so that a later one (once the channel's
        members changed, or the asker's own after someone else's) is a job of its own again."""
        language = record.language if record is not None else self.settings.language
        if payload.response_url and record is not None and not record.is_dm:
            await tell_refused(payload.response_url, record.channel, message(reason, language), language)
        dedupe = dedupe_key(share_dedupe_id(payload.answer_id, payload.user), shard_count(self.settings.redis))
        await self.records.redis.delete(dedupe)
