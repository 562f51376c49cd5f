"""The job handlers: what a worker does with each kind of job, wiring the stages together.

The Consumer (bot.jobs.consumer) hands each job to `JobHandlers.handle`, and
a job that failed for good to `JobHandlers.on_dead`.

A job arrives at least once (bot.jobs.queue); everything it does in Slack happens
exactly once because every post goes through the Poster (bot.slack.posting),
keyed by what it answers: the question, or the review decision.

Jobs:
    answer           a question from a mention, a DM, /citebot or the message shortcut
    help             an empty mention or shortcut
    review_decision  a reviewer approved, answered or dismissed a rejected draft
    feedback         a 👎 with a reason: goes to the review channel
    source_changed   `citebot index` changed an entry a posted answer cited: a note under it
    share_answer     "Post in channel" under a /citebot answer: the stored answer, for everyone
    handover         "Still need help?": the people of `escalate_to` asked (bot.helpdesk.handover)
    handover_reply   a person answered in a handed-over thread: a review (bot.helpdesk.learning)

A question whose job carries `ephemeral` (/citebot, the shortcut in a DM) is
answered the same way, through Slack's response_url to the asker alone
(bot.slack.response_url), with no 👀: there may be no message to put it on.
A question asked in the assistant panel (`assistant`) is answered into its
thread like a DM's; instead of the 👀 its thread shows the stages as a status
and is titled by its first question (bot.slack.assistant_status).

Before retrieval a question is narrowed to the collections everyone who sees
its reply may read (bot.access, docs/DESIGN.md section 3.8): the asker's own
in a DM, the panel and /citebot; every member's in a channel. In a channel
shared with another organization with nothing it may use, nothing is posted
and the asker is told privately once; where the asker may read more than the
channel and the channel's answer fell short, a private answer is offered.

Every answer, refusal, uncertain reply and apology is recorded in the audit
trail (bot.store.audit) right after its post, with the collections it was allowed.

What the asker hears when something fails, past all tries:
    the model                     the model-down apology; also when the question
                                  used up CITEBOT_QUESTION_BUDGET_S, at once
    the entailment judge          "not sure", with the draft on the review card: nothing
                                  unjudged is posted (at once when the question's
                                  time is spent while or after the judge is asked;
                                  also when a later try ran out of time or failed
                                  on the model before it had a draft of its own)
    the model refused the request a general apology, at once: a wrong model name
                                  or key is the operator's to fix, not an outage
    who may read what             that access could not be checked (Slack did not
                                  say, past all tries): nothing answered on a guess
    the index is missing or empty that the knowledge base is not ready, at once: a
                                  retry finds the same index, and a question
                                  asked before the first `citebot index` is not
                                  a model outage
    Slack                         never an apology for the model: the reply the
                                  question earned where Slack takes it, else
                                  nothing (the log and citebot_slack_errors_total
                                  tell the operator)
    anything else                 a general apology
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from redis.exceptions import RedisError
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.access.gate import AccessGate
from bot.access.resolver import AccessUnavailable
from bot.access.scope import Scope
from bot.answer.budget import BudgetSpent, within_budget
from bot.answer.llm_http import LLMError
from bot.answer.pipeline import Pipeline
from bot.config import Settings
from bot.helpdesk.handover import Handover, with_handover
from bot.helpdesk.learning import ESCALATION_KIND, Learning
from bot.i18n import Key, message
from bot.jobs.job import AnswerPayload, HelpPayload, Job, JobKind, ShareAnswerPayload, share_dedupe_id
from bot.jobs.queue import shard_count
from bot.jobs.source_changes import note_source_changes
from bot.logs import about_question
from bot.models import Answer, JudgeStatus, Outcome, Question, SlackQuestion
from bot.review.desk import ReviewDesk
from bot.slack import replies
from bot.slack.assistant_status import PanelStatus
from bot.slack.calls import SlackError, SlackFailed, best_effort
from bot.slack.event_text import question_text
from bot.slack.posting import Poster
from bot.slack.response_url import ResponseUrlPoster
from bot.slack.shared_copy import mark_posted, tell_not_posted, tell_refused
from bot.store.audit import AuditTrail, audit_entry
from bot.store.errors import StoreUnavailable
from bot.store.escalations import Escalations
from bot.store.keys import (
    ACCESS_TOLD_PREFIX,
    ACCESS_TOLD_TTL_S,
    PRIVATE_OFFER_PREFIX,
    PRIVATE_OFFER_TTL_S,
    dedupe_key,
)
from bot.store.ledger import PostLedger
from bot.store.records import AnswerRecord, Records
from citebot_core.errors import Permanent, Retryable
from kb_index import IndexNotFound

log = logging.getLogger(__name__)

PROGRESS_REACTION = "eyes"
# Thread messages a person asked with. Not the others: an assistant panel thread's root
# ("assistant_app_thread", which Slack writes in the user's name as "Chats from …"), joins, edits.
_ASKED_SUBTYPES = (None, "file_share", "thread_broadcast")
# Earlier messages of a thread that a follow-up question takes along.
THREAD_HISTORY_MESSAGES = 6

# Where a question's replies go: into its thread, or to its asker alone.
Delivery = Poster | ResponseUrlPoster


class ModelUnavailable(Retryable):
    """The model failed this try; past the last one the asker gets the model-down apology."""


class JudgeOutage(ModelUnavailable):
    """The judge could not judge the draft this try: past the last one, the asker hears "not sure"
    and the review card carries the draft (`answer`, the pipeline's uncertain answer)."""

    def __init__(self, answer: Answer):
        super().__init__(f"judge: {answer.unverified_reason}")
        self.answer = answer


class ModelRejected(Permanent):
    """The model's server refused the request: another try would be refused the same way."""


@dataclass
class JobHandlers:
    """One handler per job kind, and what happens when a job fails for good."""

    settings: Settings
    slack: AsyncWebClient
    pipeline: Pipeline
    records: Records
    ledger: PostLedger
    reviews: ReviewDesk
    audit: AuditTrail | None = None  # None: answers are not recorded (and get no source notes)
    # Who may read what (bot.access). The worker always has one (bot.wiring); None only where a test of
    # something else hands in a scripted pipeline without an index.
    access: AccessGate | None = None
    poster: Poster = field(init=False)

    def __post_init__(self) -> None:
        self.poster = Poster(self.slack, self.ledger)
        # The assistant panel's: the same posting once, but no 👀 to add or take back
        # (`poster is self.poster` says where a reaction goes).
        self.panel_poster = Poster(self.slack, self.ledger)
        # A hand-over's review is decided as its kind says (bot.helpdesk.learning), on the desk's cards and clicks.
        self.reviews.kinds.setdefault(ESCALATION_KIND, self.learning)

    @cached_property
    def handover(self) -> Handover:
        return Handover(self.slack, self.ledger, Escalations(self.records.redis), self.settings.review_channel)

    @cached_property
    def learning(self) -> Learning:
        return Learning(self.reviews, Escalations(self.records.redis))

    async def handle(self, job: Job) -> None:
        with about_question(_question_id(job)):
            await self._dispatch(job)

    async def _dispatch(self, job: Job) -> None:
        handler = {
            JobKind.ANSWER: self.answer,
            JobKind.HELP: self.help,
            JobKind.REVIEW_DECISION: self.reviews.decide,
            JobKind.FEEDBACK: self.reviews.feedback,
            JobKind.SOURCE_CHANGED: self.source_changed,
            JobKind.SHARE_ANSWER: self.share,
            JobKind.HANDOVER: lambda j: self.handover.run(j),
            JobKind.HANDOVER_REPLY: lambda j: self.learning.person_answered(j),
        }.get(job.kind)
        if handler is None:
            raise ValueError(f"unknown job kind {job.kind!r}")
        await handler(job)

    async def on_dead(self, job: Job, error: BaseException) -> None:
        """The last try failed: whoever waits hears about it, never silence."""
        with about_question(_question_id(job)):
            log.error("job %s (%s) failed for good: %s", job.id, job.kind, error)
            if job.kind is JobKind.ANSWER:
                await self._answer_failed(job, error)
            elif job.kind is JobKind.REVIEW_DECISION:
                await self.reviews.decision_failed(job, error)
            elif job.kind is JobKind.HANDOVER:
                await self.handover.failed(job)

    def _delivery(self, payload: AnswerPayload) -> Delivery:
        if payload.ephemeral is not None:
            return ResponseUrlPoster(self.ledger, payload.ephemeral.response_url)
        return self.panel_poster if payload.assistant else self.poster

    async def _unreact(self, question: SlackQuestion, poster: Delivery) -> None:
        if poster is self.poster:
            await best_effort(self.slack.reactions_remove(channel=question.channel, timestamp=question.ts, name=PROGRESS_REACTION))

    async def _answer_failed(self, job: Job, error: BaseException) -> None:
        payload = job.read(AnswerPayload)
        question, poster = payload.question, self._delivery(payload)
        if isinstance(error, SlackFailed):
            # Slack refused the reply itself (the bot left the channel, a
            # missing scope): another post there fails the same way.
            log.error("question %s not answered: Slack said %s; an operator must fix that", question.id, error.code)
            return
        if isinstance(error, SlackError):
            await self._post_stored_reply(question, error, poster)
            return
        # A draft its judge could not judge, of this try or an earlier one: "not sure", the draft on
        # the review card, also when a later try failed on the model before it had a draft of its own.
        if isinstance(error, JudgeOutage):
            await self.answer(job, settled=error.answer)
            return
        if isinstance(error, ModelUnavailable) and (kept := await self.records.unjudged(question.id)) is not None:
            await self.answer(job, settled=kept)
            return
        if not await poster.claim_unless_posted(question.id, question.channel, question.reply_thread_ts):
            return
        await self._reply_with_apology(question, error, poster)

    def _is_private(self, payload: AnswerPayload) -> bool:
        """The reply is seen by the asker alone: a DM, the assistant panel, /citebot's ephemeral reply."""
        return payload.ephemeral is not None or payload.assistant or payload.question.is_dm

    async def _scoped(self, payload: AnswerPayload, question: SlackQuestion, poster: Delivery
                      ) -> tuple[SlackQuestion, Scope | None]:
        """The question narrowed to what every reader of its reply may read (docs/DESIGN.md, section 3.8)."""
        if self.access is None:
            return question, None
        try:
            scope = await self.access.scope(question, private=self._is_private(payload), bot_user_id=payload.bot_user_id)
        except AccessUnavailable:
            # Nothing was posted in this try: the next one need not look for a post.
            await poster.release_claim(question.id)
            raise
        allowed = scope.within(question.collections)
        log.info("collections allowed: %s", ", ".join(allowed) or "none",
                 extra={"private": self._is_private(payload), "shared_externally": scope.shared_externally})
        return question.model_copy(update={"collections": allowed}), scope

    async def _post_stored_reply(self, question: SlackQuestion, error: SlackError, poster: Delivery) -> None:
        """Slack stayed unavailable past all tries: the reply the question earned,
        if it was made, gets one more chance; an apology would blame the model."""
        record = await self.records.answer(question.id)
        if record is None or record.message is None:
            log.error("question %s not answered: Slack stayed unavailable (%s)", question.id, error.code)
            return
        channel, thread = question.channel, question.reply_thread_ts
        if await poster.claim_unless_posted(question.id, channel, thread):
            await poster.post_and_record(question.id, channel, thread, record.message, what="post the stored reply")
            log.info("stored reply posted after Slack failed (%s)", error.code)

    async def _reply_with_apology(self, question: SlackQuestion, error: BaseException, poster: Delivery) -> None:
        """The apology, with the claim on the question's post held by the caller."""
        if isinstance(error, AccessUnavailable):
            msg = replies.notice_message(Key.ACCESS_UNCHECKED, language=question.language)
        elif isinstance(error, ModelUnavailable | BudgetSpent):
            msg = replies.error_message(language=question.language)
        else:
            msg = replies.failure_message(language=question.language)
        await poster.post_and_record(question.id, question.channel, question.reply_thread_ts, msg, what="post the apology")
        metrics.QUESTIONS.labels(outcome="error").inc()
        await self._audit(question, poster, error=error)
        await self._unreact(question, poster)

    async def _reply_not_ready(self, question: SlackQuestion, error: IndexNotFound, poster: Delivery) -> None:
        log.error("question %s not answered: the knowledge base is not ready: %s", question.id, error)
        msg = replies.kb_not_ready_message(language=question.language)
        await poster.post_and_record(question.id, question.channel, question.reply_thread_ts, msg, what="post 'not ready'")
        metrics.QUESTIONS.labels(outcome="error").inc()
        await self._audit(question, poster, error=error)
        await self._unreact(question, poster)

    # ---------------------------------------------------------------- answer

    async def answer(self, job: Job, settled: Answer | None = None) -> None:
        """`settled`: the answer of the last try, posted as it is (a judge outage past all tries)."""
        payload = job.read(AnswerPayload)
        question, poster = payload.question, self._delivery(payload)
        channel, thread = question.channel, question.reply_thread_ts
        if not await poster.claim_unless_posted(question.id, channel, thread, retried=job.attempt > 1):
            # A redelivery of a job that posted (or whose doubtful post was found):
            # the try that posted may not have lived to take its 👀 back.
            await self._unreact(question, poster)
            return
        question, scope = await self._scoped(payload, question, poster)
        if scope is not None and scope.shared_externally and not question.collections and self.access is not None:
            # Slack Connect, and nothing may be used where another organization reads: no reply in the
            # channel at all, and the asker told privately once why.
            await self.access.tell_once(question, Key.EXTERNAL_CHANNEL)
            await poster.release_claim(question.id)
            await self._audit(question, poster, error="not answered: a channel shared with another organization")
            return
        status = PanelStatus(self.slack, question) if payload.assistant else None
        if poster is self.poster:
            await best_effort(self.slack.reactions_add(channel=channel, timestamp=question.ts, name=PROGRESS_REACTION))
        elif status is not None:
            await status.stage("retrieve")
        question = await self._with_thread_history(question, payload.bot_user_id)
        if status is not None:
            await status.title(question)
        try:
            answer = settled or await self._generate(question, poster, status)
        except BudgetSpent as exc:
            log.warning("%s", exc)
            metrics.LLM_ERRORS.labels(kind="BudgetSpent").inc()
            # An earlier try's draft that its judge could not judge is this question's answer ("not sure",
            # the draft on the review card); only a question that never had a draft gets the apology.
            if (settled := await self.records.unjudged(question.id)) is None:
                await self._reply_with_apology(question, exc, poster)
                return
            answer = settled
        except IndexNotFound as exc:
            await self._reply_not_ready(question, exc, poster)
            return
        if settled is None and _judge_outage(answer):
            # Kept for the tries after this one: one that runs out of time or fails on the model
            # still ends "not sure" with this draft on the review card.
            await self.records.keep_unjudged(question.id, answer)
            await poster.release_claim(question.id)
            raise JudgeOutage(answer)

        msg = self._offer_handover(self._render(answer, question), payload)
        record = AnswerRecord(
            answer_id=question.id,
            question_id=question.id,
            question=question.text,
            language=question.language,
            channel=channel,
            thread_ts=thread,
            is_dm=question.is_dm,
            asker=question.user,
            private_to=question.user if payload.ephemeral is not None else None,
            text=answer.text,
            sources=answer.sources,
            message=msg,
        )
        await self.records.save_answer(record)
        if answer.outcome is Outcome.UNCERTAIN:
            # The card first: once the asker's reply is recorded, a retry of
            # this job ends early and would never post a card that failed for
            # a moment. A card Slack refuses for good is noted on the review
            # (`citebot review list`) and the asker still gets the reply.
            await self.reviews.open_review(question, answer, private_to=record.private_to)
        started = time.perf_counter()
        # Slack may refuse a long answer (msg_too_long): a compact form then,
        # with the footnotes and the Sources button, rather than nothing.
        forms = [msg]
        if answer.outcome is Outcome.ANSWERED:
            compact = replies.answer_message(answer, language=question.language, ref=question.id, compact=True)
            forms.append(self._offer_handover(compact, payload))
        shown = forms
        if payload.ephemeral is not None and payload.ephemeral.shareable and answer.outcome is Outcome.ANSWERED:
            # The button only on the asker's copy: the record keeps the answer as everyone may see it.
            shown = [replies.with_post_in_channel(f, ref=question.id, language=question.language) for f in forms]
        _, posted = await poster.post_and_record(question.id, channel, thread, *shown, what="post the answer")
        if (kept := forms[shown.index(posted)]) is not msg:
            await self.records.replace_answer(record.model_copy(update={"message": kept}))
        answer.timings_ms["post"] = round((time.perf_counter() - started) * 1000, 3)
        metrics.observe_answer(answer.outcome, answer.timings_ms, answer.regenerations)
        log.info(
            "answered: %s",
            answer.outcome,
            extra={"citations": answer.citations, "violations": [v.kind for v in answer.violations],
                   "regenerations": answer.regenerations, "timings_ms": answer.timings_ms},
        )
        await self._audit(question, poster, answer)
        await self._unreact(question, poster)
        if scope is not None and self.access is not None and not self._is_private(payload):
            policy = payload.question.collections
            more = scope.more_for_asker if policy is None else scope.more_for_asker & set(policy)
            own = sorted(scope.asker if policy is None else scope.asker & set(policy))
            if more and answer.outcome is not Outcome.ANSWERED:
                # The asker may read more than everyone here: a private answer, never restricted text in the channel.
                await self._answer_privately(question, own)
            elif more:
                await self._offer_private(payload.question, own, more)

    async def _offer_private(self, question: SlackQuestion, own: list[str], more: frozenset[str] | set[str]) -> None:
        """The channel's answer was a good one, but the best passage for the asker's own access lies in a
        collection the channel may not read: a note only they see, with "Answer privately" (bot.inbound.listeners
        asks the same question again from their own access, answered to them alone). Best effort, once."""
        if not question.user:
            return
        try:
            retrieval = await asyncio.to_thread(self.pipeline.retrieve, question.model_copy(update={"collections": own}))
        except IndexNotFound:
            return
        if not retrieval.hits or retrieval.hits[0].collection not in more:
            return
        if not await self.records.redis.set(f"{PRIVATE_OFFER_PREFIX}{question.id}", question.model_dump_json(),
                                            nx=True, ex=PRIVATE_OFFER_TTL_S):
            return
        msg = replies.better_in_private_message(question.id, language=question.language)
        await best_effort(self.slack.chat_postEphemeral(
            channel=question.channel, user=question.user, thread_ts=question.reply_thread_ts, **msg))
        log.info("private answer offered to the asker", extra={"best_in": retrieval.hits[0].collection})

    async def _answer_privately(self, question: SlackQuestion, collections: list[str]) -> None:
        """The answer from what the asker alone may read, as a message only they see in the thread (once per
        question: a redelivered job finds the key). Best effort: the channel has its reply already."""
        if not question.user or self.access is None:
            return
        if not await self.records.redis.set(f"{ACCESS_TOLD_PREFIX}private:{question.id}", "1", nx=True,
                                            ex=ACCESS_TOLD_TTL_S):
            return
        private = question.model_copy(update={"collections": collections})
        try:
            answer = await within_budget(self.pipeline.answer(private), self.settings.question_budget_s)
        except (LLMError, BudgetSpent, IndexNotFound) as exc:
            log.warning("no private answer for question %s: %s", question.id, exc)
            return
        if answer.outcome is not Outcome.ANSWERED:
            return
        ref = f"{question.id}#private"
        msg = replies.answer_message(answer, language=question.language, ref=ref)
        await self.records.save_answer(AnswerRecord(
            answer_id=ref, question_id=question.id, question=question.text, language=question.language,
            channel=question.channel, thread_ts=question.reply_thread_ts, is_dm=False, asker=question.user,
            private_to=question.user, text=answer.text, sources=answer.sources, message=msg))
        intro = replies.notice_message(Key.MORE_IN_PRIVATE, language=question.language)
        await best_effort(self.slack.chat_postEphemeral(
            channel=question.channel, user=question.user, thread_ts=question.reply_thread_ts,
            text=f"{intro['text']}\n\n{msg['text']}", blocks=[*intro["blocks"], *msg["blocks"]]))
        log.info("private answer offered to the asker", extra={"collections": collections})
        if self.audit is None:
            return
        try:
            # Its own entry: what this answer, seen by the asker alone, was allowed (the channel's says the channel's).
            entry = audit_entry(private, answer, posted=None)
            entry.question_id, entry.private_to, entry.posted_channel = ref, question.user, question.channel
            await self.audit.record(entry)
        except (StoreUnavailable, RedisError, OSError) as exc:
            log.error("audit entry of private answer %s not recorded: %s", ref, exc)

    async def _generate(self, question: Question, poster: Delivery, status: PanelStatus | None = None) -> Answer:
        """The pipeline's answer within what is left of the question's time budget.

        The budget runs from the first model call over all tries, and every
        model call of this try sees what is left of it (bot.answer.budget): a
        model that hangs would otherwise keep the asker waiting for every
        try's timeouts and backoffs in turn (minutes at the default timeout).
        """
        budget = self.settings.question_budget_s
        spent = f"question {question.id} used up its time budget of {budget:g}s"
        left = await self.records.question_started(question.id) + budget - time.time()
        if left <= 0:
            raise BudgetSpent(spent)
        try:
            answering = self.pipeline.answer(question, progress=status.stage) if status else self.pipeline.answer(question)
            return await within_budget(answering, left)
        except BudgetSpent as exc:
            raise BudgetSpent(f"{spent} ({exc})") from None
        except LLMError as exc:
            metrics.LLM_ERRORS.labels(kind=type(exc).__name__).inc()
            # Nothing was posted in this try: the next one need not look for a post.
            await poster.release_claim(question.id)
            if not exc.retryable:
                raise ModelRejected(f"LLM: {exc}") from exc
            raise ModelUnavailable(f"LLM: {exc}", retry_after=self._retry_after(exc)) from exc

    def _retry_after(self, exc: LLMError) -> float | None:
        """The model's Retry-After, unless it is longer than the bot will wait: then
        this try is given up and the next one comes after the usual backoff."""
        wait = getattr(exc, "retry_after", None)
        cap = self.settings.llm_max_retry_after_s
        if wait is not None and wait > cap:
            log.warning("the model asked to retry after %gs, more than CITEBOT_LLM_MAX_RETRY_AFTER_S=%gs: "
                        "not waited for", wait, cap)
            return None
        return wait

    @staticmethod
    def _offer_handover(msg: dict[str, Any], payload: AnswerPayload) -> dict[str, Any]:
        """"Still need help?" under any reply where the question's policy names people (not under a reply
        only its asker sees: there is no thread to hand over in)."""
        if not payload.handover or payload.ephemeral is not None:
            return msg
        return with_handover(msg, question_id=payload.question.id, language=payload.question.language)

    def _render(self, answer: Answer, question: Question) -> dict[str, Any]:
        language = question.language
        limit = self.settings.max_question_chars if question.truncated else None
        if answer.outcome is Outcome.UNCERTAIN:
            return replies.uncertain_message(language=language, question_limit=limit)
        if answer.outcome is Outcome.REFUSED:
            return replies.refusal_message(language=language, question_limit=limit)
        return replies.answer_message(answer, language=language, ref=question.id)

    async def _audit(
        self, question: SlackQuestion, poster: Delivery, answer: Answer | None = None, *,
        error: BaseException | str | None = None,
    ) -> None:
        """After the post: the reply is in Slack already, so a lost audit entry is
        logged, not retried (a retry would find the post recorded and stop)."""
        if self.audit is None:
            return
        try:
            posted = await poster.where_posted(question.id)
            await self.audit.record(audit_entry(question, answer, posted=posted, error=error))
        except (StoreUnavailable, RedisError, OSError) as exc:
            log.error("audit entry of question %s not recorded: %s", question.id, exc)

    async def source_changed(self, job: Job) -> None:
        await note_source_changes(job, slack=self.slack, records=self.records, audit=self.audit)

    async def help(self, job: Job) -> None:
        payload = job.read(HelpPayload)
        question, poster = payload.question, self._delivery(payload)
        channel, thread = question.channel, question.reply_thread_ts
        if await poster.claim_unless_posted(question.id, channel, thread):
            await poster.post_and_record(question.id, channel, thread, replies.help_message(language=question.language),
                                         what="post the help message")

    async def share(self, job: Job) -> None:
        """A /citebot answer posted for everyone: the stored record, no model call, once per answer."""
        payload = job.read(ShareAnswerPayload)
        record = await self.records.answer(payload.answer_id)
        # The button is only on the asker's own copy; a click that names an answer
        # that is gone, private, or someone else's is not ours to post.
        if record is None or record.message is None or record.is_dm or record.asker != payload.user:
            log.warning("post in channel of answer %s ignored: no such shareable answer of %s", payload.answer_id, payload.user)
            gone = record is None or record.message is None or record.is_dm
            await self._refuse_share(payload, record, Key.ANSWER_NOT_SHAREABLE if gone else Key.NOT_YOURS_TO_POST)
            return
        key = share_key(record.answer_id)
        cited = {s.collection for s in record.sources}
        if self.access is not None and cited and await self.poster.where_posted(key) is None \
                and not cited <= await self.access.channel_reads(record.channel):
            # Answered from what the asker alone may read: the channel gets it only if everyone in it may.
            log.warning("post in channel of answer %s refused: not everyone in %s may read %s",
                        record.answer_id, record.channel, ", ".join(sorted(cited)))
            await self._refuse_share(payload, record, Key.NOT_OPEN_TO_CHANNEL)
            return
        if await self.poster.claim_unless_posted(key, record.channel, None):
            msg = replies.shared_message(record.message, asker=record.asker, language=record.language)
            try:
                await self.poster.post_and_record(key, record.channel, None, msg, what="post the answer in the channel")
            except SlackFailed as exc:
                if payload.response_url:
                    await tell_not_posted(payload.response_url, record, exc.code)
                raise
        # Also when posted by an earlier try: that try may have died before the copy was replaced.
        if payload.response_url and (posted := await self.poster.where_posted(key)) is not None:
            await mark_posted(payload.response_url, record, posted, self.reviews.workspace)

    async def _refuse_share(self, payload: ShareAnswerPayload, record: AnswerRecord | None, reason: Key) -> None:
        """The clicker hears why, privately; their click is forgotten, so that a later one (once the channel's
        members changed, or the asker's own after someone else's) is a job of its own again."""
        language = record.language if record is not None else self.settings.language
        if payload.response_url and record is not None and not record.is_dm:
            await tell_refused(payload.response_url, record.channel, message(reason, language), language)
        dedupe = dedupe_key(share_dedupe_id(payload.answer_id, payload.user), shard_count(self.settings.redis))
        await self.records.redis.delete(dedupe)

    # ---------------------------------------------------------------- thread history

    async def _with_thread_history(self, question: SlackQuestion, bot_user_id: str | None) -> SlackQuestion:
        """A follow-up ("and for part-timers?") takes the thread's earlier questions along."""
        if not question.thread_ts or question.thread_ts == question.ts or question.history:
            return question
        try:
            resp = await self.slack.conversations_replies(
                channel=question.channel, ts=question.thread_ts, limit=THREAD_HISTORY_MESSAGES * 3
            )
        except Exception as exc:  # noqa: BLE001 - history is a nicety; answer without it
            log.warning("no thread history for question %s: %s", question.id, exc)
            return question
        messages: list[dict[str, Any]] = resp.get("messages", [])
        earlier = [
            question_text(m.get("text") or "", bot_user_id).strip()
            for m in messages
            if not m.get("bot_id") and isinstance(m.get("text"), str) and m.get("subtype") in _ASKED_SUBTYPES
            and float(m.get("ts", 0)) < float(question.ts)
        ]
        history = [text for text in earlier if text][-THREAD_HISTORY_MESSAGES:]
        return question.model_copy(update={"history": history})


def share_key(answer_id: str) -> str:
    """The post ledger's key of an answer posted in its channel with "Post in channel"."""
    return f"share:{answer_id}"


def _question_id(job: Job) -> str | None:
    try:
        return job.parsed().about
    except ValueError:
        return None  # not readable: the handler says why, with the job id


def _judge_outage(answer: Answer) -> bool:
    """Did the judge fail to judge for a reason another try may not have? Not the question's time
    spent (while the judge was asked, or before it could be): that ends "not sure" at once, as
    every later try would find no time left."""
    judgement = answer.judgement
    return (answer.outcome is Outcome.UNCERTAIN and judgement is not None and judgement.status is JudgeStatus.UNAVAILABLE
            and not (judgement.error or "").startswith(BudgetSpent.__name__))
