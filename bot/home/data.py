"""What the Home tab shows, read from where the bot already keeps it.

Read in the web process, not by a worker: it is a handful of Redis reads
(the user's list, one audit entry per question, the open reviews) and one
small JSON file (the index manifest), well inside Slack's 3 seconds. A job
would buy nothing: views.publish needs no trigger_id that could expire,
and a publish that fails leaves the previous view, which the next
app_home_opened replaces, so at-least-once delivery has nothing to protect.
The one scan, the gaps report, is bounded (GAP_DAYS, GAP_MAX_QUESTIONS).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis.asyncio as aioredis

from bot.config import Settings
from bot.models import Outcome
from bot.review.gaps import Gap, GapQuestion, gap_outcome, group_questions
from bot.review.reviewers import is_reviewer
from bot.store.asked import AskedIndex
from bot.store.audit import AuditTrail
from bot.store.records import Records, ReviewRecord
from kb_index.index import IndexNotFound, current_generation, open_problem, read_manifest

RECENT_QUESTIONS = 10
# The gaps report on the Home tab: the last week, and no more questions than
# can be grouped while Slack waits for the event's ack.
GAP_DAYS = 7
GAP_MAX_QUESTIONS = 1000
TOP_GAPS = 5
# Open reviews read; more than a Home tab can show (it says how many were left out).
MAX_REVIEWS = 500

PENDING = "pending"  # asked, but no outcome recorded yet


@dataclass(frozen=True)
class MyQuestion:
    text: str
    at: float
    outcome: str  # an Outcome value, or PENDING


@dataclass(frozen=True)
class KbState:
    generation: str | None = None
    entries: int = 0
    chunks: int = 0
    built_at: str | None = None
    embedder: str | None = None
    problem: str | None = None  # why nothing can be answered (no index, outdated, empty)


@dataclass
class HomeData:
    user: str
    now: float
    questions: list[MyQuestion] = field(default_factory=list)
    kb: KbState = field(default_factory=KbState)
    is_reviewer: bool = False
    reviews: list[ReviewRecord] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    # The workspace's address (auth.test's url), for links to the review cards.
    workspace_url: str | None = None
    # The collections the viewer may read (bot.access), read when a restricted review is listed: its draft
    # is previewed, with the buttons, only to a reviewer who may read every one of its sources. None: unknown.
    reads: frozenset[str] | None = None


async def read_home(user: str, *, settings: Settings, redis: aioredis.Redis, now: float | None = None,
                    reads: frozenset[str] | None = None) -> HomeData:
    """`reads`: what the user may read (bot.access), None when not checked."""
    data = HomeData(user=user, now=time.time() if now is None else now, kb=kb_state(settings.index_dir), reads=reads)
    data.questions = await my_questions(redis, user)
    if is_reviewer(settings, user):
        data.is_reviewer = True
        data.reviews = await Records(redis).open_reviews(limit=MAX_REVIEWS)
        data.gaps = await top_gaps(redis, since=data.now - GAP_DAYS * 86400, reads=reads)
    return data


async def my_questions(redis: aioredis.Redis, user: str) -> list[MyQuestion]:
    audit = AuditTrail(redis)
    out = []
    for asked in await AskedIndex(redis).recent(user, RECENT_QUESTIONS):
        entry = await audit.get(asked.question_id)
        out.append(MyQuestion(text=asked.text, at=asked.at, outcome=str(entry.outcome) if entry else PENDING))
    return out


async def top_gaps(redis: aioredis.Redis, *, since: float, reads: frozenset[str] | None = None) -> list[Gap]:
    """`reads`: a question asked where more could be read than the viewer may (a private channel of payroll
    staff) stays off their tab."""
    questions = []
    entries = AuditTrail(redis).entries(since=since, outcomes={Outcome.REFUSED, Outcome.UNCERTAIN, Outcome.ANSWERED})
    async for e in entries:
        # A direct message's text is for its asker: it never goes on anyone else's Home tab.
        if e.is_dm or (e.outcome is Outcome.ANSWERED and not e.not_covered):
            continue
        if reads is not None and e.allowed is not None and not set(e.allowed) <= reads:
            continue
        questions.append(GapQuestion(text=e.question, language=e.language, at=e.at, outcome=gap_outcome(e)))
        if len(questions) >= GAP_MAX_QUESTIONS:
            break
    return group_questions(questions)[:TOP_GAPS]


def kb_state(index_dir: Path) -> KbState:
    problem = open_problem(index_dir)
    try:
        gen_dir = current_generation(index_dir)
        manifest = read_manifest(gen_dir)
    except (IndexNotFound, OSError, json.JSONDecodeError) as exc:
        return KbState(problem=str(problem or exc))
    return KbState(
        generation=gen_dir.name,
        entries=len(manifest.get("entries") or {}),
        chunks=int(manifest.get("chunks") or 0),
        built_at=manifest.get("built_at"),
        embedder=manifest.get("embedder"),
        problem=str(problem) if problem else None,
    )
