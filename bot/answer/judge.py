"""The entailment judge: after the checks, a model says whether the cited blocks support what a
draft says (CITEBOT_JUDGE: auto, the default, judges with the answering model wherever one is
configured; llm; minicheck, a dedicated grounding model: bot.answer.minicheck; off).

It runs after the sound checks (bot.answer.verify, bot.answer.pipeline) on a draft they pass or
hold back only with findings held for the judge (bot.answer.verify.policy: a number no cited block
nor the question states), on every statement that would be posted: each cited sentence (citations
mode) or claim (claims mode), with the blocks it cites. A statement the judge supports, with a quote
found in its blocks, has the findings held for the judge cleared. The model answers supports,
contradicts or not_stated per statement with the words it relies on quoted; reading that reply,
checking each quote against the blocks and turning failures into violations is
bot.answer.verify.judgement. A failed statement fails like any violation: the
draft is regenerated with the feedback, then the uncertain reply and the review
card (claims mode: the claim is dropped, the answer posted as partial).

The call goes through the same `Backend.generate` as the draft, with the
judge's JSON schema, so whatever structured-output form the server takes for
claims serves the judge too.

When the judge cannot judge (the model is down past the backend's retries, the
call takes longer than `timeout` or than what is left of the question's time
budget, the reply is not the judge's schema), nothing is posted as verified:
the verdict fails with JUDGE_UNAVAILABLE (bot.answer.verify.policy: a model
outage, not regenerated), the job is retried, and the last try ends "not sure"
with the draft on the review card (at once when the question's time ran out:
a limit set by its deadline reports BudgetSpent, not a slow judge); the judgement, recorded in the audit trail,
says "unavailable" and why (docs/DESIGN.md 3.6).
"""

from __future__ import annotations

import asyncio
import json
import logging

from bot import metrics
from bot.answer.backends import Backend
from bot.answer.budget import BUDGET_RESERVE_S, BudgetSpent, time_left
from bot.answer.llm_http import LLMError
from bot.answer.prompt import render_block
from bot.answer.verify.judgement import (
    JUDGE_JSON_SCHEMA,
    JudgeReplyInvalid,
    Statement,
    apply_judgement,
    item_label,
    read_judgement,
    statements,
    unavailable,
)
from bot.config import Settings
from bot.i18n import Key, message, normalize_language
from bot.models import AnswerMode, Evidence, GenerationRequest, Judgement, Support, Verdict

log = logging.getLogger(__name__)

# The reply's form, shown to the model in its instructions (the schema constrains
# it too, where the server supports that).
_EXAMPLE = {"verdicts": [{"id": item_label(0), "verdict": Support.SUPPORTS.value, "quote": "..."}]}


def judge_messages(asked: list[Statement], language: str, question: str = "") -> list[dict[str, str]]:
    """The instructions, the asker's question, every block the statements cite (once, in prompt
    order), then the statements. The question is there because answers apply the rules to the
    asker's own facts ("you submitted 44 days after the expense, so …"): without those facts a
    judge can only call such a statement not stated, and a right answer is held back."""
    blocks: dict[str, Evidence] = {}
    for statement in asked:
        for ev in statement.blocks:
            blocks.setdefault(ev.pointer_id, ev)
    cites = message(Key.JUDGE_CITES, language)
    lines = [
        f"{item_label(i)} ({cites} {', '.join(s.pointers)}): {s.text}" for i, s in enumerate(asked)
    ]
    asked_by = [f"{message(Key.JUDGE_QUESTION, language)}\n{question.strip()}"] if question.strip() else []
    user = "\n\n".join(
        [
            *asked_by,
            message(Key.PROMPT_BLOCKS, language),
            *(render_block(ev, AnswerMode.CLAIMS, language) for ev in sorted(blocks.values(), key=lambda e: e.block)),
            message(Key.JUDGE_STATEMENTS, language) + "\n" + "\n".join(lines),
        ]
    )
    rules = message(Key.JUDGE_RULES, language, example=json.dumps(_EXAMPLE))
    return [{"role": "system", "content": rules}, {"role": "user", "content": user}]


def judge_request(asked: list[Statement], mode: AnswerMode, language: str, question: str = "") -> GenerationRequest:
    blocks = list({ev.pointer_id: ev for s in asked for ev in s.blocks}.values())
    return GenerationRequest(
        messages=judge_messages(asked, language, question),
        mode=mode,
        question="",  # chat backends send the messages; the judge has no question of its own
        evidence=blocks,
        language=normalize_language(language),
        json_schema=JUDGE_JSON_SCHEMA,
    )


class Judge:
    """What every entailment judge does: ask about the statements a draft would post (or that only
    findings held for the judge hold back), within its time, and apply the judgement to the verdict.
    Subclasses say how one judgement is had (`_call`). `timeout` bounds the whole judgement,
    retries included."""

    kind = ""

    def __init__(self, backend: Backend, *, timeout: float | None = None):
        self.backend = backend
        self.timeout = timeout

    async def review(
        self, draft: str, verdict: Verdict, evidence: list[Evidence], mode: AnswerMode, language: str,
        question: str = "",
    ) -> Verdict:
        """The deterministic verdict on `draft`, with the judge's verdicts applied and recorded."""
        asked = statements(draft, verdict, evidence, mode, language)
        if not asked:
            return verdict
        judgement = await self.judge(asked, mode, language, question)
        return apply_judgement(verdict, judgement, evidence, mode)

    async def judge(self, asked: list[Statement], mode: AnswerMode, language: str, question: str = "") -> Judgement:
        """A judgement of `asked`; an unavailable one when none can be had."""
        model = self.backend.name
        limit = self.time_limit()
        try:
            if limit is not None and limit <= 0:
                raise BudgetSpent("no time left of the question's budget for the judge")
            async with asyncio.timeout(limit):
                judgement = await self._call(asked, mode, language, question)
        except (LLMError, BudgetSpent, JudgeReplyInvalid) as exc:
            judgement = self._unavailable(asked, f"{type(exc).__name__}: {exc}", model)
        except TimeoutError:
            if limit != self.timeout:
                # The question's deadline set the limit: its time is spent, and another try would find it so.
                error = f"{BudgetSpent.__name__}: the question's time ran out while the judge was asked"
            else:
                error = f"no reply within {limit:g}s"
            judgement = self._unavailable(asked, error, model)
        metrics.JUDGE_CALLS.labels(status=judgement.status).inc()
        return judgement

    def _unavailable(self, asked: list[Statement], error: str, model: str) -> Judgement:
        log.warning("entailment judge unavailable, nothing is posted unjudged: %s", error)
        return unavailable(asked, error, model)

    def time_limit(self) -> float | None:
        """Seconds the judgement may take: `timeout`, and never past the question's deadline less
        BUDGET_RESERVE_S (bot.answer.budget), so that the answer already verified is still
        returned in time; None: no limit."""
        left = time_left()
        if left is None:
            return self.timeout
        room = left - BUDGET_RESERVE_S
        return room if self.timeout is None else min(self.timeout, room)

    async def _call(self, asked: list[Statement], mode: AnswerMode, language: str, question: str) -> Judgement:
        raise NotImplementedError

    async def aclose(self) -> None:
        """The judge's own backend, where it has one (minicheck); the answering model's is the pipeline's."""


class LLMJudge(Judge):
    """The answering model judges, in one structured call for all statements, quoting the blocks."""

    kind = "llm"

    async def _call(self, asked: list[Statement], mode: AnswerMode, language: str, question: str) -> Judgement:
        reply = await self.backend.generate(judge_request(asked, mode, language, question))
        return read_judgement(reply.text, asked, language, self.backend.name)


# What `citebot doctor` and a starting worker say when a model writes the answers and nothing judges them:
# the sound checks (bot.answer.verify.policy) cannot tell a wrong sentence whose words all stand in the block
# it cites, so such answers are posted with a line that says their statements were not checked.
JUDGE_OFF_WARNING = (
    "CITEBOT_JUDGE=off: the model's answers are posted unverified, marked so, with only their citations, quotes, "
    "links and numbers checked: a wrong answer whose words all stand in the cited blocks (a negation flipped, a "
    "condition changed, another office named) goes out; CITEBOT_JUDGE=auto has the model judge them"
)


def unjudged_model(settings: Settings) -> bool:
    """Does a language model write the answers with no judge after the checks?"""
    return settings.llm != "extractive" and settings.judge_kind == "off"


def make_judge(settings: Settings, backend: Backend) -> Judge | None:
    """The judge CITEBOT_JUDGE asks for (auto: the answering model where there is one); None when off."""
    kind = settings.judge_kind
    if kind == "off":
        return None
    if kind == "minicheck":
        from bot.answer.minicheck import make_minicheck

        return make_minicheck(settings)
    # One request's time: past that, the asker waits for a check the answer can do without.
    return LLMJudge(backend, timeout=settings.llm_timeout)
