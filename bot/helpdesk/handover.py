"""The hand-over to people: "Still need help?" under a reply, its click, and the worker's part.

Where the channel's policy (or, in a DM and the assistant panel, the `dm`
policy) names `escalate_to`, every reply to a question there (the answer, the
uncertain message, the refusal) carries the button; its value is the question
id. The click is taken in the web process: only the asker's click counts, the
first one in the thread claims the hand-over in Redis (bot.store.escalations),
and a `handover` job is queued; a second click, on any reply's button in that
thread, finds the claim and does nothing.

The worker then, once per question through the post ledger:
- in a channel: posts in the asker's thread one message that mentions the
  people (`<!subteam^S…>`, `<@U…>`) and tells the asker who was asked, and puts
  HANDOVER_REACTION on the question;
- in a DM or the panel, whose thread the people are not in: posts the request
  with the question in the review channel (where a DM's question may be shown,
  DESIGN 3.5) and tells the asker in their thread who was asked;
- completes the record (who, where), which `citebot review list`, `citebot
  audit show` and `citebot review gaps` read, and links the thread people will
  answer in to the question (bot.helpdesk.learning).
A hand-over Slack refuses for good is released, so the asker can click again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.models.blocks import ActionsBlock
from slack_sdk.web.async_client import AsyncWebClient

from bot.i18n import Key, message
from bot.jobs.job import HandoverPayload, Job
from bot.slack.blockkit import MAX_MESSAGE_BLOCKS, button, checked_value, section, to_message
from bot.slack.calls import SlackFailed, best_effort
from bot.slack.mrkdwn import clip_escaped, mention
from bot.slack.posting import Poster
from bot.store.escalations import HANDED_OVER, Escalation, Escalations
from bot.store.ledger import PostLedger

log = logging.getLogger(__name__)

ACTION_HANDOVER = "citebot_handover"
HANDOVER_REACTION = "sos"
QUESTION_CHARS = 1500


def people(ids: list[str] | tuple[str, ...]) -> str:
    """`escalate_to` as Slack mentions: a user group as <!subteam^S…>, a user as <@U…>."""
    return ", ".join(f"<!subteam^{i}>" if i.startswith("S") else mention(i) for i in ids)


def with_handover(msg: dict[str, Any], *, question_id: str, language: str) -> dict[str, Any]:
    """`msg` (any reply to a question) with the "Still need help?" button beside its other buttons."""
    still = button(message(Key.STILL_NEED_HELP, language), ACTION_HANDOVER, checked_value(question_id)).to_dict()
    blocks = [dict(b) for b in msg.get("blocks") or []]
    if blocks and blocks[-1].get("type") == "actions":
        blocks[-1]["elements"] = [*blocks[-1]["elements"], still]
    elif len(blocks) < MAX_MESSAGE_BLOCKS:
        blocks.append(ActionsBlock(elements=[still]).to_dict())
    return {**msg, "blocks": blocks}


def handover_key(question_id: str) -> str:
    """The post ledger's key of the message that asks the people."""
    return f"handover:{question_id}"


def told_key(question_id: str) -> str:
    """The post ledger's key of the note to a DM's asker."""
    return f"handover-told:{question_id}"


def thread_message(escalation: Escalation) -> dict[str, Any]:
    text = message(Key.HANDED_OVER, escalation.language, asker=mention(escalation.asker or escalation.requested_by),
                   people=people(escalation.escalate_to))
    return to_message(text, [section(text)])


def review_channel_message(escalation: Escalation) -> dict[str, Any]:
    head = message(Key.HANDOVER_REQUEST, escalation.language, people=people(escalation.escalate_to),
                   asker=mention(escalation.asker or escalation.requested_by))
    quoted = "\n".join(f"> {line}" for line in clip_escaped(escalation.question, QUESTION_CHARS).splitlines())
    return to_message(f"{head}\n{quoted}", [section(head), section(quoted or ">")])


def dm_note(escalation: Escalation) -> dict[str, Any]:
    text = message(Key.HANDED_OVER_DM, escalation.language, people=people(escalation.escalate_to))
    return to_message(text, [section(text)])


@dataclass
class Handover:
    """The worker's part of a hand-over (the `handover` job)."""

    slack: AsyncWebClient
    ledger: PostLedger
    escalations: Escalations
    review_channel: str | None
    poster: Poster = field(init=False)

    def __post_init__(self) -> None:
        self.poster = Poster(self.slack, self.ledger)

    async def run(self, job: Job) -> None:
        question_id = job.read(HandoverPayload).question_id
        escalation = await self.escalations.get(question_id)
        if escalation is None:
            log.warning("hand-over of %s: no record (released, or expired)", question_id)
            return
        if escalation.is_dm:
            where, thread = self.review_channel, None
            if not where:
                log.error("hand-over of %s: a DM's question goes to the review channel, and "
                          "CITEBOT_REVIEW_CHANNEL is not set", question_id)
                await self.escalations.release(question_id)
                return
            msg = review_channel_message(escalation)
        else:
            where, thread, msg = escalation.channel, escalation.thread_ts, thread_message(escalation)
        key = handover_key(question_id)
        if await self.poster.claim_unless_posted(key, where, thread):
            try:
                await self.poster.post_and_record(key, where, thread, msg, what="hand the question over")
            except SlackFailed as exc:
                log.error("hand-over of %s not posted: Slack said %s; the asker may click again", question_id, exc.code)
                await self.escalations.release(question_id)
                return
        posted = await self.poster.where_posted(key)
        if escalation.is_dm:
            await self._tell_dm_asker(escalation)
        elif escalation.question_ts:
            await best_effort(self.slack.reactions_add(channel=escalation.channel, timestamp=escalation.question_ts,
                                                       name=HANDOVER_REACTION))
        escalation.status = HANDED_OVER
        if posted is not None:
            escalation.handover_channel, escalation.handover_ts = posted.channel, posted.ts
        await self.escalations.save(escalation)
        # Where people answer: the asker's thread, or for a DM the request's thread in the review channel.
        if escalation.is_dm and posted is not None:
            await self.escalations.link_thread(posted.channel, posted.ts, question_id)
        elif not escalation.is_dm and escalation.thread_ts:
            await self.escalations.link_thread(escalation.channel, escalation.thread_ts, question_id)
        log.info("question %s handed over to %s", question_id, ", ".join(escalation.escalate_to))

    async def failed(self, job: Job) -> None:
        """The hand-over's last try failed (Slack stayed down): released, unless it was made, so the asker
        can click again."""
        question_id = job.read(HandoverPayload).question_id
        escalation = await self.escalations.get(question_id)
        if escalation is not None and escalation.status != HANDED_OVER and \
                await self.poster.where_posted(handover_key(question_id)) is None:
            await self.escalations.release(question_id)

    async def _tell_dm_asker(self, escalation: Escalation) -> None:
        key = told_key(escalation.question_id)
        if await self.poster.claim_unless_posted(key, escalation.channel, escalation.thread_ts):
            await self.poster.post_and_record(key, escalation.channel, escalation.thread_ts, dm_note(escalation),
                                              what="tell the asker who was asked")
