"""The answering pipeline: question -> retrieve -> prompt -> generate -> verify -> Answer.

One place wires the stages; `citebot ask` runs it in-process and the Slack
worker runs it per job. The rules that make it safe:

- a question plainly outside the knowledge base (retrieval's answerability
  decision) -> the refusal, without calling the model; anything in between
  goes to the model, which is told to say when the blocks do not answer; with
  the extractive backend a refused question near the threshold (`near`) gets the
  nearest passages under the line that the KB may not answer it as asked;
- a draft that fails verification is regenerated once, with the violations
  as feedback; a second failure gives the uncertain message and keeps the draft,
  and so does the question's time running out before the regeneration is done
  (a draft exists: a reviewer gets it, the asker "not sure", never the apology);
- a draft that stopped at the output cap is checked as it is, never completed:
  unless it is claims JSON that closed before the cap, it fails (CUT_AT_OUTPUT_CAP);
- what each finding does (regenerate, hold for the judge, fail) is the one
  table of bot.answer.verify.policy;
- with an entailment judge (CITEBOT_JUDGE=auto|llm|minicheck, bot.answer.judge),
  every statement a draft the checks pass would post is judged, and what it fails
  counts as a violation; a judge that cannot judge fails the draft without a
  regeneration (an outage: the caller retries the job), nothing unjudged is posted
  as verified, and `Answer.unverified_reason` says why;
- with no judge (CITEBOT_JUDGE=off) a model's answer is posted unverified, with a
  line that its statements were not checked against the sources; the extractive
  backend needs no judge (its text is the KB's own words);
- the model being down is not an answer: `LLMError` propagates, so the caller
  can retry the job or, after the last try, apologise.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import contextmanager

from bot.answer.assemble import build_answer, make_source, refusal_answer
from bot.answer.backends import Backend, can, make_backend
from bot.answer.budget import before_reserve
from bot.answer.judge import Judge, make_judge
from bot.answer.prompt import build_evidence, build_request, clip_history, retry_messages, trim_to_budget
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import DEFAULT_ALLOWED_ROLES, verify_claims
from bot.answer.verify.judgement import wants_judgement
from bot.answer.verify.policy import JUDGE_UNAVAILABLE, finding, outage
from bot.config import Settings
from bot.i18n import Key, message
from bot.models import (
    Answer,
    AnswerMode,
    Attempt,
    AuditMode,
    Draft,
    Evidence,
    GenerationRequest,
    ModelCall,
    Outcome,
    Question,
    Verdict,
)
from kb_index import Retriever
from kb_index.question.follow_up import retrieval_text
from kb_index.search import Retrieval

log = logging.getLogger(__name__)

# Told the name of each stage as it starts ("retrieve", "generate", "verify", "judge"): the
# assistant panel shows it (bot.slack.assistant_status).
Progress = Callable[[str], Awaitable[None]]


async def _no_progress(stage: str) -> None:
    return None


class Pipeline:
    def __init__(
        self,
        retriever: Retriever,
        backend: Backend,
        *,
        mode: AnswerMode = AnswerMode.CITATIONS,
        top_k: int = 8,
        budget_chars: int | None = 24_000,
        allowed_roles: frozenset[str] = DEFAULT_ALLOWED_ROLES,
        judge: Judge | None = None,
    ):
        self.retriever = retriever
        self.backend = backend
        self.judge = judge
        self.mode = mode
        self.top_k = top_k
        self.budget_chars = budget_chars
        self.allowed_roles = allowed_roles
        # A backend that chooses passages by meaning does so with the retriever's embedder.
        embedder = getattr(retriever, "embedder", None)
        if can(backend, "reads_vectors") and embedder is not None:
            backend.use_embedder(embedder)

    async def answer(self, question: Question, *, mode: AnswerMode | None = None,
                     progress: Progress = _no_progress) -> Answer:
        mode = mode or self.mode
        timings: dict[str, float] = {}
        await progress("retrieve")
        with _timed(timings, "retrieve"):
            # In a thread: embedding the question takes tens of milliseconds of
            # CPU, which would stall every other job of a worker's event loop.
            retrieval = await asyncio.to_thread(self.retrieve, question)
        nearest_only = self._nearest_only(retrieval)
        if not (retrieval.answerability.answerable and retrieval.hits) and not nearest_only:
            answer = refusal_answer(question, question.language, mode)
            answer.answerability = retrieval.answerability.to_dict()
            answer.timings_ms = timings
            return answer

        question = question.model_copy(update={"history": clip_history(question.history, self.budget_chars)})
        evidence = build_evidence(trim_to_budget(retrieval.hits, self._block_budget(question)))
        request = build_request(question, evidence, mode).model_copy(update={"nearest_only": nearest_only})
        attempts: list[Attempt] = []
        draft, verdict = await self._generate_and_verify(request, evidence, question.language, timings, progress,
                                                         attempts)
        kept = attempts[-1]
        drafts_cut = int(draft.truncated)
        regenerations = 0
        if not (verdict.ok or verdict.refusal or outage(verdict)):
            regenerations = 1
            retry = request.model_copy(
                update={"messages": retry_messages(request.messages, draft.text, verdict.violations, question.language)}
            )
            # The question's time may run out first: then the first draft is answered with.
            regenerated = await before_reserve(
                lambda: self._generate_and_verify(retry, evidence, question.language, timings, progress, attempts))
            if regenerated is None:
                log.warning("no time left of the question's budget to regenerate: the first draft is kept")
            else:
                second_draft, second = regenerated
                drafts_cut += second_draft.truncated
                if _rank(second) >= _rank(verdict):
                    draft, verdict, kept = second_draft, second, attempts[-1]
        kept.kept = True

        answer = build_answer(question, draft.text, verdict, evidence, mode, question.language)
        _with_lead(answer, draft)
        if outage(verdict):
            answer.unverified_reason = next(v.detail for v in verdict.violations if v.kind == JUDGE_UNAVAILABLE)
        elif not self.judged and answer.outcome is Outcome.ANSWERED and not answer.refused:
            answer.verified = False
            answer.notes.insert(0, message(Key.NOT_JUDGED, question.language))
            answer.unverified_reason = NOT_JUDGED_REASON
        answer.drafts_cut = drafts_cut
        answer.context = [make_source(ev.block, ev) for ev in evidence]
        answer.regenerations = regenerations
        answer.attempts = attempts
        answer.answerability = retrieval.answerability.to_dict()
        answer.model = self.backend.name
        answer.judgement = verdict.judgement
        answer.timings_ms = timings
        return answer

    def _nearest_only(self, retrieval: Retrieval) -> bool:
        """Refused, but near enough for a backend that quotes the KB to quote what comes nearest, marked
        as such: the KB's own words under that line are no answer, and no model is asked to write one."""
        found = retrieval.answerability
        return can(self.backend, "quotes_nearest") and not found.answerable and found.near and bool(retrieval.hits)

    @property
    def judged(self) -> bool:
        """Are the statements of what is posted checked against the sources? By the judge, or by being
        the KB's own words (a backend that quotes the KB, such as the extractive one)."""
        return self.judge is not None or can(self.backend, "quotes_kb")

    async def aclose(self) -> None:
        """The backend, and the judge's own backend where it has one."""
        await self.backend.aclose()
        if self.judge is not None:
            await self.judge.aclose()

    def _block_budget(self, question: Question) -> int | None:
        """What the blocks may use of the prompt budget once the question and its thread history are in."""
        if self.budget_chars is None:
            return None
        return max(0, self.budget_chars - len(question.text) - sum(len(h) for h in question.history))

    def retrieve(self, question: Question) -> Retrieval:
        # A follow-up ("and for part-timers?") is searched with the question before it.
        query = retrieval_text(question.text, question.history)
        return self.retriever.retrieve(query, k=self.top_k, collections=question.collections)

    async def _generate_and_verify(
        self, request: GenerationRequest, evidence: list[Evidence], language: str, timings: dict[str, float],
        progress: Progress = _no_progress, attempts: list[Attempt] | None = None,
    ) -> tuple[Draft, Verdict]:
        """One try: a draft, its sound checks, the judge where they let it through; appended to `attempts`."""
        calls: list[ModelCall] = []
        await progress("generate")
        with _timed(timings, "generate") as took:
            draft = await self.backend.generate(request)
        calls.append(ModelCall(what="generate", model=self.backend.name, ms=took()))
        await progress("verify")
        with _timed(timings, "verify"):
            verdict = self.verify(draft.text, evidence, request.mode, language, request.question)
        if draft.truncated:
            verdict = _cut_short(verdict, request.mode)
        if self.judge is not None and wants_judgement(verdict):
            await progress("judge")
            with _timed(timings, "judge") as took:
                verdict = await self.judge.review(draft.text, verdict, evidence, request.mode, language,
                                                  request.question)
            judge_model = verdict.judgement.model if verdict.judgement else ""
            calls.append(ModelCall(what="judge", model=judge_model, ms=took()))
        if attempts is not None:
            attempts.append(Attempt(n=len(attempts) + 1, draft=draft.text, truncated=draft.truncated,
                                    ok=verdict.ok or verdict.refusal, violations=verdict.violations,
                                    judgement=verdict.judgement, calls=calls))
        return draft, verdict

    def verify(
        self, draft: str, evidence: list[Evidence], mode: AnswerMode, language: str, question: str = ""
    ) -> Verdict:
        """The sound checks (bot.answer.verify.policy says what each finding does)."""
        if mode is AnswerMode.CLAIMS:
            return verify_claims(draft, evidence, language, allowed_roles=self.allowed_roles, question=question)
        verdict = verify_citations(draft, evidence, language, question=question)
        return _block_roles(verdict, evidence, self.allowed_roles)


def make_pipeline(settings: Settings, retriever: Retriever, backend: Backend | None = None) -> Pipeline:
    """The pipeline the settings describe, for `citebot ask` and the worker alike;
    the caller closes its backend."""
    backend = backend or make_backend(settings)
    return Pipeline(
        retriever,
        backend,
        mode=settings.answer_mode,
        top_k=settings.top_k,
        budget_chars=settings.prompt_budget_chars,
        judge=make_judge(settings, backend),
    )


def _with_lead(answer: Answer, draft: Draft) -> None:
    """A posted answer gets the backend's own line before it (the extractive backend's
    "The passages of the knowledge base closest to your question:"), and a question the backend
    says the KB may not answer as asked goes to the gaps report, for the KB's owners to look at."""
    if answer.outcome is not Outcome.ANSWERED or answer.refused:
        return
    if draft.lead:
        answer.answer = f"{draft.lead}\n\n{answer.answer}"
    if draft.not_covered:
        answer.not_covered = [*answer.not_covered, *draft.not_covered]


def _block_roles(verdict: Verdict, evidence: list[Evidence], allowed: frozenset[str]) -> Verdict:
    """Citations mode: a statement may rest only on entries whose role allows answering from them."""
    roles = {ev.entry_id: ev.source_role for ev in evidence}
    blocked = [eid for eid in verdict.citations if roles.get(eid, "") not in allowed and eid in roles]
    if not blocked:
        return verdict
    extra = [finding("SOURCE_ROLE_BLOCKED", f"[{eid}] is a {roles[eid]}, not an answer source") for eid in blocked]
    return verdict.model_copy(update={"ok": False, "violations": [*verdict.violations, *extra]})


def _cut_short(verdict: Verdict, mode: AnswerMode) -> Verdict:
    """The verdict on a draft that stopped at the output cap, which is checked as it is and never completed.

    A claims draft whose JSON closed before the cap holds every claim whole.
    Any other cut draft may end before the sentence that qualifies the rest,
    so it fails, and the regeneration is told why."""
    if mode is AnswerMode.CLAIMS and not any(v.kind == "SCHEMA_INVALID" for v in verdict.violations):
        return verdict
    cut = finding("CUT_AT_OUTPUT_CAP", "the answer stopped at the length limit before it ended; answer more briefly")
    return verdict.model_copy(update={"ok": False, "refusal": False, "violations": [*verdict.violations, cut]})


NOT_JUDGED_REASON = "CITEBOT_JUDGE=off: the statements were not checked against the sources, only the citations"


def _rank(verdict: Verdict) -> int:
    """Which of two verdicts to keep: verified > partial > failed."""
    if verdict.ok or verdict.refusal:
        return 2
    return 1 if verdict.audit_mode is AuditMode.HYBRID else 0


@contextmanager
def _timed(timings: dict[str, float], stage: str, clock: Callable[[], float] = time.perf_counter):
    """Adds the block's time to `timings[stage]`; yields what tells this block's own time (ms) once it is over."""
    start = clock()
    spent: list[float] = []
    try:
        yield lambda: spent[0]
    finally:
        spent.append(round((clock() - start) * 1000, 3))
        timings[stage] = round(timings.get(stage, 0.0) + spent[0], 3)
