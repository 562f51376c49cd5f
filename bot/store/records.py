"""What the bot remembers in Redis besides the queue: posts, posted answers, reviews, feedback.

- A post record says that the message for a key (a question, a review card,
  a review decision) is in Slack, and where: written by the post ledger
  (bot.store.ledger) right after the post, read back by the next run of the job.
- An answer record lets the web process open the Sources modal when someone
  clicks the button: the modal must open within Slack's 3-second trigger
  window, so the passages come from Redis, not from a new search.
- A review record holds a rejected draft until a reviewer decides; the
  buttons on the review card carry only its id.
- Feedback is appended to a bounded stream.
- An unjudged answer is the uncertain answer of a try whose judge could not
  judge the draft, for a later try that cannot finish (bot.answering.answerer).

Key names live in bot.store.keys with the queue's.
"""

from __future__ import annotations

import json
import time
import uuid
from enum import StrEnum
from typing import Any

import redis.asyncio as aioredis
from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python
from redis.typing import EncodableT, FieldT

from bot.models import Answer, Source, Violation
from bot.store import keys

# What the ledger records as the ts of a message that has none anyone can see (one sent to a response_url).
EPHEMERAL_TS = "ephemeral"


class PostRecord(BaseModel):
    question_id: str  # the post's key: a question id, or a review card's or decision's key
    channel: str
    ts: str
    posted_at: float


class AnswerRecord(BaseModel):
    answer_id: str
    question_id: str
    question: str
    language: str
    channel: str
    thread_ts: str | None = None
    is_dm: bool = False
    asker: str | None = None  # who asked: a 👎 card names them apart from who flagged the answer
    # Answered to its asker alone (/citebot): anything that follows goes to them alone too.
    private_to: str | None = None
    text: str = ""  # the answer as posted, with its [n] markers, for a 👎 card
    sources: list[Source] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
    # The message as first posted ({"text", "blocks"}): when a cited entry
    # changes, bot.answering.source_changes rebuilds it with a note and chat.updates it.
    message: dict[str, Any] | None = None
    # Footnote number -> "changed" | "removed": the notes the message carries now.
    source_notes: dict[str, str] = Field(default_factory=dict)


def _to_json(record: AnswerRecord | ReviewRecord) -> str:
    """JSON of a record, sources with their passages (which the public answer JSON leaves out)."""
    data = record.model_dump(mode="json")
    data["sources"] = [
        s.model_dump(mode="json") | {"passage": s.passage, "collection": s.collection, "content_hash": s.content_hash}
        for s in record.sources
    ]
    return json.dumps(data, ensure_ascii=False)


def _everything(value: Any) -> Any:
    """`value` as JSON, its models with the fields their public JSON leaves out (an answer's outcome,
    judgement and blocks, a source's collection and passage: what a review card needs)."""
    if isinstance(value, BaseModel):
        return {name: _everything(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, list | tuple):
        return [_everything(v) for v in value]
    if isinstance(value, dict):
        return {k: _everything(v) for k, v in value.items()}
    return to_jsonable_python(value)


class ReviewStatus(StrEnum):
    OPEN = "open"
    APPROVED = "approved"
    ANSWERED = "answered"
    DISMISSED = "dismissed"


class ReviewRecord(BaseModel):
    review_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    question_id: str
    question: str
    language: str = "en"
    channel: str  # where the asker asked (a DM channel for private questions)
    thread_ts: str | None = None
    is_dm: bool = False
    asker: str | None = None  # None for DMs: a private question's card never names its asker
    # The asker of a question answered to them alone (/citebot): the decision goes to
    # them with chat.postEphemeral, never into the channel. Not shown on the card.
    private_to: str | None = None
    # Who reads the decision of a DM's or private question (its asker): their access is checked again when a
    # reviewer decides. Never shown on the card (asker stays None for a DM).
    reader: str | None = None
    flagged_by: str | None = None  # feedback: who gave the 👎 (None for DMs, as the asker)
    draft: str = ""
    violations: list[Violation] = Field(default_factory=list)
    # One line per try, what held it back (Attempt.summary): the first draft's finding that cost the
    # regeneration is on the card too, not only the last try's.
    tries: list[str] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    kind: str = "uncertain"  # "uncertain" (rejected draft) or "feedback" (a 👎 with a reason)
    feedback_reason: str | None = None
    # Not every member of the review channel may read the draft's collections (bot.access): the card shows
    # neither draft nor sources, and says so.
    restricted: bool = False
    # The collections its text concerns beyond its sources' (a hand-over's: those the bot's reply drew on).
    collections: list[str] = Field(default_factory=list)
    status: ReviewStatus = ReviewStatus.OPEN
    created_at: float = Field(default_factory=time.time)
    card_channel: str | None = None
    card_ts: str | None = None
    # Why the card is not in the review channel (a Slack error code such as
    # "not_in_channel"): the review stays open and `citebot review list` shows it.
    card_error: str | None = None
    # Why the last decision taken on the Home tab (a review without a card) was not
    # posted: shown there, where the reviewer clicked, until the next decision.
    decision_error: str | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    final_answer: str | None = None


# Scripts, not MULTI: a cluster client has no transactions, and a script on
# keys of one hash slot is atomic on one server and in a cluster alike.

# KEYS: review key, open reviews (both "{reviews}"). ARGV: record json, ttl, review id, created at, open?
SAVE_REVIEW_LUA = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
else
  redis.call('ZREM', KEYS[2], ARGV[3])
end
"""

# KEYS: question started key. ARGV: now, ttl. The first try's start, whoever asks.
QUESTION_STARTED_LUA = """
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2])
return redis.call('GET', KEYS[1])
"""


class Records:
    """Answer and review records in Redis. All methods are small, atomic where it matters."""

    def __init__(self, redis: aioredis.Redis):
        self.redis = redis
        self._save_review = redis.register_script(SAVE_REVIEW_LUA)
        self._question_started = redis.register_script(QUESTION_STARTED_LUA)

    # ------------------------------------------------------------ answers

    async def save_answer(self, record: AnswerRecord) -> None:
        await self.redis.set(keys.answer_key(record.answer_id), _to_json(record), ex=keys.ANSWER_TTL_S)

    async def replace_answer(self, record: AnswerRecord) -> None:
        """Rewrites a saved answer record without extending its life (a note is not a new
        answer), and never brings back one that expired meanwhile."""
        await self.redis.set(keys.answer_key(record.answer_id), _to_json(record), keepttl=True, xx=True)

    async def answer(self, answer_id: str) -> AnswerRecord | None:
        raw = await self.redis.get(keys.answer_key(answer_id))
        return AnswerRecord.model_validate_json(raw) if raw else None

    # ------------------------------------------------------------ reviews

    async def save_review(self, record: ReviewRecord) -> None:
        is_open = "1" if record.status is ReviewStatus.OPEN else "0"
        await self._save_review(
            keys=[keys.review_key(record.review_id), keys.OPEN_REVIEWS_ZSET],
            args=[_to_json(record), keys.REVIEW_TTL_S, record.review_id, repr(record.created_at), is_open],
        )

    async def review(self, review_id: str) -> ReviewRecord | None:
        raw = await self.redis.get(keys.review_key(review_id))
        return ReviewRecord.model_validate_json(raw) if raw else None

    async def claim_decision(self, review_id: str, reviewer: str) -> bool:
        """True for the one click that decides; a second reviewer clicking at the same moment gets False."""
        return bool(await self.redis.set(keys.review_decision_key(review_id), reviewer, nx=True, ex=keys.REVIEW_TTL_S))

    async def release_decision(self, review_id: str) -> None:
        """The decision could not be carried out (Slack down): let the next click try again."""
        await self.redis.delete(keys.review_decision_key(review_id))

    async def open_reviews(self, limit: int = 100) -> list[ReviewRecord]:
        ids = await self.redis.zrange(keys.OPEN_REVIEWS_ZSET, 0, limit - 1)
        out = []
        for rid in ids:
            record = await self.review(rid.decode() if isinstance(rid, bytes) else rid)
            if record is not None:
                out.append(record)
        return out

    # ------------------------------------------------------------ time per question

    async def question_started(self, question_id: str) -> float:
        """When work on the question began (its first model call), the same for all its tries:
        the question's time budget runs from there, whichever worker runs the try."""
        key = keys.question_started_key(question_id)
        started = await self._question_started(keys=[key], args=[repr(time.time()), keys.QUESTION_STARTED_TTL_S])
        return float(started)

    async def keep_unjudged(self, question_id: str, answer: Answer) -> None:
        """The uncertain answer of a try whose judge could not judge its draft, for the tries after it."""
        data = json.dumps(_everything(answer), ensure_ascii=False)
        await self.redis.set(keys.unjudged_key(question_id), data, ex=keys.QUESTION_STARTED_TTL_S)

    async def unjudged(self, question_id: str) -> Answer | None:
        """What `keep_unjudged` kept for the question; None when no try had a draft its judge could not judge."""
        raw = await self.redis.get(keys.unjudged_key(question_id))
        return None if raw is None else Answer.model_validate_json(raw)

    # ------------------------------------------------------------ feedback

    async def add_feedback(self, answer_id: str, user: str, vote: str, reason: str | None = None) -> None:
        fields: dict[FieldT, EncodableT] = {"answer_id": answer_id, "user": user, "vote": vote, "reason": reason or "", "at": str(time.time())}
        await self.redis.xadd(keys.FEEDBACK_STREAM, fields, maxlen=keys.FEEDBACK_MAXLEN, approximate=True)


def shown_collections(record: ReviewRecord) -> set[str]:
    """The collections a review's card or Home tab entry would show text of: its sources' and its own."""
    return {s.collection for s in record.sources} | set(record.collections)
