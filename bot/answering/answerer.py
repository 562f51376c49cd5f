"""The answer job: a question answered where it was asked, from what every reader of the reply may read.

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

import logging
import time
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.access.gate import AccessGate
from bot.access.resolver import AccessUnavailable
from bot.access.scope import Scope
from bot.answer.budget import BudgetSpent, within_budget
from bot.answer.llm_http import LLMError
from bot.answer.pipeline import Pipeline
from bot.answering.delivery import Deliveries, Delivery, OwnReplies, Recorder
from bot.answering.errors import JudgeOutage, ModelRejected, ModelUnavailable, judge_outage
from bot.answering.private import PrivateAnswers
from bot.config import Settings
from bot.helpdesk.handover import with_handover
from bot.i18n import Key
from bot.jobs.job import AnswerPayload, Job
from bot.models import Answer, Outcome, Question, SlackQuestion
from bot.review.desk import ReviewDesk
from bot.slack import replies
from bot.slack.assistant_status import PanelStatus
from bot.slack.calls import SlackError, SlackFailed
from bot.slack.event_text import question_text
from bot.store.records import AnswerRecord, Records
from kb_index import IndexNotFound

log = logging.getLogger(__name__)

# Thread messages a person asked with. Not the others: an assistant panel thread's root
# ("assistant_app_thread", which Slack writes in the user's name as "Chats from …"), joins, edits.
_ASKED_SUBTYPES = (None, "file_share", "thread_broadcast")
# Earlier messages of a thread that a follow-up question takes along.
THREAD_HISTORY_MESSAGES = 6


@dataclass
class Answerer:
    """The `answer` job and what its asker hears when its last try fails."""

    settings: Settings
    slack: AsyncWebClient
    pipeline: Pipeline
    records: Records
    reviews: ReviewDesk
    deliveries: Deliveries
    own: OwnReplies
    recorder: Recorder
    private: PrivateAnswers
    # Who may read what (bot.access). The worker always has one (bot.wiring); None only where a test of
    # something else hands in a scripted pipeline without an index.
    access: AccessGate | None = None

    async def answer(self, job: Job, settled: Answer | None = None) -> None:
        """`settled`: the answer of the last try, posted as it is (a judge outage past all tries)."""
        payload = job.read(AnswerPayload)
        question, poster = payload.question, self.deliveries.of(payload)
        channel, thread = question.channel, question.reply_thread_ts
        if not await poster.claim_unless_posted(question.id, channel, thread, retried=job.attempt > 1):
            # A redelivery of a job that posted (or whose doubtful post was found):
            # the try that posted may not have lived to take its 👀 back.
            await self.deliveries.unreact(question, poster)
            return
        question, scope = await self._scoped(payload, question, poster)
        if scope is not None and scope.shared_externally and not question.collections and self.access is not None:
            # Slack Connect, and nothing may be used where another organization reads: no reply in the
            # channel at all, and the asker told privately once why.
            await self.access.tell_once(question, Key.EXTERNAL_CHANNEL)
            await poster.release_claim(question.id)
            await self.recorder.record(question, poster, error="not answered: a channel shared with another organization")
            return
        status = PanelStatus(self.slack, question) if payload.assistant else None
        await self.deliveries.react(question, poster)
        if status is not None:
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
                await self.own.apology(question, exc, poster)
                return
            answer = settled
        except IndexNotFound as exc:
            await self.own.not_ready(question, exc, poster)
            return
        if settled is None and judge_outage(answer):
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
        await self.recorder.record(question, poster, answer)
        await self.deliveries.unreact(question, poster)
        if scope is not None and self.access is not None and not self._is_private(payload):
            policy = payload.question.collections
            more = scope.more_for_asker if policy is None else scope.more_for_asker & set(policy)
            own = sorted(scope.asker if policy is None else scope.asker & set(policy))
            if more and answer.outcome is not Outcome.ANSWERED:
                # The asker may read more than everyone here: a private answer, never restricted text in the channel.
                await self.private.answer(question, own)
            elif more:
                await self.private.offer(payload.question, own, more)

    async def failed(self, job: Job, error: BaseException) -> None:
        """The last try failed: the asker hears about it, never silence (the table in this module's docstring)."""
        payload = job.read(AnswerPayload)
        question, poster = payload.question, self.deliveries.of(payload)
        if isinstance(error, SlackFailed):
            # Slack refused the reply itself (the bot left the channel, a
            # missing scope): another post there fails the same way.
            log.error("question %s not answered: Slack said %s; an operator must fix that", question.id, error.code)
            return
        if isinstance(error, SlackError):
            await self.own.stored_reply(question, error, poster)
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
        await self.own.apology(question, error, poster)

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
