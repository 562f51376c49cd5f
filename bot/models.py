"""The values passed between the answering stages.

Question -> (retrieve) ChunkResults -> Evidence -> (generate) Draft -> (verify)
Verdict -> Answer. Each stage takes and returns these, nothing else, so every
stage can be tested on its own.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from kb_index import ChunkResult


class AnswerMode(StrEnum):
    CITATIONS = "citations"  # inline [KB-ID] after each statement
    CLAIMS = "claims"  # JSON claim lattice with E1..En evidence pointers


class AuditMode(StrEnum):
    STRICT = "STRICT"  # every claim verified, no violation
    HYBRID = "HYBRID"  # some claims verified, only claim-local violations
    UNGROUNDED = "UNGROUNDED"  # nothing usable: treated like a failed verification


class Outcome(StrEnum):
    ANSWERED = "answered"
    REFUSED = "refused"  # the KB has nothing on it (or the model said so)
    UNCERTAIN = "uncertain"  # verification failed after the regeneration
    ERROR = "error"  # the model or Slack failed past all retries


def clip_question(text: str, limit: int) -> tuple[str, bool]:
    """The question as answered, and whether it had to be cut to `limit` characters."""
    text = text.strip()
    return (text[:limit], True) if len(text) > limit else (text, False)


class Question(BaseModel):
    """A question as the pipeline sees it: from `citebot ask`, or the part of a `SlackQuestion` it needs."""

    text: str
    language: str = "en"
    collections: list[str] | None = None  # None: every collection
    history: list[str] = Field(default_factory=list)  # earlier thread messages, oldest first
    id: str = ""
    truncated: bool = False  # the text was cut to the maximum question length


class SlackQuestion(Question):
    """A question asked in Slack: where it was asked, so that the reply can go there.

    Its own type, so that code that replies (the job handlers, the review
    desk, the audit trail) cannot be handed a question without a place to
    reply to. The JSON is the flat one answer jobs have always carried.
    """

    channel: str
    ts: str  # the asker's message
    user: str | None = None  # None for an event without one: nobody to name on a review card
    thread_ts: str | None = None  # the thread the question was asked in, if any
    is_dm: bool = False

    @property
    def reply_thread_ts(self) -> str | None:
        """Where replies go. Channels: always in a thread. DMs: in the DM itself, unless asked in a thread."""
        if self.is_dm:
            return self.thread_ts
        return self.thread_ts or self.ts


class Evidence(BaseModel):
    """One prompt block. `pointer_id` (E1..En) is what the model cites in claims
    mode; `evidence_id` is content-addressed, stable across prompts."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    block: int  # 1-based position in the prompt
    pointer_id: str
    evidence_id: str
    chunk: ChunkResult

    @property
    def entry_id(self) -> str:
        return self.chunk.entry_id

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def source_role(self) -> str:
        return self.chunk.source_role


class Violation(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str  # e.g. UNKNOWN_ID, NO_CITATION, NUMBER_NOT_IN_SOURCE, SCHEMA_INVALID, JUDGE_NOT_STATED
    detail: str
    claim: int | None = None  # claims mode: 0-based claim index; citations mode: sentence index
    # A finding of the alignment heuristics (a bound, a negation, a number that the matching
    # sentence words otherwise) rather than a plain fact (an unknown id, a number stated
    # nowhere): the entailment judge, when on, may clear it by showing the support (docs/DESIGN.md 3.6).
    soft: bool = False


# The entailment judge's violation kinds (bot.answer.judge): the cited blocks say
# the opposite, or the judge could not show (by a verbatim quote) that they say it.
JUDGE_CONTRADICTS = "JUDGE_CONTRADICTS"
JUDGE_NOT_STATED = "JUDGE_NOT_STATED"


class Support(StrEnum):
    """What the entailment judge may say about a statement and the blocks it cites."""

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    NOT_STATED = "not_stated"


class JudgeStatus(StrEnum):
    PASSED = "passed"  # every statement supported, each with a quote found in its blocks
    FAILED = "failed"  # some statement contradicted or not stated: its violations are in the verdict
    UNAVAILABLE = "unavailable"  # no usable reply (model down, timeout, not the schema): nothing is posted as verified


class JudgedStatement(BaseModel):
    """One sentence (citations mode) or claim (claims mode) as the judge saw and judged it."""

    item: int  # the sentence or claim index, as in Violation.claim
    text: str
    cites: list[str] = Field(default_factory=list)  # as the draft cites: KB-IDs, or E1..En in claims mode
    said: str = ""  # the judge's reply for it, as given; "" when it gave none
    quote: str = ""
    quote_found: bool = False  # the quote is in one of the cited blocks (bot.answer.verify.judgement)
    support: Support = Support.NOT_STATED  # what counts: SUPPORTS only with a quote found


class Judgement(BaseModel):
    status: JudgeStatus
    model: str = ""
    statements: list[JudgedStatement] = Field(default_factory=list)
    error: str | None = None  # why the judge was unavailable


class Claim(BaseModel):
    text: str
    evidence_ids: list[str]
    verified: bool = False


class Verdict(BaseModel):
    ok: bool
    refusal: bool = False  # the draft is the model's refusal (counts as ok)
    violations: list[Violation] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)  # KB-IDs in order of first use
    audit_mode: AuditMode | None = None  # claims mode only
    claims: list[Claim] = Field(default_factory=list)  # claims mode only
    json_fixups: list[str] = Field(default_factory=list)  # claims mode only
    judgement: Judgement | None = None  # the entailment judge's, when it ran on this draft
    # Sentences (or claims) that say what the knowledge base does not cover: a partial
    # refusal, not checked, not judged, shown as such (bot.answer.verify.not_covered).
    not_covered: list[str] = Field(default_factory=list)


class GenerationRequest(BaseModel):
    """What a backend gets. Chat backends send `messages`; the extractive
    backend reads `question` and `evidence` directly."""

    messages: list[dict[str, str]]
    mode: AnswerMode
    question: str
    evidence: list[Evidence]
    language: str = "en"
    json_schema: dict[str, Any] | None = None  # claims mode: constrain the output
    max_tokens: int | None = None  # the output cap; None: the backend's (CITEBOT_LLM_MAX_TOKENS or its default)
    # Retrieval refused the question but found something near it (kb_index.answerability's
    # `near`): only the extractive backend is asked, and it quotes the nearest passages under
    # the line that the knowledge base may not answer the question as asked.
    nearest_only: bool = False


class ModelCall(BaseModel):
    """One call to a model (or the extractive backend) for an attempt, and how long it took."""

    what: str  # "generate" or "judge"
    model: str
    ms: float


class Attempt(BaseModel):
    """One try at the answer: the draft, what the sound checks and the judge found, and the calls it cost.
    `citebot ask --json` and the audit trail keep every try, so the finding that cost a regeneration is
    never lost behind the regeneration's own."""

    n: int  # 1: the first draft; 2: the regeneration
    draft: str
    truncated: bool = False  # stopped at the output cap
    ok: bool  # passed every check (a refusal counts as passing)
    kept: bool = False  # the try the answer was made from
    violations: list[Violation] = Field(default_factory=list)
    judgement: Judgement | None = None  # the judge's verdicts with their quotes, when it ran on this try
    calls: list[ModelCall] = Field(default_factory=list)

    def summary(self) -> str:
        """One line for people: "try 1: NUMBER_NOT_IN_SOURCE: '42' is not in … (+1 more)", or "try 2: passed"."""
        if not self.violations:
            return f"try {self.n}: passed"
        first = self.violations[0]
        more = f" (+{len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
        return f"try {self.n}: {first.kind}: {first.detail}{more}"


class Draft(BaseModel):
    text: str  # reasoning blocks already stripped
    model: str
    raw: str = ""  # as the backend returned it
    truncated: bool = False  # the model stopped at the output cap, not at the end of its answer
    # The backend's own line before the verified text, in the bot's words, not checked (the
    # extractive backend: "The passages of the knowledge base closest to your question:"); empty for a model's draft.
    lead: str = ""
    # What the backend itself says the knowledge base does not answer (the extractive backend's
    # near-topic question): counted in the gaps report as the verifiers' not_covered is.
    not_covered: list[str] = Field(default_factory=list)


class Source(BaseModel):
    n: int
    id: str
    title: str
    section: str
    stand: str | None = None
    url: str | None = None
    page: int | None = None  # the page the cited section starts on (PDF)
    passage: str = Field(default="", exclude=True)  # for the Sources modal, not the JSON
    collection: str = Field(default="default", exclude=True)
    content_hash: str = Field(default="", exclude=True)


class Answer(BaseModel):
    """The pipeline's result; `model_dump(mode="json")` is the JSON of `citebot ask --json`."""

    question: str
    answer: str  # the body: the answer itself, or the bot's own sentence (refusal, uncertain, apology)
    # The bot's notes on the answer, in order (the answer is partial, what it does not
    # cover was reported, the question was cut): kept apart from the body so that each
    # surface can set them apart, and shortening a long answer never cuts one off.
    notes: list[str] = Field(default_factory=list, exclude=True)
    verified: bool
    refused: bool
    citations: list[str] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    mode: AnswerMode = AnswerMode.CITATIONS
    audit_mode: AuditMode | None = None
    violations: list[Violation] = Field(default_factory=list)
    regenerations: int = 0
    # Every try at this answer, in order (none for a question refused before a model was asked).
    attempts: list[Attempt] = Field(default_factory=list)
    n_context: int = 0
    draft: str | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # Retrieval's decision whether the KB covers the question (kb_index.answerability).
    answerability: dict[str, Any] | None = None
    # What the answer says the KB does not cover (a partial refusal: bot.answer.verify.not_covered),
    # shown to the asker as such and counted in the gaps report.
    not_covered: list[str] = Field(default_factory=list)
    # Why the answer is not verified, when it is not: its statements were not checked against the
    # sources (CITEBOT_JUDGE=off), or the judge could not judge (down, timed out, an unreadable reply,
    # the question's time spent). None for a verified answer and for a draft the checks rejected.
    unverified_reason: str | None = None
    outcome: Outcome = Field(default=Outcome.ANSWERED, exclude=True)
    partial: bool = Field(default=False, exclude=True)  # HYBRID: only the verified claims
    model: str = Field(default="", exclude=True)
    json_fixups: list[str] = Field(default_factory=list, exclude=True)
    drafts_cut: int = Field(default=0, exclude=True)  # drafts that stopped at the output cap (Draft.truncated)
    # The entailment judge's verdicts on the kept draft (None: the judge is off or
    # did not run); for the audit trail, not part of `citebot ask --json`.
    judgement: Judgement | None = Field(default=None, exclude=True)
    # Every block the model was shown, numbered as in the prompt: what a
    # reviewer of a rejected draft needs to see, and the audit trail records.
    context: list[Source] = Field(default_factory=list, exclude=True)

    @property
    def text(self) -> str:
        """The body with its notes as trailing paragraphs: the answer as plain text shows it."""
        return "\n\n".join([self.answer, *self.notes])

    # `citebot ask --json` has always carried the notes in "answer" (docs/DESIGN.md 3.4).
    @field_serializer("answer")
    def _answer_with_notes(self, body: str) -> str:
        return self.text
