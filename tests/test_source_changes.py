"""Answers whose source changed get a note in Slack: `citebot index` finds them, the worker notes them once."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import redis as sync_redis
from slack_sdk.web.async_client import AsyncWebClient

from bot.answering.source_changes import NOTES_BLOCK_ID, note_source_changes, with_source_notes
from bot.cli import main
from bot.i18n import Key, message
from bot.jobs.queue import Job, JobQueue
from bot.models import Answer, Outcome, Question, SlackQuestion
from bot.slack.replies import answer_message
from bot.store import keys
from bot.store.audit import AuditTrail, audit_entry
from bot.store.connection import connect
from bot.store.ledger import PostLedger
from bot.store.records import AnswerRecord, PostRecord, Records
from citebot_core.errors import Retryable
from kb_index import build_index
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import mention_event, start_citebot
from tests.kb_fixtures import MINI_KB, mini_kb_answer, write_entry, write_mini_kb
from tests.polling import wait_until

CARRY_TEXT = "You can carry over up to 5 unused vacation days until 31 March of the next year."
CHANGED_EN = message(Key.SOURCE_CHANGED, "en", n=1)


def answered(q: Question) -> Answer:
    return mini_kb_answer(q.text)


def job(qid: str, *changes: tuple[str, int, str], generation: str = "gen-000002") -> Job:
    return Job(kind="source_changed", payload={
        "answer_id": qid, "generation": generation,
        "changes": [{"entry_id": e, "n": n, "change": c} for e, n, c in changes],
    })


def note_lines(msg: dict) -> list[str]:
    [block] = [b for b in msg["blocks"] if b.get("block_id") == NOTES_BLOCK_ID]
    return block["elements"][0]["text"].splitlines()


def test_notes_are_appended_after_the_answer_and_replace_earlier_notes():
    original = answer_message(answered(Question(text="q")), language="en", ref="C:1")
    noted = with_source_notes(original, {"2": "removed", "1": "changed"}, "en")
    assert noted["blocks"][: len(original["blocks"])] == original["blocks"]
    assert note_lines(noted) == [CHANGED_EN, message(Key.SOURCE_REMOVED, "en", n=2)]
    assert noted["text"].startswith(original["text"]) and noted["text"].endswith(message(Key.SOURCE_REMOVED, "en", n=2))
    again = with_source_notes(noted, {"1": "removed"}, "de")
    assert len(again["blocks"]) == len(original["blocks"]) + 1
    assert note_lines(again) == ["⚠️ Quelle [1] wurde seit dieser Antwort aus der Wissensbasis entfernt – bitte frag noch einmal."]
    full = {"text": "x", "blocks": [{"type": "divider"}] * 50}
    assert len(with_source_notes(full, {"1": "changed"}, "en")["blocks"]) == 50


# ---------------------------------------------------------------- the worker's side


class Desk:
    """What the worker's source_changed handler needs: a posted answer in a fake Slack, and its records."""

    def __init__(self, url: str, slack: FakeSlackServer):
        self.redis = connect(url, timeout=5)
        self.records = Records(self.redis)
        self.audit = AuditTrail(self.redis)
        self.ledger = PostLedger(url)
        self.slack_server = slack
        self.slack = AsyncWebClient(token="xoxb-test", base_url=slack.url)

    async def post_answer(self, qid: str, *, language: str = "en", is_dm: bool = False) -> str:
        q = SlackQuestion(text="How many days of leave?", id=qid, channel="DASKER" if is_dm else "CGENERAL",
                          ts="1700000001.000100", language=language, is_dm=is_dm)
        answer = answered(q)
        msg = answer_message(answer, language=language, ref=qid)
        resp = await self.slack.chat_postMessage(channel=q.channel, thread_ts=q.ts, **msg)
        await self.records.save_answer(AnswerRecord(answer_id=qid, question_id=qid, question=q.text, language=language,
                                                    channel=q.channel, is_dm=is_dm, sources=answer.sources, message=msg))
        await self.ledger.record_posted(qid, resp["channel"], resp["ts"])
        await self.audit.record(audit_entry(q, answer, posted=await self.ledger.posted(qid)))
        return resp["ts"]

    async def run(self, j: Job) -> None:
        await note_source_changes(j, slack=self.slack, records=self.records, audit=self.audit)

    async def close(self) -> None:
        await self.ledger.close()
        await self.redis.aclose()


@pytest.fixture
async def desk(redis_url):
    with FakeSlackServer(token="xoxb-test") as slack:
        d = Desk(redis_url, slack)
        yield d
        await d.close()


async def test_a_change_is_noted_once_however_often_its_job_runs(desk):
    ts = await desk.post_answer("C:1")
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))  # a redelivery
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed"), generation="gen-000003"))  # a later rebuild, same note
    [update] = desk.slack_server.calls("chat.update")
    assert (update.body["channel"], update.body["ts"]) == ("CGENERAL", ts)
    [posted] = desk.slack_server.messages("CGENERAL")
    assert note_lines(posted) == [CHANGED_EN] and posted["text"].endswith(CHANGED_EN)
    assert "citebot_sources" in json.dumps(posted["blocks"])  # the answer and its buttons stay
    assert (await desk.records.answer("C:1")).source_notes == {"1": "changed"}


async def test_a_later_removal_replaces_the_change_note_in_the_answers_language(desk):
    await desk.post_answer("D:1", language="de", is_dm=True)
    await desk.run(job("D:1", ("hb-pto-01", 1, "changed")))
    await desk.run(job("D:1", ("hb-pto-01", 1, "removed"), ("hb-sick-01", 2, "changed")))
    await desk.run(job("D:1", ("hb-pto-01", 1, "changed")))  # a removal stays the last word
    assert len(desk.slack_server.calls("chat.update")) == 2
    [posted] = desk.slack_server.messages("DASKER")
    assert note_lines(posted) == [message(Key.SOURCE_REMOVED, "de", n=1), message(Key.SOURCE_CHANGED, "de", n=2)]
    assert "How many days" not in json.dumps(posted)  # a DM question's text is never posted


async def test_the_note_finds_the_answer_through_the_audit_trail_after_the_ledger_forgot(desk):
    ts = await desk.post_answer("C:1")
    await desk.redis.delete(keys.posted_key("C:1"))  # the ledger keeps posts a week, notes come up to a month later
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))
    [update] = desk.slack_server.calls("chat.update")
    assert update.body["ts"] == ts


async def test_where_the_answer_went_is_read_from_its_audit_entry_alone(desk):
    await desk.post_answer("C:1")
    await desk.redis.delete(keys.audit_question_key("C:1"))  # an audit entry that was never recorded
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))
    assert await desk.ledger.posted("C:1") is not None  # the post record alone does not count
    assert desk.slack_server.calls("chat.update") == []
    assert (await desk.records.answer("C:1")).source_notes == {}


async def test_two_jobs_for_one_answer_take_turns(desk):
    await desk.post_answer("C:1")
    await desk.redis.set(keys.source_note_lock_key("C:1"), "another-job")
    with pytest.raises(Retryable):
        await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))
    assert desk.slack_server.calls("chat.update") == []
    assert await desk.redis.get(keys.source_note_lock_key("C:1")) == "another-job"  # not ours to release
    await desk.redis.delete(keys.source_note_lock_key("C:1"))
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))
    assert len(desk.slack_server.calls("chat.update")) == 1
    assert await desk.redis.get(keys.source_note_lock_key("C:1")) is None


async def test_a_deleted_message_ends_the_job_without_a_retry(desk):
    ts = await desk.post_answer("C:1")
    await desk.slack.chat_delete(channel="CGENERAL", ts=ts)
    await desk.run(job("C:1", ("hb-pto-01", 1, "changed")))
    [update] = desk.slack_server.calls("chat.update")
    assert update.error == "message_not_found"
    assert (await desk.records.answer("C:1")).source_notes == {}


async def test_an_expired_answer_record_is_skipped(desk):
    await desk.run(job("C:gone", ("hb-pto-01", 1, "changed")))
    assert desk.slack_server.calls("chat.update") == []


# ---------------------------------------------------------------- citebot index


@pytest.fixture
def kb_env(tmp_path, monkeypatch, redis_url):
    monkeypatch.chdir(tmp_path)
    kb = write_mini_kb(tmp_path / "kb")
    build_index(kb, tmp_path / "index")
    monkeypatch.setenv("CITEBOT_KB_DIR", str(kb))
    monkeypatch.setenv("CITEBOT_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("CITEBOT_REDIS_URL", redis_url)
    return kb


def record_answers(redis_url: str, *qids: str, at: float | None = None) -> None:
    async def run():
        redis = connect(redis_url, timeout=5)
        for qid in qids:
            q = SlackQuestion(text="How many days of leave?", id=qid, channel="CGENERAL", ts="1.0")
            entry = audit_entry(q, answered(q), posted=PostRecord(question_id=qid, channel="CGENERAL", ts="2.0", posted_at=0))
            entry.at = at or time.time()
            await AuditTrail(redis).record(entry)
        await redis.aclose()

    asyncio.run(run())


def queued_jobs(redis_url: str) -> list[Job]:
    client = sync_redis.Redis.from_url(redis_url)
    return [Job.model_validate_json(fields[b"job"]) for _, fields in client.xrange(keys.JOBS_STREAM)]


def edit_pto(kb, **sections: str) -> None:
    meta, old = MINI_KB["handbook/pto-01.md"]
    write_entry(kb, "handbook/pto-01.md", meta, {**old, **sections})


def test_index_enqueues_one_note_per_answer_that_cited_a_changed_chunk(kb_env, redis_url, capsys):
    record_answers(redis_url, "C:1", "C:2")
    record_answers(redis_url, "C:old", at=time.time() - 31 * 86400)
    edit_pto(kb_env, Entitlement="Every employee gets 30 days of paid annual leave per calendar year.")
    (kb_env / "payroll/ueb-01.md").unlink()  # cited by nobody
    assert main(["index", "-q"]) == 0
    out = capsys.readouterr().out
    assert "source changes: 2 answer(s) in Slack cited a changed or removed entry and will get a note" in out
    jobs = queued_jobs(redis_url)
    assert sorted(j.payload["answer_id"] for j in jobs) == ["C:1", "C:2"]
    assert {j.kind for j in jobs} == {"source_changed"}
    assert jobs[0].payload["changes"] == [{"entry_id": "hb-pto-01", "n": 1, "change": "changed"}]
    # Nothing changed since: no new jobs, nothing printed about sources.
    assert main(["index", "-q"]) == 0
    assert "source changes" not in capsys.readouterr().out and len(queued_jobs(redis_url)) == 2


def test_a_change_in_a_section_the_answer_did_not_cite_is_no_reason_for_a_note(kb_env, redis_url, capsys):
    record_answers(redis_url, "C:1")
    edit_pto(kb_env, **{"Carry-over": CARRY_TEXT.replace("5", "10")})
    assert main(["index", "-q"]) == 0
    assert "source changes: 0 answer(s)" in capsys.readouterr().out
    assert queued_jobs(redis_url) == []


def test_a_removed_entry_and_a_full_rebuild_are_noticed_too(kb_env, redis_url, capsys):
    record_answers(redis_url, "C:1")
    meta, sections = MINI_KB["handbook/pto-01.md"]
    write_entry(kb_env, "handbook/pto-01.md", {**meta, "cross_refs": []}, sections)
    (kb_env / "handbook/sick-01.md").unlink()
    assert main(["index", "-q", "--rebuild"]) == 0  # a full rebuild reports every entry as added
    assert "source changes: 1 answer(s)" in capsys.readouterr().out
    [j] = queued_jobs(redis_url)
    assert j.payload["changes"] == [{"entry_id": "hb-sick-01", "n": 2, "change": "removed"}]
    assert j.payload["generation"] == "gen-000002"


def test_index_without_redis_says_so_and_still_succeeds(kb_env, monkeypatch, capsys):
    monkeypatch.setenv("CITEBOT_REDIS_URL", "redis://127.0.0.1:1/15")
    edit_pto(kb_env, Entitlement="Every employee gets 30 days.")
    assert main(["index", "-q"]) == 0
    captured = capsys.readouterr()
    assert "1 changed" in captured.out
    assert captured.err.startswith(
        "citebot: note: the index is built, but answers citing the 1 changed or removed entries were not notified: "
        "Redis at 127.0.0.1:1/15 is not reachable"
    )


# ---------------------------------------------------------------- end to end

GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."


@pytest.fixture
def citebot(tmp_path, redis_url):
    """serve + worker on an index of their own (the test rebuilds it)."""
    kb = write_mini_kb(tmp_path / "kb")
    build_index(kb, tmp_path / "index")
    bot = start_citebot(tmp_path / "logs", redis_url=redis_url, index_dir=tmp_path / "index")
    yield bot, kb
    bot.stop()


def idle(redis_url: str) -> bool:
    async def stats():
        async with JobQueue(redis_url) as queue:
            return await queue.stats()

    s = asyncio.run(stats())
    return s.waiting == s.in_flight == s.delayed == 0


@pytest.mark.e2e
def test_an_edited_kb_entry_puts_a_note_under_the_slack_answer_that_cited_it(citebot, redis_url, monkeypatch, capsys):
    bot, kb = citebot
    bot.llm.script(GOOD)
    event = mention_event("How many days of annual leave do I get?")
    bot.send_event(event)
    qid = f"CGENERAL:{event['event']['ts']}"
    [post] = wait_until(lambda: bot.replies("CGENERAL", event["event"]["ts"]), 20, "the answer")
    assert "28 days" in post["text"]
    client = sync_redis.Redis.from_url(redis_url)
    wait_until(lambda: client.exists(keys.audit_question_key(qid)), 10, "the audit entry")
    assert client.zrange(keys.cited_by_key("hb-pto-01"), 0, -1) == [qid.encode()]

    edit_pto(kb, Entitlement="Every employee gets 30 days of paid annual leave per calendar year.")
    monkeypatch.chdir(kb.parent)
    for name, value in bot.env.items():
        if name.startswith("CITEBOT_"):
            monkeypatch.setenv(name, value)
    assert main(["index", "-q", "--kb", str(kb)]) == 0
    assert "source changes: 1 answer(s)" in capsys.readouterr().out

    [update] = bot.slack.wait_for("chat.update", 1, timeout=20)
    [answer] = [m for m in bot.slack.messages("CGENERAL") if m.get("thread_ts") == event["event"]["ts"]]
    assert note_lines(answer) == [CHANGED_EN] and update.body["ts"] == answer["ts"]
    assert "28 days" in answer["text"]  # the answer stays as it was, with the note under it

    # Changed again: a new job for the new generation, but the note is there already.
    edit_pto(kb, Entitlement="Every employee gets 31 days of paid annual leave per calendar year.")
    assert main(["index", "-q", "--kb", str(kb)]) == 0
    assert "source changes: 1 answer(s)" in capsys.readouterr().out
    wait_until(lambda: idle(redis_url) and len(client.xrange(keys.JOBS_STREAM)) == 0, 20, "the second job done")
    assert len(bot.slack.calls("chat.update")) == 1 and client.llen(keys.DEAD_LIST) == 0
    assert json.loads(client.xrange(keys.AUDIT_STREAM)[0][1][b"data"])["outcome"] == Outcome.ANSWERED
