"""The restricted answers already in a channel's history once it is shared with another organization
(bot.store.shared_history), read from a real audit trail and post ledger in Redis."""

from __future__ import annotations

from bot.models import Outcome
from bot.store import keys
from bot.store.audit import AuditEntry, AuditTrail, CitedChunk
from bot.store.records import EPHEMERAL_TS, PostRecord
from bot.store.shared_history import note_shared, note_unshared, restricted_in_shared_channels
from kb_index.collection import EVERY_MEMBER, CollectionAccess

ACCESSES = {"handbook": EVERY_MEMBER, "partners": CollectionAccess(external=True)}


def answered(qid: str, *collections: str, **where) -> AuditEntry:
    cited = [CitedChunk(n=i, entry_id=f"{c}-01", collection=c) for i, c in enumerate(collections, start=1)]
    return AuditEntry(question_id=qid, outcome=Outcome.ANSWERED, question="?", cited=cited, **where)


async def test_only_answers_in_the_channels_history_that_cite_what_it_may_not_read_now_are_listed(redis):
    audit = AuditTrail(redis)
    for entry in (
        answered("C1:1", "handbook", channel="C1", posted_channel="C1", posted_ts="1.1"),  # listed
        answered("C1:2", "partners", channel="C1", posted_channel="C1", posted_ts="1.2"),  # external: true
        answered("C1:3", "payroll", channel="C1", posted_channel="C1", posted_ts=EPHEMERAL_TS),  # /citebot: unseen
        answered("C1:4", "payroll", channel="C1", posted_channel="C1", posted_ts=EPHEMERAL_TS),  # ... then posted
        answered("C1:5#private", "payroll", channel="C1", posted_channel="C1", private_to="U1"),  # the asker's own
        answered("C2:1", "handbook", channel="C2", posted_channel="C2", posted_ts="2.1"),  # not shared
        AuditEntry(question_id="C1:6", outcome=Outcome.REFUSED, question="?", channel="C1", posted_channel="C1",
                   posted_ts="1.6"),
    ):
        await audit.record(entry)
    share = PostRecord(question_id="share:C1:4", channel="C1", ts="1.9", posted_at=0.0)
    await redis.set(keys.posted_key("share:C1:4"), share.model_dump_json())
    assert await restricted_in_shared_channels(redis, ACCESSES) == []
    await note_shared(redis, "C1", at=100.0)
    [shared] = await restricted_in_shared_channels(redis, ACCESSES)
    assert shared.channel == "C1" and shared.shared_at == 100.0
    # payroll is in no manifest any more: nothing says it may be read there, so it counts as restricted.
    assert [(a.question_id, a.ts, a.collections) for a in shared.answers] == [
        ("C1:1", "1.1", ("handbook",)), ("C1:4", "1.9", ("payroll",))]
    await note_unshared(redis, "C1")
    assert await restricted_in_shared_channels(redis, ACCESSES) == []
