"""The answer audit trail: what every answer relied on, and how it was checked.

One `AuditEntry` per question that got an answer, a refusal, the uncertain
message or the apology, written by the worker right after the post. It holds
the cited entries with the content hash of each cited chunk, so that anyone
can later tell exactly which version of an entry an answer relied on
(`citebot audit show QUESTION_ID`), and which questions the KB could not
answer (`citebot review gaps`).

Three structures, written together by one script (bot.store.keys says how long each
lives and why):

- the bounded stream AUDIT_STREAM: the entries, oldest first;
- per question, the id of its stream entry: `get(question_id)` is a GET and an
  XRANGE of one id, never a scan;
- per cited KB entry, the questions that cited it in the last 30 days: what
  `citebot index` needs to find the answers whose source just changed.

Privacy: an entry holds the question text, also of a direct message. It is
for operators (the CLI) only; nothing here is ever posted to Slack. The
asker's user id is not recorded at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from pydantic import BaseModel, Field
from redis.typing import EncodableT

from bot.models import (
    Answer,
    Attempt,
    JudgedStatement,
    Judgement,
    JudgeStatus,
    Outcome,
    SlackQuestion,
    Support,
    Violation,
)
from bot.store import keys
from bot.store.records import PostRecord
from bot.terminal import clean

log = logging.getLogger(__name__)

# Entries read per XRANGE call when scanning a time range.
SCAN_BATCH = 500

# KEYS: stream, question key, cited-by keys... ARGV: maxlen, min id, question
# key ttl, question id, outcome, entry json, score (answered at), cited-by
# cutoff score, cited-by ttl. One script, so a crash cannot leave a question
# key pointing at nothing or a cited-by member without its entry.
RECORD_LUA = """
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'q', ARGV[4], 'outcome', ARGV[5], 'data', ARGV[6])
redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[2])
redis.call('SET', KEYS[2], id, 'EX', ARGV[3])
for i = 3, #KEYS do
  redis.call('ZADD', KEYS[i], ARGV[7], ARGV[4])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. ARGV[8])
  redis.call('EXPIRE', KEYS[i], ARGV[9])
end
return id
"""


class CitedChunk(BaseModel):
    """One footnote of an answer: the entry and the exact chunk text it relied on."""

    n: int
    entry_id: str
    title: str = ""
    section: str = ""
    stand: str | None = None
    collection: str = "default"
    content_hash: str = ""


class AuditEntry(BaseModel):
    question_id: str
    at: float = Field(default_factory=time.time)
    outcome: Outcome
    question: str
    language: str = "en"
    channel: str | None = None
    is_dm: bool = False
    thread_ts: str | None = None
    truncated: bool = False
    mode: str | None = None
    model: str = ""
    verified: bool = False
    unverified_reason: str | None = None  # Answer.unverified_reason
    partial: bool = False
    # What the answer said the KB does not cover (entries written before it read back without).
    not_covered: list[str] = Field(default_factory=list)
    audit_mode: str | None = None
    violations: list[Violation] = Field(default_factory=list)
    json_fixups: list[str] = Field(default_factory=list)
    # The entailment judge's verdicts on the kept draft; None when it is off or did not
    # run (and in entries written before it existed).
    judgement: Judgement | None = None
    regenerations: int = 0
    # Every try: each draft, its findings, the judge's verdicts and quotes, the model calls and their time
    # (Answer.attempts; empty in entries written before they were kept).
    attempts: list[Attempt] = Field(default_factory=list)
    drafts_cut: int = 0  # drafts that stopped at the output cap (CITEBOT_LLM_MAX_TOKENS)
    n_context: int = 0
    cited: list[CitedChunk] = Field(default_factory=list)
    # The collections the answer was allowed to draw on where it was shown (bot.access); None: not checked
    # (entries written before the check existed).
    allowed: list[str] | None = None
    # An answer shown to its asker alone in a channel (from their own access, beside the channel's reply): who.
    # Its question id is the channel question's with "#private"; None for every other answer.
    private_to: str | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    answerability: dict[str, Any] | None = None  # why the question went to the model, or was refused before it
    # Where the reply went, copied from the post record, which lives only as
    # long as its job may run: this is where it is read from afterwards
    # (bot.store.keys says why).
    posted_channel: str | None = None
    posted_ts: str | None = None
    error: str | None = None
    # The stream entry id, filled in when read back.
    entry_id: str | None = Field(default=None, exclude=True)

    @property
    def where(self) -> str:
        """For operators: a channel id, or "direct message" (never the DM's channel id)."""
        return "direct message" if self.is_dm else (self.channel or "-")


def audit_entry(
    question: SlackQuestion,
    answer: Answer | None = None,
    *,
    posted: PostRecord | None = None,
    error: BaseException | str | None = None,
) -> AuditEntry:
    """The entry for `question`: from its `answer`, or an ERROR outcome when there is none."""
    text = None if error is None else (error if isinstance(error, str) else f"{type(error).__name__}: {error}")
    entry = AuditEntry(
        question_id=question.id,
        outcome=Outcome.ERROR,
        question=question.text,
        language=question.language,
        channel=question.channel,
        is_dm=question.is_dm,
        thread_ts=question.thread_ts,
        truncated=question.truncated,
        posted_channel=posted.channel if posted else None,
        posted_ts=posted.ts if posted else None,
        error=text,
        allowed=question.collections,
    )
    if answer is None:
        return entry
    cited = [
        CitedChunk(
            n=s.n, entry_id=s.id, title=s.title, section=s.section, stand=s.stand,
            collection=s.collection, content_hash=s.content_hash,
        )
        for s in answer.sources
    ]
    return entry.model_copy(
        update={
            "outcome": answer.outcome,
            "error": None,
            "mode": str(answer.mode),
            "model": answer.model,
            "verified": answer.verified,
            "unverified_reason": answer.unverified_reason,
            "partial": answer.partial,
            "not_covered": list(answer.not_covered),
            "audit_mode": str(answer.audit_mode) if answer.audit_mode else None,
            "violations": list(answer.violations),
            "json_fixups": list(answer.json_fixups),
            "judgement": answer.judgement,
            "regenerations": answer.regenerations,
            "attempts": list(answer.attempts),
            "drafts_cut": answer.drafts_cut,
            "n_context": answer.n_context,
            "cited": cited,
            "timings_ms": dict(answer.timings_ms),
            "answerability": answer.answerability,
        }
    )


class AuditTrail:
    """Writes and reads audit entries over the caller's redis.asyncio client."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        maxlen: int = keys.AUDIT_MAXLEN,
        horizon_s: float = keys.AUDIT_HORIZON_S,
        cited_window_s: float = keys.CITED_BY_WINDOW_S,
    ):
        self.redis = redis
        self.maxlen = maxlen
        self.horizon_s = horizon_s
        self.cited_window_s = cited_window_s
        self._record = redis.register_script(RECORD_LUA)

    async def record(self, entry: AuditEntry) -> str:
        """Appends `entry`; returns its stream id. A second entry for a question replaces the first in `get`."""
        now = time.time()
        cited = sorted({c.entry_id for c in entry.cited}) if entry.outcome is Outcome.ANSWERED else []
        stream_keys = [keys.AUDIT_STREAM, keys.audit_question_key(entry.question_id)]
        args: list[EncodableT] = [
            self.maxlen,
            f"{int((now - self.horizon_s) * 1000)}-0",
            int(self.horizon_s),
            entry.question_id,
            str(entry.outcome),
            entry.model_dump_json(),
            repr(entry.at),
            repr(now - self.cited_window_s),
            int(self.cited_window_s),
        ]
        entry_id = await self._record(keys=stream_keys + [keys.cited_by_key(e) for e in cited], args=args)
        return _text(entry_id)

    async def get(self, question_id: str) -> AuditEntry | None:
        """The latest entry of a question, or None (never recorded, or past the horizon)."""
        entry_id = await self.redis.get(keys.audit_question_key(question_id))
        if entry_id is None:
            return None
        rows = await self.redis.xrange(keys.AUDIT_STREAM, min=_text(entry_id), max=_text(entry_id), count=1)
        return _parse(rows[0]) if rows else None

    async def entries(self, *, since: float, outcomes: set[Outcome] | None = None) -> AsyncIterator[AuditEntry]:
        """Entries recorded at or after `since` (epoch seconds), oldest first; only `outcomes` if given.

        Stream ids are millisecond timestamps, so the range starts right at
        `since` instead of scanning what came before.
        """
        start = f"{max(0, int(since * 1000))}-0"
        wanted = {str(o) for o in outcomes} if outcomes else None
        while True:
            rows = await self.redis.xrange(keys.AUDIT_STREAM, min=start, max="+", count=SCAN_BATCH)
            for row in rows:
                if wanted is None or _text(row[1].get("outcome", row[1].get(b"outcome", b""))) in wanted:
                    yield _parse(row)
            if len(rows) < SCAN_BATCH:
                return
            start = "(" + _text(rows[-1][0])

    async def cited_by(self, entry_id: str, *, since: float | None = None) -> list[str]:
        """Question ids whose answers cited `entry_id` (default: in the cited-by window), oldest first."""
        floor = time.time() - self.cited_window_s if since is None else since
        return [_text(m) for m in await self.redis.zrangebyscore(keys.cited_by_key(entry_id), floor, "+inf")]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _parse(row) -> AuditEntry:
    entry_id, fields = row
    data = fields.get("data", fields.get(b"data"))
    entry = AuditEntry.model_validate_json(data)
    entry.entry_id = _text(entry_id)
    return entry


# ---------------------------------------------------------------- for operators

CURRENT, CHANGED, REMOVED, UNKNOWN = "current", "changed since", "removed from the index", "not compared (no index)"


def check_cited(entry: AuditEntry, entry_chunks=None) -> dict[int, str]:
    """Per footnote: is the cited chunk still the one the index holds?

    `entry_chunks(entry_id)` gives the live chunks of an entry (kb_index
    Retriever.entry_chunks); None when there is no index to compare with.
    """
    if entry_chunks is None:
        return {c.n: UNKNOWN for c in entry.cited}
    status = {}
    for c in entry.cited:
        hashes = {chunk.content_hash for chunk in entry_chunks(c.entry_id)}
        status[c.n] = REMOVED if not hashes else CURRENT if c.content_hash in hashes else CHANGED
    return status


def entry_json(entry: AuditEntry, status: dict[int, str]) -> dict:
    data = entry.model_dump(mode="json")
    data["stream_id"] = entry.entry_id
    for cited in data["cited"]:
        cited["status"] = status.get(cited["n"], UNKNOWN)
    if entry.is_dm:
        data["channel"] = data["posted_channel"] = None  # the DM's channel says whose DM it is
    return data


def judgement_lines(judgement: Judgement | None) -> list[str]:
    """The judge's part of `citebot audit show`: its status, then one line per statement."""
    if judgement is None:
        return []
    head = f"judge       {judgement.status} · model {judgement.model or '-'}"
    if judgement.status is JudgeStatus.UNAVAILABLE:
        return [f"{head} · {judgement.error or 'no reason recorded'} (nothing was posted as verified)"]
    lines = [head]
    for s in judgement.statements:
        quote = f" · quote {s.quote!r}" if s.quote else ""
        lines.append(f"  #{s.item + 1} {s.support}{_overruled(s)} [{', '.join(s.cites)}]: {s.text}{quote}")
    return lines


def attempt_lines(attempts: list[Attempt]) -> list[str]:
    """Every try of `citebot audit show`: what it found, which one was kept, its model calls; the kept try's
    findings and verdicts are the ones above, an earlier try's are here in full."""
    lines: list[str] = []
    for a in attempts:
        calls = " · ".join(f"{c.what} {c.model or '-'} {c.ms:.0f} ms" for c in a.calls)
        kept = " (kept)" if a.kept else ""
        lines.append(f"try {a.n}{kept}  {'passed' if a.ok else f'{len(a.violations)} finding(s)'} · {calls}")
        lines += [f"  {v.kind}: {v.detail}" for v in a.violations]
        if not a.kept:
            lines += [f"  {line}" for line in judgement_lines(a.judgement)]
    return lines


def _overruled(statement: JudgedStatement) -> str:
    """Why what counts differs from what the judge said, if it does."""
    if statement.said == statement.support:
        return ""
    if statement.said == Support.SUPPORTS:
        return " (said supports; the quote is not in the blocks)"
    return f" (said {statement.said!r})" if statement.said else " (no verdict given)"


def format_entry(entry: AuditEntry, status: dict[int, str]) -> str:
    """`citebot audit show`: the entry as an operator reads it."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(entry.at))
    where = "direct message" if entry.is_dm else f"channel {entry.channel or '-'}"
    thread = f" · thread {entry.thread_ts}" if entry.thread_ts and not entry.is_dm else ""
    checks = ["verified" if entry.verified else "not verified"] + (["partial"] if entry.partial else [])
    lines = [
        f"question    {entry.question}" + ("  (truncated)" if entry.truncated else ""),
        f"id          {entry.question_id}  (audit entry {entry.entry_id or '-'})",
        f"asked       {when} · {where}{thread} · language {entry.language}",
        f"outcome     {entry.outcome}" + ("" if entry.outcome is Outcome.ERROR else f" ({', '.join(checks)})"),
    ]
    if entry.error:
        lines.append(f"error       {entry.error}")
    if entry.mode:
        lines.append(
            f"mode        {entry.mode} · model {entry.model or '-'} · audit mode {entry.audit_mode or '-'}"
            f" · {entry.regenerations} regeneration(s) · {entry.n_context} context block(s)"
            + (f" · {entry.drafts_cut} draft(s) cut at the output cap" if entry.drafts_cut else "")
        )
        lines.append("violations  " + ("none" if not entry.violations else f"{len(entry.violations)}"))
        lines += [f"  {v.kind}: {v.detail}" for v in entry.violations]
        lines.append("fix-ups     " + (", ".join(entry.json_fixups) or "none"))
        lines += judgement_lines(entry.judgement)
        lines += attempt_lines(entry.attempts)
    if entry.answerability:
        a = entry.answerability
        verdict = "answerable" if a.get("answerable") else "refused before the model"
        lines.append(f"coverage    {verdict}: {a.get('reason', '')}")
    lines.append("cited       " + ("none" if not entry.cited else ""))
    for c in entry.cited:
        stand = f" · Stand {c.stand}" if c.stand else ""
        lines.append(f"  [{c.n}] {c.entry_id} · {c.title} · {c.section}{stand} ({c.collection})")
        lines.append(f"      content {c.content_hash or '-'} · {status.get(c.n, UNKNOWN)}")
    if entry.timings_ms:
        lines.append("timings     " + " · ".join(f"{k} {v:.1f} ms" for k, v in entry.timings_ms.items()))
    if entry.posted_ts:
        lines.append(f"posted      {'in the direct message' if entry.is_dm else entry.posted_channel} at ts {entry.posted_ts}")
    # One value per line: a line break or escape sequence in a question, a
    # draft's violation or a KB title is shown escaped, never obeyed.
    return "\n".join(clean(line.rstrip(), newlines=False) for line in lines)
