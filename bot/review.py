"""Rejected drafts and 👎 feedback go to reviewers; their decision goes back to the asker.

A review record lives in Redis (bot.records); the card in the review channel
carries only its id. The web process checks who clicked (the review channel,
the optional reviewer allowlist) and that the click is the first; the worker
then carries the decision out here: the answer into the asker's original
thread, marked as reviewed, and the card updated with who decided and when.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.grounding.answer import render_citations_text, render_claims_text
from bot.grounding.lenient_json import parse_lenient_json
from bot.messages import Key, message
from bot.models import Answer, Claim, Evidence, Outcome, Question
from bot.queue import Job, PostClaim, PostLedger
from bot.records import AnswerRecord, Records, ReviewRecord, ReviewStatus
from bot.slack import render
from bot.slack.calls import call
from kb_index import ChunkResult

log = logging.getLogger(__name__)

DECISIONS = {"approve": ReviewStatus.APPROVED, "answer": ReviewStatus.ANSWERED, "dismiss": ReviewStatus.DISMISSED}


def review_id_for(question_id: str, kind: str = "uncertain") -> str:
    """Deterministic, so a redelivered job finds the review it already opened."""
    return hashlib.sha256(f"{kind}\x00{question_id}".encode()).hexdigest()[:16]


@dataclass
class ReviewDesk:
    settings: Settings
    slack: AsyncWebClient
    records: Records
    ledger: PostLedger

    # ------------------------------------------------------------ opening

    async def open_review(self, question: Question, answer: Answer) -> ReviewRecord:
        """The uncertain answer's draft becomes a review card in the review channel."""
        record = await self.records.review(review_id_for(question.id)) or ReviewRecord(
            review_id=review_id_for(question.id),
            question_id=question.id,
            question=question.text,
            language=question.language,
            channel=question.channel or "",
            thread_ts=question.thread_ts or (None if question.is_dm else question.ts),
            is_dm=question.is_dm,
            asker=None if question.is_dm else question.user,
            draft=answer.draft or "",
            violations=answer.violations,
            sources=answer.context,
        )
        await self.records.save_review(record)
        await self._post_card(record)
        return record

    async def feedback(self, job: Job) -> None:
        """A 👎 with a reason: reviewers see the answer, the reason, and can post a correction."""
        answer = await self.records.answer(job.payload["answer_id"])
        if answer is None:
            log.warning("feedback for unknown answer %s dropped", job.payload["answer_id"])
            return
        rid = review_id_for(f"{answer.answer_id}\x00{job.payload['user']}", kind="feedback")
        record = await self.records.review(rid) or ReviewRecord(
            review_id=rid,
            question_id=answer.question_id,
            question=answer.question,
            language=answer.language,
            channel=answer.channel,
            thread_ts=answer.thread_ts,
            is_dm=answer.is_dm,
            asker=None if answer.is_dm else job.payload["user"],
            draft=answer.text,
            sources=answer.sources,
            kind="feedback",
            feedback_reason=job.payload.get("reason") or "",
        )
        await self.records.save_review(record)
        await self._post_card(record)

    async def _post_card(self, record: ReviewRecord) -> None:
        channel = self.settings.review_channel
        if not channel:
            log.warning("review %s recorded, but CITEBOT_REVIEW_CHANNEL is not set: no card posted", record.review_id)
            return
        key = f"review-card:{record.review_id}"
        claim = await self.ledger.claim_post(key)
        if claim is PostClaim.POSTED or (claim is PostClaim.IN_DOUBT and record.card_ts):
            return  # posted before this run, or posted and saved just before a crash
        response = await call(self.slack.chat_postMessage(channel=channel, **render.review_card(record)), "post a review card")
        await self.ledger.record_posted(key, response["channel"], response["ts"])
        record.card_channel, record.card_ts = response["channel"], response["ts"]
        await self.records.save_review(record)

    # ------------------------------------------------------------ deciding

    async def decide(self, job: Job) -> None:
        review_id, decision, reviewer = job.payload["review_id"], job.payload["decision"], job.payload["reviewer"]
        record = await self.records.review(review_id)
        if record is None or record.status is not ReviewStatus.OPEN:
            return  # expired, or decided by an earlier run of this job
        status = DECISIONS[decision]
        text = job.payload.get("text") or ""
        answer = self._reviewed_answer(record, status, text)
        key = f"review:{review_id}"
        claim = await self.ledger.claim_post(key)
        if claim is not PostClaim.POSTED:
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
                    sources=answer.sources,
                    text=answer.answer,
                )
            )
            msg = (
                render.answer_message(answer, language=record.language, ref=ref, reviewed_by=reviewer)
                if answer.outcome is Outcome.ANSWERED
                else {"text": answer.answer}
            )
            response = await call(
                self.slack.chat_postMessage(channel=record.channel, thread_ts=record.thread_ts, **msg),
                "post the reviewed answer",
            )
            await self.ledger.record_posted(key, response["channel"], response["ts"])

        record.status, record.decided_by, record.decided_at = status, reviewer, time.time()
        record.final_answer = answer.answer if status is not ReviewStatus.DISMISSED else None
        if record.card_channel and record.card_ts:
            card = render.review_card_decided(record, status, reviewer, record.decided_at, record.final_answer)
            await call(self.slack.chat_update(channel=record.card_channel, ts=record.card_ts, **card), "update the review card")
        await self.records.save_review(record)
        log.info("review %s %s by %s", review_id, status, reviewer)

    def _reviewed_answer(self, record: ReviewRecord, status: ReviewStatus, text: str) -> Answer:
        base = {"question": record.question, "verified": True, "refused": False}
        if status is ReviewStatus.DISMISSED:
            note = message(Key.REVIEW_DISMISSED, record.language)
            return Answer(answer=note, outcome=Outcome.REFUSED, **base)
        if status is ReviewStatus.ANSWERED:
            return Answer(answer=text, outcome=Outcome.ANSWERED, **base)
        body, sources, citations = approved_draft(record)
        return Answer(answer=body, sources=sources, citations=citations, outcome=Outcome.ANSWERED, **base)


def approved_draft(record: ReviewRecord):
    """The rejected draft as a reviewer approved it: footnotes from the sources it was written from."""
    evidence = [
        Evidence(
            block=i,
            pointer_id=f"E{i}",
            evidence_id=s.content_hash or f"{s.id}:{i}",
            chunk=ChunkResult(
                chunk_id=f"{s.id}#{i}", entry_id=s.id, section=s.section, text=s.passage, title=s.title,
                stand=s.stand, url=s.url, collection=s.collection, content_hash=s.content_hash,
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
