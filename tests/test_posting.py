"""The post ledger (bot.slack.posting) against a real Redis: one claim per key, the post remembered."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.store.ledger import PostClaim, PostLedger


@pytest.fixture
async def ledger(redis_url: str) -> AsyncIterator[PostLedger]:
    post_ledger = PostLedger(redis_url)
    yield post_ledger
    await post_ledger.close()


async def test_post_ledger_grants_one_claim_and_remembers_the_post(ledger: PostLedger) -> None:
    assert await ledger.posted("q1") is None
    assert await ledger.claim_post("q1") is PostClaim.GRANTED
    await ledger.record_posted("q1", channel="C9", ts="1700000000.000100")
    assert await ledger.claim_post("q1") is PostClaim.POSTED
    record = await ledger.posted("q1")
    assert record is not None and (record.question_id, record.channel, record.ts) == ("q1", "C9", "1700000000.000100")


async def test_claim_without_record_is_in_doubt(ledger: PostLedger) -> None:
    # A run that claimed and died between the post and the record.
    assert await ledger.claim_post("q2") is PostClaim.GRANTED
    assert await ledger.claim_post("q2") is PostClaim.IN_DOUBT


async def test_released_claim_is_granted_again(ledger: PostLedger) -> None:
    # Slack answered 429: nothing was posted, the retry may post without doubt.
    assert await ledger.claim_post("q3") is PostClaim.GRANTED
    await ledger.release_post("q3")
    assert await ledger.claim_post("q3") is PostClaim.GRANTED
