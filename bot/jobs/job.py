"""What a job is: its kind, its payload's model per kind, and the envelope the queue stores.

The envelope (`Job`) keeps the payload as the plain JSON object it is in
Redis, so the queue and the consumer never import what a payload holds, and
a job enqueued by an older web process still parses: its payload is read
into its kind's model only where it is handled (`Job.read`). The models
name exactly the keys jobs have always carried; a key they do not know is
ignored, so a newer web process's job runs on an older worker too.

One model per kind:
    answer           AnswerPayload          a question from a mention, a DM, the assistant panel, /citebot or the shortcut
    help             HelpPayload            an empty mention or shortcut
    review_decision  ReviewDecisionPayload  a reviewer's approve / answer / dismiss
    feedback         FeedbackPayload        a 👎 with a reason
    source_changed   SourceChangedPayload   the notes under an answer whose cited entry changed
    share_answer     ShareAnswerPayload     "Post in channel" under a /citebot answer only its asker saw
    handover         HandoverPayload        "Still need help?": the people of `escalate_to` asked (bot.helpdesk)
    handover_reply   HandoverReplyPayload   a person answered in a handed-over thread

Dedupe ids are derived with `stable_id`, never with `hash()`: Python salts
str hashes per process, and two web processes (or one after a restart) must
compute the same id for the same click.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from enum import StrEnum
from typing import Any, ClassVar, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from bot.models import SlackQuestion


class JobKind(StrEnum):
    ANSWER = "answer"
    HELP = "help"
    REVIEW_DECISION = "review_decision"
    FEEDBACK = "feedback"
    SOURCE_CHANGED = "source_changed"
    SHARE_ANSWER = "share_answer"
    HANDOVER = "handover"
    HANDOVER_REPLY = "handover_reply"
    # Not a job: a stream entry the consumer could not read, dead-lettered with its raw fields.
    INVALID = "invalid"


class JobPayload(BaseModel):
    """Base of the payload models; `KIND` is the job kind each one is the payload of."""

    KIND: ClassVar[JobKind]

    @property
    def about(self) -> str:
        """What the job is about, for its log lines: a question, review or answer id."""
        raise NotImplementedError


class Ephemeral(BaseModel):
    """Where a reply only its asker sees goes: Slack's response_url of the command or shortcut."""

    response_url: str
    # The answer carries "Post in channel": never for a question asked in a DM.
    shareable: bool = False


class AnswerPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.ANSWER

    question: SlackQuestion
    # The bot's own user id: the worker reads earlier thread messages with the same eyes.
    bot_user_id: str | None = None
    # Set for /citebot and a shortcut used in a DM: the reply goes to the asker
    # alone instead of into a thread.
    ephemeral: Ephemeral | None = None
    # Asked in the assistant panel: its thread shows the worker's progress
    # (assistant.threads.setStatus) and is titled by its first question.
    assistant: bool = False
    # The channel (or, for a DM and the panel, the `dm` policy) names people to hand over to:
    # the reply carries "Still need help?" (bot.helpdesk.handover).
    handover: bool = False

    @model_serializer(mode="wrap")
    def _without_ephemeral(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A question from a mention or a DM keeps the payload answer jobs have
        # always carried, so that an older worker reads it the same.
        data: dict[str, Any] = handler(self)
        if data.get("ephemeral") is None:
            data.pop("ephemeral", None)
        if not data.get("assistant"):
            data.pop("assistant", None)
        if not data.get("handover"):
            data.pop("handover", None)
        return data

    @property
    def about(self) -> str:
        return self.question.id


class HelpPayload(AnswerPayload):
    KIND: ClassVar[JobKind] = JobKind.HELP


class ReviewDecisionPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.REVIEW_DECISION

    review_id: str
    decision: str  # a key of bot.review.desk.DECISIONS
    reviewer: str
    text: str = ""  # a written answer; empty for approve and dismiss
    save_draft: bool = False  # the written answer also goes into the KB's drafts folder

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out unless ticked: a decision without it is written as it was before
        # the field existed, the form every running process reads.
        data = handler(self)
        if not self.save_draft:
            data.pop("save_draft", None)
        return data

    @property
    def about(self) -> str:
        return self.review_id


class FeedbackPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.FEEDBACK

    answer_id: str
    user: str
    reason: str = ""

    @property
    def about(self) -> str:
        return self.answer_id


class SourceChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    entry_id: str
    n: int  # the footnote number in the answer
    change: str  # bot.answering.source_changes CHANGED or REMOVED


class SourceChangedPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.SOURCE_CHANGED

    answer_id: str
    generation: str
    changes: list[SourceChange]

    @property
    def about(self) -> str:
        return self.answer_id


class ShareAnswerPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.SHARE_ANSWER

    answer_id: str
    user: str  # who clicked: only the asker may share what only the asker saw
    # The click's response_url: the asker's copy, replaced once posted (none in jobs of older versions).
    response_url: str | None = None

    @model_serializer(mode="wrap")
    def _with_copy(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when there is none: the form every running process reads (an older
        # worker ignores the field, and posts without replacing the copy).
        data: dict[str, Any] = handler(self)
        if data.get("response_url") is None:
            data.pop("response_url", None)
        return data

    @property
    def about(self) -> str:
        return self.answer_id


def share_dedupe_id(answer_id: str, user: str) -> str:
    """A "Post in channel" click's dedupe id: one job per clicker and answer, so that nobody's click, refused or
    not, keeps the asker's own from being taken."""
    return f"share:{answer_id}:{user}"


class HandoverPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.HANDOVER

    question_id: str  # its bot.store.escalations record, claimed by the click, says the rest

    @property
    def about(self) -> str:
        return self.question_id


class HandoverReplyPayload(JobPayload):
    KIND: ClassVar[JobKind] = JobKind.HANDOVER_REPLY

    question_id: str
    user: str
    text: str
    ts: str

    @property
    def about(self) -> str:
        return self.question_id


PAYLOADS: dict[JobKind, type[JobPayload]] = {
    model.KIND: model
    for model in (AnswerPayload, HelpPayload, ReviewDecisionPayload, FeedbackPayload, SourceChangedPayload,
                  ShareAnswerPayload, HandoverPayload, HandoverReplyPayload)
}


P = TypeVar("P", bound=JobPayload)


class Job(BaseModel):
    """One unit of work: the envelope. `payload` is kept as stored; `read` gives its model."""

    kind: JobKind
    payload: dict[str, Any] = Field(default_factory=dict)
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    # 1 for the first try. Counts retries and redeliveries after a crash; the
    # worker fills it in on delivery.
    attempt: int = 1
    enqueued_at: float = Field(default_factory=time.time)

    @classmethod
    def of(cls, payload: JobPayload) -> Job:
        """The job that carries `payload`, of its model's kind."""
        return cls(kind=payload.KIND, payload=payload.model_dump(mode="json"))

    def read(self, model: type[P]) -> P:
        """The payload as `model`; ValueError when the job is of another kind (a pydantic
        ValidationError, also a ValueError, when the payload is not that model)."""
        if model.KIND is not self.kind:
            raise ValueError(f"job {self.id} is a '{self.kind}' job, not '{model.KIND}'")
        return model.model_validate(self.payload)

    def parsed(self) -> JobPayload:
        """The payload as its kind's model; ValueError for a kind without one (INVALID)."""
        model = PAYLOADS.get(self.kind)
        if model is None:
            raise ValueError(f"job {self.id} of kind '{self.kind}' has no payload model")
        return self.read(model)


class Enqueue(Protocol):
    """What the web process needs of the queue (bot.jobs.queue `JobQueue`)."""

    async def enqueue(self, job: Job, *, dedupe_id: str) -> bool: ...


def stable_id(*parts: str) -> str:
    """A short id of `parts` that every process computes the same: sha256, not the per-process `hash()`."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


__all__ = [
    "AnswerPayload",
    "Enqueue",
    "Ephemeral",
    "FeedbackPayload",
    "HandoverPayload",
    "HandoverReplyPayload",
    "HelpPayload",
    "Job",
    "JobKind",
    "JobPayload",
    "PAYLOADS",
    "ReviewDecisionPayload",
    "ShareAnswerPayload",
    "SourceChange",
    "SourceChangedPayload",
    "stable_id",
]
