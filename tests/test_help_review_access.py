"""A hand-over's review card (bot.helpdesk.learning) follows the desk's rule (docs/DESIGN.md, section 3.8): the
person's answer only where every member of the review channel may read the collections the question was about;
else the restricted form, without buttons, decided on the Home tab of a listed reviewer who may read them."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

from bot.helpdesk.learning import Learning, handover_review_card
from bot.i18n import Key, message
from bot.jobs.job import HandoverReplyPayload, Job
from bot.store.escalations import Escalation
from bot.store.records import ReviewRecord, shown_collections

SECRET = "Salaries are paid on the 25th."


class Desk:
    """What Learning uses of a ReviewDesk: its records, poster, settings, and whether a card is restricted."""

    def __init__(self, review_channel_reads: set[str]):
        self.reads = review_channel_reads
        self.saved: dict[str, ReviewRecord] = {}
        self.posted: list[dict] = []
        self.settings = SimpleNamespace(review_channel="CREVIEW")
        self.records = SimpleNamespace(review=self._review, save_review=self._save)
        self.poster = SimpleNamespace(claim_unless_posted=self._claim, post_and_record=self._post)

    async def _review(self, review_id: str) -> ReviewRecord | None:
        return self.saved.get(review_id)

    async def _save(self, record: ReviewRecord) -> None:
        self.saved[record.review_id] = record.model_copy()

    async def _claim(self, key, channel, thread) -> bool:
        return True

    async def _post(self, key, channel, thread, card, what):
        self.posted.append(card)
        return {"channel": channel, "ts": "1.0"}, None

    async def restricted(self, record: ReviewRecord) -> bool:
        shown = shown_collections(record)
        return bool(shown) and not shown <= self.reads


class Escalations:
    def __init__(self, escalation: Escalation):
        self.escalation = escalation

    async def get(self, question_id: str) -> Escalation:
        return self.escalation

    async def save(self, escalation: Escalation) -> None:
        self.escalation = escalation


def hand_over_answered(review_channel_reads: set[str], collections: list[str]) -> tuple[ReviewRecord, dict]:
    escalation = Escalation(question_id="q1", question="When are salaries paid?", channel="DASKER", is_dm=True,
                            asker="UASKER", requested_by="UASKER", escalate_to=["S0HR"], collections=collections)
    desk = Desk(review_channel_reads)
    job = Job.of(HandoverReplyPayload(question_id="q1", user="UHR", text=SECRET, ts="2.0"))
    asyncio.run(Learning(desk, Escalations(escalation)).person_answered(job))  # type: ignore[arg-type]
    [record] = desk.saved.values()
    [card] = desk.posted
    return record, card


def test_a_hand_over_about_a_collection_the_review_channel_may_not_read_gets_the_restricted_card():
    record, card = hand_over_answered({"handbook"}, ["payroll"])
    shown = json.dumps(card)
    assert record.restricted and record.collections == ["payroll"]
    assert SECRET not in shown and message(Key.REVIEW_RESTRICTED, "en") in shown
    assert not any(b.get("type") == "actions" for b in card["blocks"])  # decided on the Home tab


def test_a_hand_over_the_review_channel_may_read_shows_the_persons_answer_and_buttons():
    record, card = hand_over_answered({"handbook", "payroll"}, ["payroll"])
    assert not record.restricted
    assert SECRET in json.dumps(card)
    assert any(b.get("type") == "actions" for b in card["blocks"])


def test_the_card_itself_leaves_a_restricted_answer_out():
    record = ReviewRecord(review_id="r", question_id="q1", question="q", draft=SECRET, kind="escalation", restricted=True,
                          collections=["payroll"], channel="D1")
    assert SECRET not in json.dumps(handover_review_card(record, None))
