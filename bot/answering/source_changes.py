"""Answers whose sources changed: a visible note under the Slack answer.

When `citebot index` changes or removes an entry, answers of the last 30 days
that cited it may now state a superseded rule. Two halves:

- `citebot index` (`notify_source_changes`): from the audit trail's cited-by
  index, the answers that cited a changed or removed entry; an answer counts
  only if the chunk it cited is gone from the new index (a change in another
  section of the entry leaves its footing intact). One `source_changed` job
  per answer, deduplicated per index generation: a rebuild notifies again
  only for what it changed.
- the worker (`note_source_changes`): rebuilds the posted message from the
  stored original plus one line per changed footnote and `chat.update`s it.
  The notes an answer carries are kept in its record, so a second job for the
  same change finds nothing to add and leaves Slack alone.

The notes name only a footnote number: no question text (a DM's stays in
the DM) and nothing from the KB.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot.i18n import Key, message
from bot.jobs.job import Job, SourceChange, SourceChangedPayload
from bot.jobs.queue import JobQueue, QueueUnavailable
from bot.slack.blockkit import MAX_FALLBACK_CHARS, MAX_MESSAGE_BLOCKS, context
from bot.slack.calls import SlackFailed, call
from bot.slack.mrkdwn import clip
from bot.store import keys
from bot.store.audit import AuditTrail
from bot.store.connection import connect, redis_location
from bot.store.records import Records
from bot.store.redis_target import RedisTarget
from citebot_core.errors import Retryable
from kb_index import Retriever
from kb_index.index import BuildReport, read_manifest

log = logging.getLogger(__name__)

CHANGED, REMOVED = "changed", "removed"
NOTES_BLOCK_ID = "citebot_source_notes"
# `citebot index` must not hang on a Redis that does not answer: the index is built already.
CLI_REDIS_TIMEOUT_S = 3.0

# KEYS: lock. ARGV: token. Deletes the lock only if this job still holds it.
RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class NotNotified(Retryable):
    """Redis could not be reached: the index is built, the answers were not told."""


# ---------------------------------------------------------------- citebot index


def changed_entries(report: BuildReport, previous: dict[str, str] | None) -> tuple[list[str], list[str]]:
    """(changed, removed) entry ids of a build. A full rebuild (`--rebuild`, a
    new schema) reports every entry as added, so there the manifests are compared."""
    if not report.full_rebuild:
        return list(report.updated), list(report.removed)
    if not previous:
        return [], []
    now = read_manifest(Path(report.index_dir) / report.generation)["entries"]
    changed = sorted(e for e, h in previous.items() if e in now and now[e] != h)
    return changed, sorted(e for e in previous if e not in now)


async def plan_notes(
    audit: AuditTrail, changed: list[str], removed: list[str], current_hashes: Callable[[str], set[str]], *,
    now: float | None = None
) -> dict[str, list[SourceChange]]:
    """Question id -> the footnotes of its answer whose cited chunk is no longer in the index.

    `current_hashes(entry_id)` gives the content hashes the new index holds for an entry.
    """
    since = (time.time() if now is None else now) - audit.cited_window_s
    plan: dict[str, list[SourceChange]] = {}
    for entry_id, change in [(e, CHANGED) for e in changed] + [(e, REMOVED) for e in removed]:
        question_ids = await audit.cited_by(entry_id, since=since)
        live = current_hashes(entry_id) if change == CHANGED and question_ids else set()
        for qid in question_ids:
            entry = await audit.get(qid)
            if entry is None:
                continue  # past the audit horizon: nothing says what it cited
            for cited in entry.cited:
                if cited.entry_id == entry_id and not (change == CHANGED and cited.content_hash in live):
                    plan.setdefault(qid, []).append(SourceChange(entry_id=entry_id, n=cited.n, change=change))
    return plan


async def enqueue_notes(queue: JobQueue, plan: dict[str, list[SourceChange]], generation: str) -> int:
    """One job per answer; returns how many were new (not already enqueued for this generation)."""
    added = 0
    for qid, changes in sorted(plan.items()):
        job = Job.of(SourceChangedPayload(answer_id=qid, generation=generation, changes=changes))
        added += await queue.enqueue(job, dedupe_id=f"{job.kind}:{generation}:{qid}")
    return added


async def notify_source_changes(redis_url: RedisTarget | str, index_dir: Path, generation: str, changed: list[str], removed: list[str]) -> int:
    """After a build: enqueue the notes; returns the number of answers that will get one."""
    redis = connect(redis_url, timeout=CLI_REDIS_TIMEOUT_S)
    try:
        with Retriever(index_dir) as retriever:
            plan = await plan_notes(
                AuditTrail(redis), changed, removed, lambda e: {c.content_hash for c in retriever.entry_chunks(e)}
            )
        if not plan:
            return 0
        async with JobQueue(redis_url, enqueue_timeout=CLI_REDIS_TIMEOUT_S) as queue:
            await enqueue_notes(queue, plan, generation)
        return len(plan)
    except (RedisError, OSError, TimeoutError, QueueUnavailable) as exc:
        raise NotNotified(f"Redis at {redis_location(redis_url)} is not reachable ({type(exc).__name__}: {exc})") from exc
    finally:
        await redis.aclose()


# ---------------------------------------------------------------- the worker


def with_source_notes(original: dict[str, Any], notes: dict[str, str], language: str) -> dict[str, Any]:
    """The posted message with one note line per changed footnote, in the answer's language."""
    lines = [
        message(Key.SOURCE_REMOVED if change == REMOVED else Key.SOURCE_CHANGED, language, n=n)
        for n, change in sorted(notes.items(), key=lambda item: int(item[0]))
    ]
    blocks = [b for b in original.get("blocks", []) if b.get("block_id") != NOTES_BLOCK_ID]
    text = original.get("text", "")
    if lines:
        note = "\n".join(lines)
        # The answer was built to fit Slack's 50 blocks; the note must fit too.
        blocks = blocks[: MAX_MESSAGE_BLOCKS - 1] + [context([note], block_id=NOTES_BLOCK_ID).to_dict()]
        text = f"{clip(text, MAX_FALLBACK_CHARS - len(note) - 2)}\n\n{note}"
    return {**original, "text": text, "blocks": blocks}


async def note_source_changes(job: Job, *, slack: AsyncWebClient, records: Records, audit: AuditTrail | None) -> None:
    """Handles a `source_changed` job: the note under the posted answer, once."""
    payload = job.read(SourceChangedPayload)
    qid, changes = payload.answer_id, payload.changes
    lock = keys.source_note_lock_key(qid)
    # Two rebuilds in a row may give two jobs for one answer: each rewrites
    # the whole message, so they take turns instead of overwriting each other.
    if not await records.redis.set(lock, job.id, nx=True, ex=keys.SOURCE_NOTE_LOCK_TTL_S):
        raise Retryable(f"source notes of {qid} are being updated by another job", retry_after=1.0)
    try:
        record = await records.answer(qid)
        if record is None or record.message is None:
            log.info("source note for %s dropped: its answer record expired or predates notes", qid)
            return
        notes = dict(record.source_notes)
        for c in changes:
            if notes.get(str(c.n)) != REMOVED:  # a removal stays the last word
                notes[str(c.n)] = c.change
        if notes == record.source_notes:
            return  # this change is noted already
        where = await _posted_at(qid, audit)
        if where is None:
            log.info("source note for %s dropped: where its answer was posted is no longer known", qid)
            return
        if record.private_to is not None:
            log.info("source note for %s dropped: its answer was seen by its asker alone", qid)
            return
        msg = with_source_notes(record.message, notes, record.language)
        try:
            await call(slack.chat_update(channel=where[0], ts=where[1], **msg), "note a changed source")
        except SlackFailed as exc:
            log.warning("source note for %s not shown: %s", qid, exc)  # e.g. the message was deleted
            return
        await records.replace_answer(record.model_copy(update={"source_notes": notes}))
        log.info("source note on %s: %s", qid, ", ".join(f"[{c.n}] {c.entry_id} {c.change}" for c in changes))
    finally:
        # redis-py annotates eval() for its sync and asyncio clients at once
        # (`Awaitable[str] | str`); on the asyncio client it always returns an awaitable.
        await records.redis.eval(RELEASE_LUA, 1, lock, job.id)  # type: ignore[misc]


async def _posted_at(qid: str, audit: AuditTrail | None) -> tuple[str, str] | None:
    """(channel, ts) of the answer's message, from its audit entry: the post record
    that makes posting exactly-once lives only a week (bot.store.keys says why)."""
    entry = await audit.get(qid) if audit is not None else None
    if entry is not None and entry.posted_channel and entry.posted_ts:
        return entry.posted_channel, entry.posted_ts
    return None
