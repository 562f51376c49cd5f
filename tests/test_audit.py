"""The answer audit trail against real Redis, the worker's recording of an apology, and `citebot audit show`."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import redis as sync_redis
from slack_sdk.web.async_client import AsyncWebClient

from bot.cli import main
from bot.config import load_settings
from bot.jobs.queue import Job
from bot.models import (
    Answer,
    AnswerMode,
    Attempt,
    AuditMode,
    JudgedStatement,
    Judgement,
    JudgeStatus,
    ModelCall,
    Outcome,
    Question,
    SlackQuestion,
    Support,
    Violation,
)
from bot.review.desk import ReviewDesk
from bot.store import audit as audit_module, keys
from bot.store.audit import (
    CHANGED,
    CURRENT,
    REMOVED,
    UNKNOWN,
    AuditEntry,
    AuditTrail,
    audit_entry,
    check_cited,
    format_entry,
)
from bot.store.connection import connect
from bot.store.ledger import PostLedger
from bot.store.records import PostRecord, Records
from bot.wiring import job_handlers
from citebot_core.errors import Retryable
from kb_index import Retriever, build_index
from kb_index.entries import chunk_hash
from tests.fakes.slack_server import FakeSlackServer
from tests.kb_fixtures import MINI_KB, PTO_TEXT, SICK_TEXT, mini_kb_answer, write_entry, write_mini_kb

PTO_HASH = chunk_hash("hb-pto-01", "Entitlement", PTO_TEXT)
SICK_HASH = chunk_hash("hb-sick-01", "Reporting", SICK_TEXT)


def question(qid="CGENERAL:1700000001.000100", *, is_dm=False, text="How many days of annual leave do I get?"):
    return SlackQuestion(
        text=text, id=qid, channel="DASKER" if is_dm else "CGENERAL", user="UASKER",
        ts="1700000001.000100", is_dm=is_dm,
    )


def answered(q: Question) -> Answer:
    # A claims-mode answer with everything the trail records: partial, repaired, regenerated.
    return mini_kb_answer(
        q.text,
        mode=AnswerMode.CLAIMS,
        audit_mode=AuditMode.HYBRID,
        partial=True,
        violations=[Violation(kind="UNSUPPORTED_CLAIM", detail="claim 3 has no support", claim=2)],
        json_fixups=["markdown_fence", "trailing_comma"],
        regenerations=1,
        n_context=5,
        timings_ms={"retrieve": 3.1, "generate": 812.4, "verify": 1.2, "post": 40.0},
    )


@pytest.fixture
async def trail(redis_url):
    redis = connect(redis_url, timeout=5)
    yield AuditTrail(redis)
    await redis.aclose()


async def test_every_try_is_kept_in_the_trail_and_shown_by_audit_show(trail):
    q = question()
    first = Attempt(n=1, draft="Up to 7 days [hb-pto-99].", ok=False,
                    violations=[Violation(kind="UNKNOWN_ID", detail="hb-pto-99 is not among the blocks")],
                    calls=[ModelCall(what="generate", model="m", ms=812.0)])
    second = Attempt(n=2, draft="Up to 5 days [hb-pto-01].", ok=True, kept=True,
                     calls=[ModelCall(what="generate", model="m", ms=640.0), ModelCall(what="judge", model="j", ms=90.0)])
    answer = answered(q).model_copy(update={"attempts": [first, second]})
    await trail.record(audit_entry(q, answer))
    entry = await trail.get(q.id)
    assert entry is not None and entry.attempts == [first, second]
    shown = format_entry(entry, {}).splitlines()
    at = shown.index("try 1  1 finding(s) · generate m 812 ms")
    assert shown[at + 1:at + 3] == ["  UNKNOWN_ID: hb-pto-99 is not among the blocks",
                                    "try 2 (kept)  passed · generate m 640 ms · judge j 90 ms"]


async def test_an_answer_is_recorded_with_what_it_cited_and_read_back_by_question_id(trail, redis_url):
    q = question()
    posted = PostRecord(question_id=q.id, channel="CGENERAL", ts="1700000009.000100", posted_at=time.time())
    stream_id = await trail.record(audit_entry(q, answered(q), posted=posted))
    entry = await trail.get(q.id)
    assert entry is not None and entry.entry_id == stream_id
    assert (entry.outcome, entry.mode, entry.model, entry.audit_mode) == (Outcome.ANSWERED, "claims", "test-model", "HYBRID")
    assert [(c.n, c.entry_id, c.content_hash) for c in entry.cited] == [(1, "hb-pto-01", PTO_HASH), (2, "hb-sick-01", SICK_HASH)]
    assert entry.violations[0].kind == "UNSUPPORTED_CLAIM" and entry.json_fixups == ["markdown_fence", "trailing_comma"]
    assert entry.timings_ms["generate"] == 812.4 and entry.regenerations == 1 and entry.partial
    assert (entry.posted_channel, entry.posted_ts) == ("CGENERAL", "1700000009.000100")
    # The asker is not recorded, and no passage text either: the trail says which version, not what it said.
    raw = sync_redis.Redis.from_url(redis_url).xrange(keys.AUDIT_STREAM)[0][1][b"data"].decode()
    assert "UASKER" not in raw and PTO_TEXT not in raw
    # The lookup key lives as long as the stream keeps entries.
    ttl = await trail.redis.ttl(keys.audit_question_key(q.id))
    assert keys.AUDIT_HORIZON_S - 60 < ttl <= keys.AUDIT_HORIZON_S
    assert await trail.cited_by("hb-pto-01") == [q.id] and await trail.cited_by("hb-sick-01") == [q.id]
    assert await trail.get("CGENERAL:nope") is None


async def test_refusals_and_uncertain_answers_are_recorded_but_cite_nothing(trail):
    q = question()
    uncertain = answered(q).model_copy(update={"outcome": Outcome.UNCERTAIN, "verified": False})
    await trail.record(audit_entry(q, uncertain))
    assert (await trail.get(q.id)).outcome is Outcome.UNCERTAIN
    # Its draft's sources were never shown as an answer: nothing to warn about later.
    assert await trail.cited_by("hb-pto-01") == []


async def test_a_refusal_before_the_model_is_recorded_with_its_reason(trail):
    q = question()
    decision = {"answerable": False, "score": 0.74, "threshold": 0.81, "signal": "cosine",
                "reason": "nothing close: best cosine 0.740 < 0.81 ([hb-pto-01]), word coverage 0%"}
    refused = answered(q).model_copy(
        update={"outcome": Outcome.REFUSED, "refused": True, "sources": [], "answerability": decision}
    )
    await trail.record(audit_entry(q, refused))
    entry = await trail.get(q.id)
    assert entry.answerability == decision
    assert "coverage    refused before the model: nothing close: best cosine 0.740" in format_entry(entry, {})


JUDGED = Judgement(status=JudgeStatus.FAILED, model="judge-model", statements=[
    JudgedStatement(item=0, text="You get 28 days.", cites=["hb-pto-01"], said="supports", quote="gets 28 days",
                    quote_found=True, support=Support.SUPPORTS),
    JudgedStatement(item=1, text="Tell HR.", cites=["hb-sick-01"], said="supports", quote="Tell HR",
                    support=Support.NOT_STATED),
    JudgedStatement(item=2, text="No note needed.", cites=["hb-sick-01"], said="contradicts",
                    quote="from day 4 a doctor's note is needed", quote_found=True, support=Support.CONTRADICTS),
])


async def test_the_judges_verdicts_are_recorded_and_shown(trail):
    q = question()
    await trail.record(audit_entry(q, answered(q).model_copy(update={"judgement": JUDGED})))
    entry = await trail.get(q.id)
    assert entry.judgement == JUDGED
    lines = format_entry(entry, {}).splitlines()
    start = lines.index("judge       failed · model judge-model")
    assert lines[start + 1:start + 4] == [
        "  #1 supports [hb-pto-01]: You get 28 days. · quote 'gets 28 days'",
        "  #2 not_stated (said supports; the quote is not in the blocks) [hb-sick-01]: Tell HR. · quote 'Tell HR'",
        '  #3 contradicts [hb-sick-01]: No note needed. · quote "from day 4 a doctor\'s note is needed"',
    ]


async def test_an_unavailable_judge_is_shown_with_its_reason(trail):
    q = question()
    judgement = Judgement(status=JudgeStatus.UNAVAILABLE, model="m", error="LLMUnavailable: HTTP 503")
    await trail.record(audit_entry(q, answered(q).model_copy(update={"judgement": judgement})))
    text = format_entry(await trail.get(q.id), {})
    assert "judge       unavailable · model m · LLMUnavailable: HTTP 503 (nothing was posted as verified)" in text


async def test_an_answer_posted_with_the_judge_off_is_recorded_as_not_verified_and_why(trail):
    q = question()
    unjudged = answered(q).model_copy(update={"verified": False, "unverified_reason": "CITEBOT_JUDGE=off"})
    await trail.record(audit_entry(q, unjudged))
    entry = await trail.get(q.id)
    assert (entry.verified, entry.unverified_reason) == (False, "CITEBOT_JUDGE=off")
    assert "not verified" in format_entry(entry, {})


async def test_entries_written_before_the_judge_existed_read_back_without_one(trail):
    q = question()
    await trail.record(audit_entry(q, answered(q)))
    raw = (await trail.redis.xrange(keys.AUDIT_STREAM))[0][1]
    data = json.loads(raw.get("data", raw.get(b"data")))
    del data["judgement"]
    old = AuditEntry.model_validate(data)
    assert old.judgement is None and "judge " not in format_entry(old, {})


async def test_cited_by_keeps_only_the_last_thirty_days(trail):
    old, new = question("C:old"), question("C:new")
    old_entry = audit_entry(old, answered(old))
    old_entry.at = time.time() - 31 * 86400
    await trail.record(old_entry)
    await trail.record(audit_entry(new, answered(new)))
    assert await trail.cited_by("hb-pto-01") == ["C:new"]
    assert await trail.redis.zcard(keys.cited_by_key("hb-pto-01")) == 1  # trimmed, not only filtered
    ttl = await trail.redis.ttl(keys.cited_by_key("hb-pto-01"))
    assert keys.CITED_BY_WINDOW_S - 60 < ttl <= keys.CITED_BY_WINDOW_S


async def test_the_stream_is_bounded(trail, redis_url):
    small = AuditTrail(trail.redis, maxlen=10)
    for i in range(400):
        await small.record(audit_entry(question(f"C:{i}"), error="LLMUnavailable: down"))
    length = await trail.redis.xlen(keys.AUDIT_STREAM)
    # MAXLEN ~ trims whole stream nodes (100 entries by default), so "about" 10.
    assert length < 200
    assert await small.get("C:0") is None  # its lookup key outlived the trimmed entry: not found, no error
    assert (await small.get("C:399")).error == "LLMUnavailable: down"


async def test_entries_reads_a_time_range_by_outcome_in_pages(trail, monkeypatch):
    monkeypatch.setattr(audit_module, "SCAN_BATCH", 3)
    for i in range(8):
        q = question(f"C:{i}")
        answer = answered(q).model_copy(update={"outcome": Outcome.REFUSED if i % 2 else Outcome.ANSWERED})
        await trail.record(audit_entry(q, answer))
    refused = [e.question_id async for e in trail.entries(since=time.time() - 60, outcomes={Outcome.REFUSED})]
    assert refused == ["C:1", "C:3", "C:5", "C:7"]
    assert len([e async for e in trail.entries(since=time.time() - 60)]) == 8
    assert [e async for e in trail.entries(since=time.time() + 60)] == []


async def test_the_apology_is_recorded_as_an_error(redis_url):
    redis = connect(redis_url, timeout=5)
    ledger = PostLedger(redis_url)
    with FakeSlackServer(token="xoxb-test") as slack:
        settings = load_settings(env_file=None)
        client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
        records = Records(redis)
        reviews = ReviewDesk(settings=settings, slack=client, records=records, ledger=ledger)
        handlers = job_handlers(settings, client, None, records, ledger, reviews, AuditTrail(redis))  # type: ignore[arg-type]
        q = question(is_dm=True)
        await handlers.on_dead(Job(kind="answer", payload={"question": q.model_dump(mode="json")}), Retryable("LLM: 503"))
        [apology] = slack.messages("DASKER")
    entry = await AuditTrail(redis).get(q.id)
    assert entry.outcome is Outcome.ERROR and entry.error == "Retryable: LLM: 503"
    assert (entry.posted_channel, entry.posted_ts, entry.is_dm) == ("DASKER", apology["ts"], True)
    await ledger.close()
    await redis.aclose()


def test_check_cited_compares_each_chunk_with_the_live_index(tmp_path):
    kb = write_mini_kb(tmp_path / "kb")
    build_index(kb, tmp_path / "index")
    q = question()
    entry = audit_entry(q, answered(q))
    with Retriever(tmp_path / "index") as r:
        assert check_cited(entry, r.entry_chunks) == {1: CURRENT, 2: CURRENT}
        meta, sections = MINI_KB["handbook/pto-01.md"]
        write_entry(kb, "handbook/pto-01.md", {**meta, "cross_refs": []}, {**sections, "Entitlement": "30 days."})
        (kb / "handbook/sick-01.md").unlink()
        build_index(kb, tmp_path / "index")
        assert check_cited(entry, r.entry_chunks) == {1: CHANGED, 2: REMOVED}
    assert check_cited(entry, None) == {1: UNKNOWN, 2: UNKNOWN}


async def test_drafts_cut_at_the_output_cap_are_recorded_and_shown(trail):
    q = question()
    cut = answered(q).model_copy(update={"drafts_cut": 2})
    await trail.record(audit_entry(q, cut))
    entry = await trail.get(q.id)
    assert entry is not None and entry.drafts_cut == 2
    assert "1 regeneration(s) · 5 context block(s) · 2 draft(s) cut at the output cap" in format_entry(entry, {})
    assert "cut at the output cap" not in format_entry(audit_entry(q, answered(q)), {})


def test_format_of_a_dm_entry_never_shows_the_dm_channel():
    q = question(is_dm=True)
    posted = PostRecord(question_id=q.id, channel="DASKER", ts="1700000009.000100", posted_at=0)
    text = format_entry(audit_entry(q, answered(q), posted=posted), {1: CURRENT, 2: CHANGED})
    assert "direct message" in text and "DASKER" not in text
    assert "[2] hb-sick-01 · Sick leave · Reporting · Stand 2026-02 (handbook)" in text
    assert f"content {SICK_HASH} · changed since" in text


# ---------------------------------------------------------------- citebot audit show


@pytest.fixture
def cli_env(tmp_path, monkeypatch, redis_url):
    monkeypatch.chdir(tmp_path)
    kb = write_mini_kb(tmp_path / "kb")
    build_index(kb, tmp_path / "index")
    monkeypatch.setenv("CITEBOT_REDIS_URL", redis_url)
    monkeypatch.setenv("CITEBOT_INDEX_DIR", str(tmp_path / "index"))
    q = question()
    posted = PostRecord(question_id=q.id, channel="CGENERAL", ts="1700000009.000100", posted_at=0)

    async def record():
        redis = connect(redis_url, timeout=5)
        await AuditTrail(redis).record(audit_entry(q, answered(q), posted=posted))
        await redis.aclose()

    asyncio.run(record())
    return kb


def test_audit_show_prints_what_the_answer_relied_on(cli_env, capsys):
    assert main(["audit", "show", "CGENERAL:1700000001.000100"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "question    How many days of annual leave do I get?"
    assert "channel CGENERAL" in lines[2] and lines[3] == "outcome     answered (verified, partial)"
    assert "mode        claims · model test-model · audit mode HYBRID · 1 regeneration(s) · 5 context block(s)" in out
    assert "  UNSUPPORTED_CLAIM: claim 3 has no support" in out and "fix-ups     markdown_fence, trailing_comma" in out
    assert f"      content {PTO_HASH} · current" in out
    assert "timings     retrieve 3.1 ms · generate 812.4 ms · verify 1.2 ms · post 40.0 ms" in out
    assert "posted      CGENERAL at ts 1700000009.000100" in out


def test_audit_show_json_says_which_cited_chunks_changed_since(cli_env, capsys):
    meta, sections = MINI_KB["handbook/pto-01.md"]
    write_entry(cli_env, "handbook/pto-01.md", meta, {**sections, "Entitlement": "Every employee gets 30 days."})
    assert main(["index", "-q", "--kb", str(cli_env)]) == 0
    capsys.readouterr()
    assert main(["audit", "show", "CGENERAL:1700000001.000100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["entry_id"], c["content_hash"], c["status"]) for c in data["cited"]] == [
        ("hb-pto-01", PTO_HASH, CHANGED), ("hb-sick-01", SICK_HASH, CURRENT)
    ]
    assert data["question_id"] == "CGENERAL:1700000001.000100" and data["stream_id"]


def test_audit_show_of_an_unknown_question_fails_with_one_line(cli_env, capsys):
    assert main(["audit", "show", "CGENERAL:0.0"]) == 1
    assert capsys.readouterr().err.startswith("citebot: no audit entry for question 'CGENERAL:0.0'")
