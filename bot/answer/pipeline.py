"""The answering pipeline: question -> retrieve -> prompt -> generate -> verify -> Answer.

One place wires the stages; `citebot ask` runs it in-process and the Slack
worker runs it per job. The rules that make it safe:

- a question plainly outside the knowledge base (retrieval's answerability
  decision) -> the refusal, without calling the model; anything in between
  goes to the model, which is told to say when the blocks do not answer;
- a draft that fails verification is regenerated once, with the violations
  as feedback; a second failure gives the uncertain message and keeps the draft;
- a draft that stopped at the output cap is checked as it is, never completed:
  unless it is claims JSON that closed before the cap, it fails (CUT_AT_OUTPUT_CAP);
- with an entailment judge (CITEBOT_JUDGE=llm, bot.answer.judge), a draft the
  checks pass is judged too, and what it fails counts as a violation;
- the model being down is not an answer: `LLMError` propagates, so the caller
  can retry the job or, after the last try, apologise.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import contextmanager

from bot.answer.assemble import build_answer, make_source, refusal_answer
from bot.answer.backends import Backend, make_backend
from bot.answer.extractive import ExtractiveBackend, Vectors
from bot.answer.judge import Judge, make_judge
from bot.answer.prompt import build_evidence, build_request, clip_history, retry_messages, trim_to_budget
from bot.answer.verify.align import Aligner, VectorCache
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import DEFAULT_ALLOWED_ROLES, verify_claims
from bot.answer.verify.judgement import wants_judgement
from bot.answer.verify.support import weigher
from bot.config import Settings
from bot.models import (
    Answer,
    AnswerMode,
    AuditMode,
    Draft,
    Evidence,
    GenerationRequest,
    Outcome,
    Question,
    Verdict,
    Violation,
)
from kb_index import Retriever
from kb_index.question.follow_up import retrieval_text
from kb_index.search import Retrieval

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
        vectors: VectorCache | None = None,
    ):
        self.retriever = retriever
        self.backend = backend
        self.judge = judge
        self.mode = mode
        self.top_k = top_k
        self.budget_chars = budget_chars
        self.allowed_roles = allowed_roles
        # Sentence vectors for alignment; made on first use from the retriever's embedder.
        self._vectors = vectors
        # The extractive backend chooses passages by meaning with the retriever's embedder:
        # the question as the verifiers embed it (one cache), the passages as passages.
        embedder = getattr(retriever, "embedder", None)
        queries = self._vector_cache()
        if isinstance(backend, ExtractiveBackend) and backend.vectors is None and embedder is not None and queries:
            backend.vectors = Vectors(queries.vectors, VectorCache(embedder.embed_passages).vectors)

    async def answer(self, question: Question, *, mode: AnswerMode | None = None,
                     progress: Progress = _no_progress) -> Answer:
        mode = mode or self.mode
        timings: dict[str, float] = {}
        await progress("retrieve")
        with _timed(timings, "retrieve"):
            # In a thread: embedding the question takes tens of milliseconds of
            # CPU, which would stall every other job of a worker's event loop.
            retrieval = await asyncio.to_thread(self.retrieve, question)
        if not (retrieval.answerability.answerable and retrieval.hits):
            answer = refusal_answer(question, question.language, mode)
            answer.answerability = retrieval.answerability.to_dict()
            answer.timings_ms = timings
            return answer

        question = question.model_copy(update={"history": clip_history(question.history, self.budget_chars)})
        evidence = build_evidence(trim_to_budget(retrieval.hits, self._block_budget(question)))
        request = build_request(question, evidence, mode)
        draft, verdict = await self._generate_and_verify(request, evidence, question.language, timings, progress)
        drafts_cut = int(draft.truncated)
        regenerations = 0
        if not (verdict.ok or verdict.refusal):
            regenerations = 1
            retry = request.model_copy(
                update={"messages": retry_messages(request.messages, draft.text, verdict.violations, question.language)}
            )
            second_draft, second = await self._generate_and_verify(retry, evidence, question.language, timings, progress)
            drafts_cut += second_draft.truncated
            if _rank(second) >= _rank(verdict):
                draft, verdict = second_draft, second

        answer = build_answer(question, draft.text, verdict, evidence, mode, question.language)
        _with_lead(answer, draft)
        answer.drafts_cut = drafts_cut
        answer.context = [make_source(ev.block, ev) for ev in evidence]
        answer.regenerations = regenerations
        answer.answerability = retrieval.answerability.to_dict()
        answer.model = self.backend.name
        answer.judgement = verdict.judgement
        answer.timings_ms = timings
        return answer

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
        progress: Progress = _no_progress,
    ) -> tuple[Draft, Verdict]:
        await progress("generate")
        with _timed(timings, "generate"):
            draft = await self.backend.generate(request)
        await progress("verify")
        with _timed(timings, "verify"):
            # In a thread: aligning sentences embeds them (tens of milliseconds each, the
            # first time), which would stall every other job of a worker's event loop.
            verdict = await asyncio.to_thread(self.verify, draft.text, evidence, request.mode, language, request.question)
        if draft.truncated:
            verdict = _cut_short(verdict, request.mode)
        if self.judge is not None and wants_judgement(verdict):
            await progress("judge")
            with _timed(timings, "judge"):
                verdict = await self.judge.review(draft.text, verdict, evidence, request.mode, language,
                                                  request.question)
        return draft, verdict

    def verify(
        self, draft: str, evidence: list[Evidence], mode: AnswerMode, language: str, question: str = ""
    ) -> Verdict:
        # The KB's own word weights, as bench/verifier_scifact.py measures the verifier with.
        idf = self.retriever.idf(language)
        aligner = self._aligner(idf)
        if mode is AnswerMode.CLAIMS:
            return verify_claims(draft, evidence, language, allowed_roles=self.allowed_roles, idf=idf,
                                 question=question, aligner=aligner)
        verdict = verify_citations(draft, evidence, language, idf=idf, question=question, aligner=aligner)
        return _block_roles(verdict, evidence, self.allowed_roles)

    def _aligner(self, idf) -> Aligner:
        """Sentences aligned by words and, where the retriever has an embedder, by meaning
        (across languages too); the vectors are cached for the pipeline's lifetime."""
        return Aligner(weigher(idf), self._vector_cache())

    def _vector_cache(self) -> VectorCache | None:
        embedder = getattr(self.retriever, "embedder", None)
        if embedder is not None and self._vectors is None:
            self._vectors = VectorCache(embedder.embed_queries)
        return self._vectors


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
    "Here is what the knowledge base says:"), and a question the backend says the KB may
    not answer as asked goes to the gaps report, for the KB's owners to look at."""
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
    extra = [Violation(kind="SOURCE_ROLE_BLOCKED", detail=f"[{eid}] is a {roles[eid]}, not an answer source") for eid in blocked]
    return verdict.model_copy(update={"ok": False, "violations": [*verdict.violations, *extra]})


def _cut_short(verdict: Verdict, mode: AnswerMode) -> Verdict:
    """The verdict on a draft that stopped at the output cap, which is checked as it is and never completed.

    A claims draft whose JSON closed before the cap holds every claim whole.
    Any other cut draft may end before the sentence that qualifies the rest,
    so it fails, and the regeneration is told why."""
    if mode is AnswerMode.CLAIMS and not any(v.kind == "SCHEMA_INVALID" for v in verdict.violations):
        return verdict
    cut = Violation(kind="CUT_AT_OUTPUT_CAP", detail="the answer stopped at the length limit before it ended; answer more briefly")
    return verdict.model_copy(update={"ok": False, "refusal": False, "violations": [*verdict.violations, cut]})


def _rank(verdict: Verdict) -> int:
    """Which of two verdicts to keep: verified > partial > failed."""
    if verdict.ok or verdict.refusal:
        return 2
    return 1 if verdict.audit_mode is AuditMode.HYBRID else 0


@contextmanager
def _timed(timings: dict[str, float], stage: str, clock: Callable[[], float] = time.perf_counter):
    start = clock()
    try:
        yield
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + (clock() - start) * 1000, 3)
