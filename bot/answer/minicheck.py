"""A dedicated grounding model as the entailment judge (CITEBOT_JUDGE=minicheck).

Bespoke-MiniCheck-7B leads the LLM-AggreFact grounding benchmark, above the large chat
models, and Ollama serves it as `bespoke-minicheck`. Its protocol, as its documentation
gives it: one user message

    Document: {document}
    Claim: {claim}

and the reply "Yes" (the document supports the claim) or "No"; one sentence at a time,
a longer claim split into sentences first. Here the document is the blocks the
statement cites (title, section and text), the claim each sentence of the statement;
a statement is supported when every one of its sentences is.

The model gives no quote and does not tell "contradicts" from "not stated": "Yes" counts
as support (the reply is the model's whole output, a classification, so there is no
quote to check), "No" as not stated. Any other reply is no judgement: the judge is
unavailable and nothing is posted as verified, as for the chat judge (bot.answer.judge).

It runs on its own server (CITEBOT_JUDGE_URL, CITEBOT_JUDGE_MODEL; Ollama or any
OpenAI-compatible server, CITEBOT_JUDGE_LLM), sentences a few at a time, the whole
judgement within one request's time and before the question's deadline.
"""

from __future__ import annotations

import asyncio
import re

from bot.answer.backends import Backend, OllamaBackend, OpenAIBackend
from bot.answer.judge import Judge
from bot.answer.llm_http import DEFAULT_RETRIES
from bot.answer.verify.judgement import JudgeReplyInvalid, Statement
from bot.config import Settings
from bot.models import AnswerMode, Evidence, GenerationRequest, JudgedStatement, Judgement, JudgeStatus, Support
from kb_index.sentences import sentences

# Sentences judged at once: a local server serves a few requests in parallel, and a
# question's statements should not queue behind each other one by one.
CONCURRENCY = 4
# The reply is one word; a cap keeps a model that explains itself short.
MAX_TOKENS = 8

_ANSWER = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def document(blocks: tuple[Evidence, ...]) -> str:
    """The cited blocks as one document: each with its title and section, as the answering model saw them."""
    parts = []
    for ev in blocks:
        c = ev.chunk
        head = " — ".join(filter(None, [c.title, c.section]))
        parts.append(f"{head}\n{c.text.strip()}" if head else c.text.strip())
    return "\n\n".join(parts)


def prompt(doc: str, claim: str) -> str:
    return f"Document: {doc}\nClaim: {claim}"


def read_answer(text: str) -> bool:
    """True for "Yes", False for "No"; JudgeReplyInvalid for anything else."""
    match = _ANSWER.match(text.strip())
    if not match:
        raise JudgeReplyInvalid(f"expected Yes or No, got {text.strip()[:60]!r}")
    return match.group(1).lower() == "yes"


class MiniCheckJudge(Judge):
    """Judges each sentence of each statement with a MiniCheck model on `backend`."""

    kind = "minicheck"

    def __init__(self, backend: Backend, *, timeout: float | None = None, concurrency: int = CONCURRENCY):
        super().__init__(backend, timeout=timeout)
        self._slots = asyncio.Semaphore(concurrency)

    async def _call(self, asked: list[Statement], mode: AnswerMode, language: str, question: str) -> Judgement:
        # MiniCheck's protocol has a document and a claim, no question: the asker's facts are not shown.
        judged = await asyncio.gather(*(self._statement(s, mode, language) for s in asked))
        passed = all(j.support is Support.SUPPORTS for j in judged)
        return Judgement(status=JudgeStatus.PASSED if passed else JudgeStatus.FAILED, model=self.backend.name,
                         statements=list(judged))

    async def _statement(self, statement: Statement, mode: AnswerMode, language: str) -> JudgedStatement:
        doc = document(statement.blocks)
        claims = sentences(statement.text, language) or [statement.text]
        answers = await asyncio.gather(*(self._ask(doc, claim, statement, mode, language) for claim in claims))
        supported = all(answers)
        return JudgedStatement(
            item=statement.item, text=statement.text, cites=list(statement.cites),
            said=Support.SUPPORTS.value if supported else Support.NOT_STATED.value,
            support=Support.SUPPORTS if supported else Support.NOT_STATED,
        )

    async def _ask(self, doc: str, claim: str, statement: Statement, mode: AnswerMode, language: str) -> bool:
        request = GenerationRequest(
            messages=[{"role": "user", "content": prompt(doc, claim)}],
            mode=mode,
            question="",
            evidence=list(statement.blocks),
            language=language,
            max_tokens=MAX_TOKENS,
        )
        async with self._slots:
            reply = await self.backend.generate(request)
        return read_answer(reply.text)

    async def aclose(self) -> None:
        await self.backend.aclose()


def make_minicheck(settings: Settings, *, retries: int = DEFAULT_RETRIES) -> MiniCheckJudge:
    """The MiniCheck judge on the server CITEBOT_JUDGE_URL names (checked by bot.config); `retries`:
    in-call retries of a transient failure (`citebot doctor` asks once)."""
    cls = OpenAIBackend if settings.judge_llm == "openai" else OllamaBackend
    assert settings.judge_url is not None
    backend = cls(
        settings.judge_url,
        settings.judge_model,
        api_key=settings.judge_api_key,
        timeout=settings.llm_timeout,
        retries=retries,
        max_tokens=MAX_TOKENS,
        max_retry_after=settings.llm_max_retry_after_s,
    )
    return MiniCheckJudge(backend, timeout=settings.llm_timeout)
