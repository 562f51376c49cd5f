"""Hand-over records and the hourly cap of a help channel (bot.store.escalations) on real Redis, and how
they are reported (bot.helpdesk.report) and offered (bot.helpdesk.handover)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from bot.helpdesk.handover import ACTION_HANDOVER, people, with_handover
from bot.helpdesk.report import EVERY_COLLECTION, by_collection, gaps_line
from bot.slack import replies
from bot.store import keys
from bot.store.escalations import Escalation, Escalations


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[Escalations]:
    client = aioredis.Redis.from_url(redis_url)
    yield Escalations(client)
    await client.aclose()


def escalation(question_id: str = "C1:1.0", **fields) -> Escalation:
    base = {"question": "How many days of leave?", "channel": "C1", "thread_ts": "1.0", "requested_by": "UASKER",
            "asker": "UASKER", "escalate_to": ["S0IT"]}
    return Escalation(question_id=question_id, **{**base, **fields})


async def test_the_first_claim_wins_and_a_release_lets_the_next_click_try(store: Escalations) -> None:
    assert await store.claim(escalation())
    assert not await store.claim(escalation(escalate_to=["S0OTHER"]))
    assert (await store.get("C1:1.0")).escalate_to == ["S0IT"]
    await store.release("C1:1.0")
    assert await store.get("C1:1.0") is None and await store.since(0) == []
    assert await store.claim(escalation())
    assert [e.question_id for e in await store.since(0)] == ["C1:1.0"]


async def test_a_thread_is_handed_over_once_whichever_replys_button_is_clicked(store: Escalations) -> None:
    assert await store.claim(escalation("C1:1.0"))
    assert not await store.claim(escalation("C1:2.0"))  # a follow-up's reply in the same thread
    assert await store.claim(escalation("C1:3.0", thread_ts="3.0"))  # another thread
    # Outside a thread (a DM's questions) each question is its own.
    assert await store.claim(escalation("D1:1.0", channel="D1", thread_ts=None, is_dm=True))
    assert await store.claim(escalation("D1:2.0", channel="D1", thread_ts=None, is_dm=True))
    await store.release("C1:1.0")
    assert await store.claim(escalation("C1:2.0"))


async def test_a_save_keeps_the_records_lifetime_and_never_revives_it(store: Escalations) -> None:
    assert await store.claim(escalation())
    record = await store.get("C1:1.0")
    record.status = "handed over"
    await store.save(record)
    assert 0 < await store.redis.ttl(keys.escalation_key("C1:1.0")) <= keys.ESCALATION_TTL_S
    await store.release("C1:1.0")
    await store.save(record)
    assert await store.get("C1:1.0") is None


async def test_a_thread_is_linked_to_its_question(store: Escalations) -> None:
    assert await store.in_thread("C1", "1.0") is None
    await store.link_thread("C1", "1.0", "C1:1.0")
    assert await store.in_thread("C1", "1.0") == "C1:1.0"


async def test_the_hourly_cap_counts_each_message_once_and_frees_up_after_an_hour(store: Escalations) -> None:
    assert [await store.within_cap("C1", ts, 2) for ts in ("1.0", "2.0", "3.0")] == [True, True, False]
    assert await store.within_cap("C1", "1.0", 2)  # Slack's retry of a counted message
    assert await store.within_cap("C2", "3.0", 2)  # another channel has its own hour
    # An hour later the first two have left the window.
    key = keys.auto_answered_key("C1")
    await store.redis.zadd(key, {"1.0": time.time() - 3700, "2.0": time.time() - 3700})
    assert await store.within_cap("C1", "3.0", 2)


def test_escalations_are_counted_by_collection_most_first() -> None:
    handed = [escalation(collections=["it"]), escalation(collections=["it", "handbook"]), escalation()]
    assert by_collection(handed) == {"it": 2, EVERY_COLLECTION: 1, "handbook": 1}
    assert gaps_line(handed, 7).endswith("3 question(s); by collection: it 2 · (every collection) 1 · handbook 1")


def test_the_button_joins_the_answers_buttons_or_gets_its_own_block() -> None:
    refusal = replies.refusal_message(language="de")
    offered = with_handover(refusal, question_id="C1:1.0", language="de")
    [button] = offered["blocks"][-1]["elements"]
    assert (button["action_id"], button["value"], button["text"]["text"]) == (ACTION_HANDOVER, "C1:1.0",
                                                                               "🙋 Noch Hilfe nötig?")
    assert offered["blocks"][:-1] == refusal["blocks"] and refusal["blocks"][-1]["type"] != "actions"
    with_actions = {"text": "x", "blocks": [{"type": "actions", "elements": [{"action_id": "citebot_sources"}]}]}
    [actions] = with_handover(with_actions, question_id="C1:1.0", language="en")["blocks"]
    assert [e["action_id"] for e in actions["elements"]] == ["citebot_sources", ACTION_HANDOVER]


def test_people_are_mentioned_as_slack_writes_them() -> None:
    assert people(["S0IT", "U0ONCALL"]) == "<!subteam^S0IT>, <@U0ONCALL>"
