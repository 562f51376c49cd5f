"""Learning from a hand-over: a person's answer in the thread becomes a review, and can become a KB draft.

When someone other than the asker replies in a handed-over thread (the
asker's thread in a channel; for a DM's question, the request's thread in the
review channel), the reply is kept on the hand-over's record and a review of
kind ESCALATION_KIND is opened once per question, its card in the review
channel: the question, the person's answer (later replies are added to it),
and the review card's own buttons, taken by the same listeners and the same
claim-once decision as every review (bot.inbound.listeners, bot.review.desk).
Only what they do differs, because the asker has the person's answer already:
nothing is posted into the asker's thread. Approve saves the person's answer
as a draft KB entry (bot.review.drafts `save_draft`, as a written review answer
is saved), Write answer saves the reviewer's edited version when the modal's
"Also save as a draft KB entry" box is ticked, Dismiss saves nothing; the card
then says who decided.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from bot.i18n import Key, message
from bot.jobs.job import HandoverReplyPayload, Job, ReviewDecisionPayload
from bot.review.desk import DECISIONS, ReviewDesk, review_id_for
from bot.slack.blockkit import context, headed_section, header, section, to_message
from bot.slack.calls import SlackError, SlackFailed, call
from bot.slack.mrkdwn import clip, clip_escaped, escape, mention, slack_date
from bot.slack.review_card import _asked_by, _quoted_sections, review_buttons
from bot.store.escalations import MAX_REPLIES, Escalation, Escalations, PersonReply
from bot.store.records import ReviewRecord, ReviewStatus

log = logging.getLogger(__name__)

ESCALATION_KIND = "escalation"
ANSWER_CHARS = 2800
QUESTION_CHARS = 1000


def handover_review_card(record: ReviewRecord, escalation: Escalation | None, *, decided: bool = False) -> dict[str, Any]:
    language = record.language
    asked_to = ", ".join(
        f"<!subteam^{i}>" if i.startswith("S") else mention(i) for i in (escalation.escalate_to if escalation else [])
    ) or "?"
    blocks = [
        header(message(Key.HANDOVER_REVIEW_HEADING, language)),
        context([" · ".join(p for p in (_asked_by(record, language), slack_date(record.created_at)) if p)]),
        headed_section(message(Key.QUESTION, language), clip_escaped(record.question, QUESTION_CHARS)),
        *(  # a person's answer about collections not every review channel member may read stays off the card
            [section(escape(message(Key.REVIEW_RESTRICTED, language)))] if record.restricted
            else _quoted_sections(message(Key.THEIR_ANSWER, language), record.draft, ANSWER_CHARS)
        ),
        context([message(Key.HANDOVER_REVIEW_NOTE, language, people=asked_to, helper=mention(record.flagged_by))]),
    ]
    fallback = escape(f"{message(Key.HANDOVER_REVIEW_HEADING, language)}: {clip(record.question, 200)}")
    if not decided:
        # A restricted card has no buttons (as the desk's): its reviewers decide on their Home tab.
        return to_message(fallback, blocks if record.restricted else [*blocks, review_buttons(record)])
    key = Key.HANDOVER_DISMISSED if record.status is ReviewStatus.DISMISSED else Key.HANDOVER_SAVED
    line = message(key, language, user=mention(record.decided_by), time=slack_date(record.decided_at) or "?")
    return to_message(f"{fallback}\n{line}", [*blocks, context([line])])


@dataclass
class Learning:
    """The hand-over's review kind (bot.review.desk ReviewKind): its cards, and what a decision on one does."""

    desk: ReviewDesk  # its records, poster, review channel, drafts folder
    escalations: Escalations

    async def person_answered(self, job: Job) -> None:
        """The `handover_reply` job: the reply kept, and the review opened (once) or added to."""
        reply = job.read(HandoverReplyPayload)
        escalation = await self.escalations.get(reply.question_id)
        if escalation is None:
            log.warning("reply in the hand-over of %s: no record (expired)", reply.question_id)
            return
        if all(r.ts != reply.ts for r in escalation.replies) and len(escalation.replies) < MAX_REPLIES:
            escalation.replies.append(PersonReply(user=reply.user, text=reply.text, ts=reply.ts))
            await self.escalations.save(escalation)
        records = self.desk.records
        review_id = review_id_for(reply.question_id, kind=ESCALATION_KIND)
        record = await records.review(review_id)
        answer = "\n\n".join(r.text.strip() for r in escalation.replies)
        if record is None:
            record = ReviewRecord(
                review_id=review_id, question_id=escalation.question_id, question=escalation.question,
                language=escalation.language, channel=escalation.channel, thread_ts=escalation.thread_ts,
                is_dm=escalation.is_dm, asker=None if escalation.is_dm else escalation.asker,
                flagged_by=reply.user, draft=answer, kind=ESCALATION_KIND, collections=list(escalation.collections),
            )
            record.restricted = await self.desk.restricted(record)
            await records.save_review(record)
        elif record.status is ReviewStatus.OPEN and record.draft != answer:
            record.draft = answer
            await records.save_review(record)
            await self._update_card(record, escalation)
        await self._post_card(record, escalation)

    async def _post_card(self, record: ReviewRecord, escalation: Escalation) -> None:
        """The card once per review, as bot.review.desk posts a review's card (same ledger key)."""
        channel = self.desk.settings.review_channel
        if not channel:
            log.warning("review %s recorded, but CITEBOT_REVIEW_CHANNEL is not set: no card posted", record.review_id)
            return
        key = f"review-card:{record.review_id}"
        poster = self.desk.poster
        if not await poster.claim_unless_posted(key, channel, None):
            return
        try:
            response, _ = await poster.post_and_record(key, channel, None, handover_review_card(record, escalation),
                                                       what="post a hand-over's review card")
        except SlackFailed as exc:
            record.card_error = exc.code
            await self.desk.records.save_review(record)
            log.error("review %s recorded, but its card was not posted: Slack said %s", record.review_id, exc.code)
            return
        record.card_channel, record.card_ts, record.card_error = response["channel"], response["ts"], None
        await self.desk.records.save_review(record)

    async def _update_card(self, record: ReviewRecord, escalation: Escalation | None, *, decided: bool = False) -> None:
        if not (record.card_channel and record.card_ts):
            return
        card = handover_review_card(record, escalation, decided=decided)
        try:
            await call(self.desk.slack.chat_update(channel=record.card_channel, ts=record.card_ts, **card),
                       "update a hand-over's review card")
        except SlackError as exc:
            log.warning("review %s: its card was not updated: %s", record.review_id, exc)


    async def decide(self, record: ReviewRecord, payload: ReviewDecisionPayload) -> None:
        """A reviewer's decision on a hand-over's review: a KB draft, or nothing; nothing is posted to the asker."""
        desk, status = self.desk, DECISIONS[payload.decision]
        text = payload.text.strip() or record.draft
        # Approve is the person's answer saved; a written answer is saved as its modal's box says, as for any review.
        if status is ReviewStatus.APPROVED or (status is ReviewStatus.ANSWERED and payload.save_draft):
            desk.save_draft(record, text, payload.reviewer)
        record.status, record.decided_by, record.decided_at = status, payload.reviewer, time.time()
        record.final_answer = text if status is not ReviewStatus.DISMISSED else None
        await self._update_card(record, await self.escalations.get(record.question_id), decided=True)
        await desk.records.save_review(record)
        log.info("hand-over review %s %s by %s", record.review_id, status, payload.reviewer)
        await desk.refresh_home_of(record, payload.reviewer)
