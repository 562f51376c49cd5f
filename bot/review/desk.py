"""Rejected drafts and 👎 feedback go to reviewers; their decision goes back to the asker.

A review record lives in Redis (bot.store.records); the card in the review channel
carries only its id. The web process checks who clicked (CITEBOT_REVIEWERS, and
where: bot.review.reviewers) and that the click is the first; the worker
then carries the decision out here: the answer into the asker's original
thread, marked as reviewed, and the card updated with who decided and when.

Slack trouble never loses a review. A card Slack refuses (the bot is not in
the review channel) leaves the review open with the reason on its record,
for `citebot review list` and the reviewers' Home tab, where it can be decided
instead; the asker still gets their reply. A decision whose
post Slack refuses is undone: the click is released, so a later one works,
and the reviewer is told what failed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from slack_sdk.web.async_client import AsyncWebClient

from bot.access.gate import AccessGate
from bot.answer.assemble import render_citations_text, render_claims_text, truncated_note
from bot.answer.verify.lenient_json import parse_lenient_json
from bot.config import Settings
from bot.i18n import Key, message
from bot.jobs.job import FeedbackPayload, Job, ReviewDecisionPayload
from bot.models import Answer, Claim, Evidence, Outcome, SlackQuestion, Source
from bot.review.drafts import save_draft
from bot.slack.calls import SlackError, SlackFailed, SlackRateLimited, call
from bot.slack.mrkdwn import escape
from bot.slack.posting import IN_DOUBT_WINDOW_S, Poster
from bot.slack.replies import answer_message
from bot.slack.response_url import claim_ephemeral
from bot.slack.review_card import review_card, review_card_decided
from bot.slack.workspace import Workspace
from bot.store.ledger import PostLedger
from bot.store.records import EPHEMERAL_TS, AnswerRecord, Records, ReviewRecord, ReviewStatus, shown_collections
from kb_index import ChunkResult

log = logging.getLogger(__name__)

DECISIONS = {"approve": ReviewStatus.APPROVED, "answer": ReviewStatus.ANSWERED, "dismiss": ReviewStatus.DISMISSED}


def review_id_for(question_id: str, kind: str = "uncertain") -> str:
    """Deterministic, so a redelivered job finds the review it already opened."""
    return hashlib.sha256(f"{kind}\x00{question_id}".encode()).hexdigest()[:16]


# A reviewer's Home tab published again, by their user id.
HomeRefresh = Callable[[str], Awaitable[None]]


class ReviewKind(Protocol):
    """A kind of review whose decision is not the desk's own: the card, the buttons and the claim-once click are
    the same, what a decision does is the kind's (bot.helpdesk.learning: a person's answer saved as a KB draft)."""

    async def decide(self, record: ReviewRecord, payload: ReviewDecisionPayload) -> None: ...


@dataclass
class ReviewDesk:
    settings: Settings
    slack: AsyncWebClient
    records: Records
    ledger: PostLedger
    # Who may read what (bot.access): a card shows its draft only where every review channel member may read it.
    access: AccessGate | None = None
    # Publishes a reviewer's Home tab again (bot.home.publish, given by the wiring); None: not refreshed.
    refresh_home: HomeRefresh | None = None
    # The kinds of review the desk does not decide itself, by ReviewRecord.kind (the wiring adds the hand-over's).
    kinds: dict[str, ReviewKind] = field(default_factory=dict)
    poster: Poster = field(init=False)
    workspace: Workspace = field(init=False)

    def __post_init__(self) -> None:
        self.poster = Poster(self.slack, self.ledger)
        self.workspace = Workspace(self.slack)

    # ------------------------------------------------------------ opening

    async def open_review(self, question: SlackQuestion, answer: Answer, *, private_to: str | None = None) -> ReviewRecord:
        """The uncertain answer's draft becomes a review card in the review channel.
        `private_to`: the asker of a question answered to them alone, who alone gets the decision."""
        record = await self.records.review(review_id_for(question.id)) or uncertain_review(question, answer, private_to)
        record.restricted = await self.restricted(record)
        await self.records.save_review(record)
        await self._post_card(record)
        return record

    async def _open_where_posted(self, record: ReviewRecord, answer: Answer) -> bool:
        """Whether everyone who would read the decision may read its sources now: everyone in the asker's
        channel; for a DM's or a private question, the asker, resolved again (they may have left a group)."""
        cited = {s.collection for s in answer.sources}
        if answer.outcome is Outcome.ANSWERED and not answer.sources:
            # A reviewer's written answer cites nothing, but was written from the review's draft and sources.
            cited = shown_collections(record)
        if not cited or self.access is None:
            return True
        if record.is_dm or record.private_to is not None:
            reader = record.reader or record.private_to
            # Who asked a DM's question is unknown (a review opened before it was kept): nothing is posted on a guess.
            return reader is not None and cited <= await self.access.user_reads(reader)
        return cited <= await self.access.channel_reads(record.channel)

    async def restricted(self, record: ReviewRecord) -> bool:
        """Whether some member of the review channel may not read a collection the card would show."""
        shown = shown_collections(record)
        if not shown or self.access is None or not self.settings.review_channel:
            return False
        return not shown <= await self.access.channel_reads(self.settings.review_channel)

    async def feedback(self, job: Job) -> None:
        """A 👎 with a reason: reviewers see the answer, the reason, and can post a correction."""
        feedback = job.read(FeedbackPayload)
        answer = await self.records.answer(feedback.answer_id)
        if answer is None:
            log.warning("feedback for unknown answer %s dropped", feedback.answer_id)
            return
        rid = review_id_for(f"{answer.answer_id}\x00{feedback.user}", kind="feedback")
        record = await self.records.review(rid) or feedback_review(rid, answer, feedback)
        record.restricted = await self.restricted(record)
        await self.records.save_review(record)
        await self._post_card(record)

    async def _post_card(self, record: ReviewRecord) -> None:
        channel = self.settings.review_channel
        if not channel:
            log.warning("review %s recorded, but CITEBOT_REVIEW_CHANNEL is not set: no card posted", record.review_id)
            await self._card_missing(record, "CITEBOT_REVIEW_CHANNEL not set")
            return
        key = f"review-card:{record.review_id}"
        if not await self.poster.claim_unless_posted(key, channel, None):
            # Posted before this run (maybe by a run that died before saving where).
            if not record.card_ts and (posted := await self.poster.where_posted(key)) is not None:
                record.card_channel, record.card_ts, record.card_error = posted.channel, posted.ts, None
                await self.records.save_review(record)
            return
        try:
            response, _ = await self.poster.post_and_record(key, channel, None, review_card(record), what="post a review card")
        except SlackError as exc:
            await self._card_missing(record, exc.code)
            if isinstance(exc, SlackFailed):
                # Retrying will not help (the bot is not in the review channel):
                # the review stays listed with the reason, the job goes on.
                log.error("review %s recorded, but its card was not posted: Slack said %s", record.review_id, exc.code)
                return
            raise
        record.card_channel, record.card_ts, record.card_error = response["channel"], response["ts"], None
        await self.records.save_review(record)

    async def _card_missing(self, record: ReviewRecord, reason: str) -> None:
        record.card_error = reason
        await self.records.save_review(record)

    # ------------------------------------------------------------ deciding

    async def decide(self, job: Job) -> None:
        payload = job.read(ReviewDecisionPayload)
        review_id, decision, reviewer = payload.review_id, payload.decision, payload.reviewer
        record = await self.records.review(review_id)
        if record is None or record.status is not ReviewStatus.OPEN:
            return  # expired, or decided by an earlier run of this job
        if (kind := self.kinds.get(record.kind)) is not None:
            # A review of another kind decides itself (the hand-over's: a person answered the asker already).
            await kind.decide(record, payload)
            return
        status = DECISIONS[decision]
        text = payload.text
        answer = reviewed_answer(record, status, text)
        if not await self._open_where_posted(record, answer):
            # Approved text from collections someone in the asker's channel may not read (it changed since, or
            # the draft came from a private answer): not posted; the reviewer is told.
            private = record.is_dm or record.private_to is not None
            await self._undo_decision(record, reviewer, message(Key.NOT_OPEN_TO_ASKER if private
                                                                else Key.NOT_OPEN_TO_CHANNEL, record.language))
            await self.refresh_home_of(record, reviewer)
            return
        key = f"review:{review_id}"
        if record.private_to is not None:
            claimed = await claim_ephemeral(self.ledger, key)
        else:
            claimed = await self.poster.claim_unless_posted(key, record.channel, record.thread_ts)
        if claimed:
            ref = f"{record.question_id}#reviewed"
            await self.records.save_answer(
                AnswerRecord(
                    answer_id=ref,
                    question_id=record.question_id,
                    question=record.question,
                    language=record.language,
                    channel=record.channel,
                    thread_ts=record.thread_ts,
                    is_dm=record.is_dm,
                    asker=record.asker,
                    private_to=record.private_to,
                    sources=answer.sources,
                    text=answer.text,
                )
            )
            msg = (
                answer_message(answer, language=record.language, ref=ref, reviewed_by=reviewer)
                if answer.outcome is Outcome.ANSWERED
                else {"text": answer.text}
            )
            try:
                if record.private_to is not None:
                    await self._tell_privately(key, record, record.private_to, msg)
                else:
                    await self.poster.post_and_record(key, record.channel, record.thread_ts, msg, what="post the reviewed answer")
            except SlackFailed as exc:
                await self._undo_decision(record, reviewer, exc.code)
                await self.refresh_home_of(record, reviewer)
                return

        if payload.save_draft and status is ReviewStatus.ANSWERED:
            self.save_draft(record, text, reviewer)
        record.status, record.decided_by, record.decided_at = status, reviewer, time.time()
        record.final_answer = answer.text if status is not ReviewStatus.DISMISSED else None
        if record.card_channel and record.card_ts:
            card = review_card_decided(record)
            try:
                await call(self.slack.chat_update(channel=record.card_channel, ts=record.card_ts, **card), "update the review card")
            except SlackFailed as exc:
                # The asker has the answer; a card that still shows buttons is
                # harmless (a click on a decided review does nothing).
                log.warning("review %s decided, but its card was not updated: Slack said %s", review_id, exc.code)
        await self.records.save_review(record)
        log.info("review %s %s by %s", review_id, status, reviewer)
        await self.refresh_home_of(record, reviewer)

    async def refresh_home_of(self, record: ReviewRecord, reviewer: str) -> None:
        """A review without a card can only have been decided on the reviewer's Home tab:
        published again, so the tab they are looking at shows it gone, or still open when
        the decision was undone. The decision stands either way: a tab Slack will not
        take now is rebuilt when it is next opened."""
        if (record.card_channel and record.card_ts and not record.restricted) or self.refresh_home is None:
            return
        try:
            await self.refresh_home(reviewer)
        except SlackError as exc:
            log.warning("review %s: the Home tab of %s was not refreshed: %s", record.review_id, reviewer, exc)

    def save_draft(self, record: ReviewRecord, text: str, reviewer: str) -> None:
        """The written answer into the drafts folder. A folder the worker may not
        write (a read-only KB mount) costs the draft, not the decision: the asker
        has their answer, and the log says where the draft should have gone."""
        folder = self.settings.drafts_folder
        try:
            path, written = save_draft(folder, record, text, reviewer)
        except OSError as exc:
            log.error("review %s: draft KB entry not saved in %s: %s (set CITEBOT_DRAFTS_DIR to a writable folder)",
                      record.review_id, folder, exc.strerror or exc)
            return
        log.info("review %s: draft KB entry %s %s", record.review_id, path, "saved" if written else "already saved")

    async def _tell_privately(self, key: str, record: ReviewRecord, user: str, msg: dict) -> None:
        """The decision on a question answered to its asker alone, to them alone, under the post's key.

        An ephemeral message cannot be looked up afterwards: a try whose outcome is
        unknown is taken as delivered, as bot.slack.response_url does.
        """
        await self.ledger.mark_attempt(key, time.time() + IN_DOUBT_WINDOW_S)
        try:
            await call(self.slack.chat_postEphemeral(channel=record.channel, user=user, **msg), "tell the asker privately")
        except (SlackFailed, SlackRateLimited):
            await self.ledger.release_post(key)
            raise
        await self.ledger.record_posted(key, record.channel, EPHEMERAL_TS)

    async def decision_failed(self, job: Job, error: BaseException) -> None:
        """The decision's last try failed (Slack stayed down): undone, so the reviewer can click again."""
        payload = job.read(ReviewDecisionPayload)
        record = await self.records.review(payload.review_id)
        if record is not None and record.status is ReviewStatus.OPEN:
            await self._undo_decision(record, payload.reviewer, getattr(error, "code", None) or type(error).__name__)

    async def _undo_decision(self, record: ReviewRecord, reviewer: str, reason: str) -> None:
        """The decision could not be posted: the click that claimed the review is
        released (else the review stays claimed for its whole life and every later
        click does nothing), and the reviewer hears why, where they clicked."""
        await self.records.release_decision(record.review_id)
        log.error("review %s: the decision of %s was not posted (%s); the review is open again",
                  record.review_id, reviewer, reason)
        if not (record.card_channel and record.card_ts):
            # Decided on the Home tab: the reason goes there, with the buttons to try again.
            record.decision_error = reason
            await self.records.save_review(record)
            return
        channel = record.card_channel
        text = message(Key.DECISION_FAILED, record.language, reason=f"`{escape(reason)}`")
        try:
            await call(self.slack.chat_postEphemeral(channel=channel, user=reviewer, text=text), "tell the reviewer")
        except SlackError as exc:
            log.warning("review %s: could not tell %s that the decision failed: %s", record.review_id, reviewer, exc)


def uncertain_review(question: SlackQuestion, answer: Answer, private_to: str | None) -> ReviewRecord:
    """The review of a draft that failed its checks. `private_to`: the asker of a question answered to them
    alone, who alone gets the decision."""
    return ReviewRecord(
        review_id=review_id_for(question.id), question_id=question.id, question=question.text,
        language=question.language, channel=question.channel, thread_ts=question.reply_thread_ts,
        is_dm=question.is_dm, asker=None if question.is_dm else question.user, private_to=private_to,
        reader=question.user if question.is_dm or private_to is not None else None,
        draft=answer.draft or "", violations=answer.violations, tries=[a.summary() for a in answer.attempts],
        sources=answer.context,
    )


def feedback_review(review_id: str, answer: AnswerRecord, feedback: FeedbackPayload) -> ReviewRecord:
    """The review of a posted answer someone flagged with a reason."""
    return ReviewRecord(
        review_id=review_id, question_id=answer.question_id, question=answer.question, language=answer.language,
        channel=answer.channel, thread_ts=answer.thread_ts, is_dm=answer.is_dm,
        # A DM's answer is seen only by its asker: neither name goes on the card.
        asker=None if answer.is_dm else answer.asker, flagged_by=None if answer.is_dm else feedback.user,
        private_to=answer.private_to, reader=answer.asker if answer.is_dm or answer.private_to is not None else None,
        draft=answer.text, sources=answer.sources, kind="feedback", feedback_reason=feedback.reason,
    )


def reviewed_answer(record: ReviewRecord, status: ReviewStatus, text: str) -> Answer:
    """What a decision posts: the approved draft, the written answer, or the dismissal's sentence."""
    outcome = Outcome.ANSWERED
    sources: list[Source] = []
    citations: list[str] = []
    notes: list[str] = []
    if status is ReviewStatus.DISMISSED:
        body = message(Key.REVIEW_DISMISSED, record.language)
        outcome = Outcome.REFUSED
    elif status is ReviewStatus.ANSWERED:
        body = text
    elif record.kind == "feedback":
        # The flagged answer was posted with its [n] markers and numbered
        # sources already: approving it reposts it as it was.
        body, notes = posted_notes(record.draft, record.language, len(record.question))
        sources = record.sources
        citations = list(dict.fromkeys(s.id for s in record.sources))
    else:
        body, sources, citations = approved_draft(record)
    return Answer(
        question=record.question, answer=body, notes=notes, verified=True, refused=False,
        sources=sources, citations=citations, outcome=outcome,
    )


def posted_notes(text: str, language: str, question_chars: int) -> tuple[str, list[str]]:
    """(body, notes) of an answer as it was posted and recorded (`AnswerRecord.text`).

    A record keeps the posted answer as one text, the format every running
    process reads; its notes are the bot's own sentences, so they are known
    exactly: the ones bot.answer.assemble adds, the question cut at its length.
    """
    known = {
        message(Key.PARTIAL, language),
        message(Key.NOT_COVERED, language),
        message(Key.NOT_JUDGED, language),
        *truncated_note(language, question_chars),
    }
    body, notes = text.rstrip(), list[str]()
    while True:
        head, sep, last = body.rpartition("\n\n")
        if not sep or last.strip() not in known:
            return body, notes
        notes.insert(0, last.strip())
        body = head.rstrip()


def approved_draft(record: ReviewRecord) -> tuple[str, list[Source], list[str]]:
    """The rejected draft as a reviewer approved it: footnotes from the sources it was written from."""
    evidence = [
        Evidence(
            block=i,
            pointer_id=f"E{i}",
            evidence_id=s.content_hash or f"{s.id}:{i}",
            chunk=ChunkResult(
                chunk_id=f"{s.id}#{i}", entry_id=s.id, section=s.section, text=s.passage, title=s.title,
                stand=s.stand, url=s.url, collection=s.collection, content_hash=s.content_hash, page=s.page,
            ),
        )
        for i, s in enumerate(record.sources, start=1)
    ]
    try:
        obj, _ = parse_lenient_json(record.draft)
        claims = [Claim(text=c["text"], evidence_ids=list(c.get("evidence_ids", [])), verified=True) for c in obj["claims"]]
    except (json.JSONDecodeError, KeyError, TypeError):
        return render_citations_text(record.draft, evidence)
    return render_claims_text(claims, evidence)
