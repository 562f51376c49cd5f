"""The capability probe: what the configured model can do, found out with two short requests.

`citebot doctor` prints it and a starting worker logs it in one line: whether
the model answers at all and how fast (a short prose request), in which form
it takes structured output (a short request with the claims schema, which
leaves the backend knowing the form before the first claims question), and
its context length where the server says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from bot.answer.backends import Backend, ChatBackend
from bot.answer.budget import BudgetSpent, within_budget
from bot.answer.llm_http import LLMError
from bot.answer.prompt import CLAIMS_JSON_SCHEMA
from bot.models import AnswerMode, GenerationRequest

# Every probe request says this, so that a server's log (and the fake server
# of the tests) can tell the probe from a question.
PROBE_MARK = "citebot capability probe"
# Enough for "ok" or {"claims": []}; a model that goes on is cut, which is fine here.
PROBE_MAX_TOKENS = 32


@dataclass(frozen=True)
class ModelReport:
    model: str
    where: str
    answers: bool
    seconds: float | None = None  # the prose request's round trip
    form: str | None = None  # the structured-output form the server took; None if none was found
    constrained: bool = False  # whether that form constrains decoding (not "prompt only")
    context: tuple[int, str] | None = None  # (tokens, where the server said so)
    error: str | None = None
    local: bool = False  # no model server: the extractive backend

    def line(self) -> str:
        if self.local:
            return f"{self.model}: no language model; answers quote the knowledge base"
        head = f"model {self.model} at {self.where}"
        if not self.answers:
            return f"{head}: no answer: {self.error}"
        parts = [f"answers in {self.seconds:.2f} s"]
        parts.append(f"structured output as {self.form}" if self.form else f"structured output: none ({self.error})")
        parts.append(f"context {self.context[0]} tokens ({self.context[1]})" if self.context else "context length not reported")
        return f"{head}: " + "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "url": self.where, "answers": self.answers, "seconds": self.seconds,
            "structured_output": self.form, "constrained": self.constrained,
            "context_tokens": self.context[0] if self.context else None,
            "context_source": self.context[1] if self.context else None, "error": self.error, "local": self.local,
        }


def _request(structured: bool) -> GenerationRequest:
    if structured:
        ask = f'{PROBE_MARK}: reply with exactly this JSON: {{"claims": []}}'
    else:
        ask = f"{PROBE_MARK}: reply with the word ok."
    return GenerationRequest(
        messages=[{"role": "user", "content": ask}],
        mode=AnswerMode.CLAIMS if structured else AnswerMode.CITATIONS,
        question=ask,
        evidence=[],
        json_schema=CLAIMS_JSON_SCHEMA if structured else None,
        max_tokens=PROBE_MAX_TOKENS,
    )


async def probe_model(backend: Backend, budget_s: float) -> ModelReport:
    """The report on `backend`'s model; each request within `budget_s` (as a question's would be)."""
    if not isinstance(backend, ChatBackend):
        return ModelReport(model=backend.name, where="in-process", answers=True, constrained=True, local=True)
    report = ModelReport(model=backend.name, where=backend.shown, answers=False)
    started = time.perf_counter()
    try:
        await within_budget(backend.generate(_request(structured=False)), budget_s)
    except (LLMError, BudgetSpent) as exc:
        return replace(report, error=str(exc))
    report = replace(report, answers=True, seconds=round(time.perf_counter() - started, 3))
    try:
        await within_budget(backend.generate(_request(structured=True)), budget_s)
    except (LLMError, BudgetSpent) as exc:
        report = replace(report, error=str(exc))
    if backend.structured_form is not None:
        report = replace(report, form=backend.structured_form.name, constrained=backend.structured_form.constrained)
    return replace(report, context=await backend.context_length())
