"""The entailment judge's reply, read and checked against the blocks; its verdicts applied.

Pure functions (the call is bot.answer.judge). Per statement (a sentence, or a claim) the judge
says whether the blocks it cites support it, contradict it, or do not state it, quoting the words
it relies on. "supports" counts only with a quote found in those blocks (text.quote_in, double
quotes and case normalised) holding a content word: a quote they do not hold is a support made up.
No verdict, or a verdict word not known, counts as not stated. A reply that is not the judge's
schema is JudgeReplyInvalid: the caller counts the judge as unavailable.

`apply_judgement` turns the failed statements into violations (JUDGE_CONTRADICTS,
JUDGE_NOT_STATED): in citations mode the draft fails; in claims mode the claim is no longer
verified and the audit mode is worked out again (STRICT with one unsupported claim is HYBRID).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from bot.answer.verify.citations import cited_sentences
from bot.answer.verify.claims import EvidenceIndex, audit_mode, verified_citations
from bot.answer.verify.lenient_json import parse_lenient_json
from bot.answer.verify.policy import JUDGE_UNAVAILABLE, finding, held_for_judge
from bot.answer.verify.text import DOUBLE_QUOTE_CHARS, evidence_text, quote_in
from bot.models import (
    JUDGE_CONTRADICTS,
    JUDGE_NOT_STATED,
    AnswerMode,
    AuditMode,
    Claim,
    Evidence,
    JudgedStatement,
    Judgement,
    JudgeStatus,
    Support,
    Verdict,
    Violation,
)
from citebot_core.errors import Permanent
from kb_index.analysis import terms

_VERDICT_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "string"}, "verdict": {"type": "string", "enum": [s.value for s in Support]},
    "quote": {"type": "string"}}, "required": ["id", "verdict", "quote"], "additionalProperties": False}
JUDGE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"verdicts": {"type": "array", "items": _VERDICT_SCHEMA}},
    "required": ["verdicts"], "additionalProperties": False}


class JudgeReplyInvalid(Permanent, ValueError):
    """The reply is not the judge's schema: no judgement was made."""


@dataclass(frozen=True)
class Statement:
    """What the judge is asked about: one sentence or claim and the blocks it cites."""

    item: int  # sentence or claim index, as in Violation.claim
    text: str
    cites: tuple[str, ...]  # as the draft cites: KB-IDs (citations mode), E1..En (claims mode)
    blocks: tuple[Evidence, ...]

    @property
    def pointers(self) -> list[str]:
        return [ev.pointer_id for ev in self.blocks]


def wants_judgement(verdict: Verdict) -> bool:
    """Does the verdict let something be posted, or could the judge clear what stops it?
    A draft with a regenerating finding is regenerated or refused anyway, and a refusal states nothing."""
    return not verdict.refusal and (verdict.ok or verdict.audit_mode is AuditMode.HYBRID
                                    or _only_held(verdict.violations))


def _only_held(violations: list[Violation]) -> bool:
    return bool(violations) and all(held_for_judge(v) for v in violations)


def _judgeable(i: int, claim: Claim, verdict: Verdict) -> bool:
    """A verified claim, or one that only findings held for the judge hold back."""
    return claim.verified or _only_held([v for v in verdict.violations if v.claim == i])


def statements(draft: str, verdict: Verdict, evidence: list[Evidence], mode: AnswerMode, language: str) -> list[Statement]:
    """Every statement that would be posted, or that only findings held for the judge hold back, each with
    its blocks. A sentence nothing cites is shown every block the answer cites."""
    if mode is AnswerMode.CLAIMS:
        by_pointer = {ev.pointer_id: ev for ev in evidence}
        return [
            Statement(i, claim.text, tuple(claim.evidence_ids), tuple(by_pointer[p] for p in claim.evidence_ids))
            for i, claim in enumerate(verdict.claims)
            # judgeable claims cite resolved pointer ids only: an unknown id is a regenerating finding
            if _judgeable(i, claim, verdict) and all(p in by_pointer for p in claim.evidence_ids)
        ]
    return [
        Statement(s.index, s.text, s.cited, tuple(ev for ev in evidence if ev.entry_id in s.cited))
        for s in cited_sentences(draft, evidence, language)
    ]


_ITEM_ID = re.compile(r"^\s*[Ss]?\s*(\d+)\s*$")
_WORDS = {s.value for s in Support}
_PLAIN_QUOTES = str.maketrans({ch: '"' for ch in DOUBLE_QUOTE_CHARS})


def item_label(position: int) -> str:
    """The id a statement has in the judge's prompt: S1, S2, ..."""
    return f"S{position + 1}"


def _position(raw: Any) -> int | None:
    match = _ITEM_ID.match(str(raw))
    return int(match.group(1)) - 1 if match else None


def _verdict_rows(text: str) -> list[dict[str, Any]]:
    try:
        obj, _ = parse_lenient_json(text)
    except json.JSONDecodeError as exc:
        raise JudgeReplyInvalid(f"not JSON: {exc.msg}") from None
    rows = obj.get("verdicts") if isinstance(obj, dict) else None
    if not isinstance(rows, list):
        raise JudgeReplyInvalid('expected an object {"verdicts": [...]}')
    return [row for row in rows if isinstance(row, dict)]


def _plain(text: str) -> str:
    return text.translate(_PLAIN_QUOTES).casefold()


def quote_found(quote: str, blocks: tuple[Evidence, ...], language: str) -> bool:
    """Is the quote in one of the blocks, and does it say something (a content word)?"""
    return bool(terms(quote, language)) and any(quote_in(_plain(quote), _plain(evidence_text(ev))) for ev in blocks)


def _judged(statement: Statement, row: dict[str, Any] | None, language: str) -> JudgedStatement:
    said = str(row.get("verdict", "")).strip().lower() if row else ""
    quote = str(row.get("quote") or "").strip() if row else ""
    found = bool(quote) and quote_found(quote, statement.blocks, language)
    # "supports" only with its quote found: a quote the blocks do not hold is a support made up
    support = Support(said) if said in _WORDS and (found or said != Support.SUPPORTS) else Support.NOT_STATED
    return JudgedStatement(item=statement.item, text=statement.text, cites=list(statement.cites), said=said,
                           quote=quote, quote_found=found, support=support)


def read_judgement(text: str, asked: list[Statement], language: str, model: str = "") -> Judgement:
    """The judgement in the judge's reply to `asked`; JudgeReplyInvalid if it is not one."""
    rows: dict[int, dict[str, Any]] = {}
    for row in _verdict_rows(text):
        position = _position(row.get("id"))
        if position is not None and 0 <= position < len(asked):
            rows.setdefault(position, row)  # a second verdict for a statement does not overrule the first
    judged = [_judged(s, rows.get(i), language) for i, s in enumerate(asked)]
    passed = all(j.support is Support.SUPPORTS for j in judged)
    return Judgement(status=JudgeStatus.PASSED if passed else JudgeStatus.FAILED, model=model, statements=judged)


def unavailable(asked: list[Statement], error: str, model: str = "") -> Judgement:
    """No judgement: the statements as asked, none judged, and why."""
    asked_as = [JudgedStatement(item=s.item, text=s.text, cites=list(s.cites)) for s in asked]
    return Judgement(status=JudgeStatus.UNAVAILABLE, model=model, error=error, statements=asked_as)


def _violation(judged: JudgedStatement) -> Violation | None:
    blocks = f"the blocks it cites ([{', '.join(judged.cites)}])"
    if judged.support is Support.SUPPORTS:
        return None
    if judged.support is Support.CONTRADICTS:
        said = f": {judged.quote!r}" if judged.quote else ""
        return finding(JUDGE_CONTRADICTS, f"{blocks} say otherwise{said}; the statement: {judged.text}", judged.item)
    if judged.said == Support.SUPPORTS:
        quoted = f"the judge's quote {judged.quote!r} is not in" if judged.quote else "the judge quoted nothing from"
        detail = f"{quoted} {blocks}, so their support is not shown: {judged.text}"
    elif judged.said:
        detail = f"{blocks} do not state this: {judged.text}"
    else:
        detail = f"the judge gave no verdict on: {judged.text}"
    return finding(JUDGE_NOT_STATED, detail, judged.item)


def apply_judgement(verdict: Verdict, judgement: Judgement, evidence: list[Evidence], mode: AnswerMode) -> Verdict:
    """The verdict with the judgement recorded: its failed statements as violations, and the findings
    held for the judge on the statements it supports (with a quote found in their blocks) cleared. An
    unavailable judge fails the verdict (JUDGE_UNAVAILABLE): nothing unjudged is posted."""
    if judgement.status is JudgeStatus.UNAVAILABLE:
        # Fail closed: nothing the judge was to check is posted unjudged (policy.JUDGE_UNAVAILABLE).
        down = finding(JUDGE_UNAVAILABLE, f"the judge could not judge: {judgement.error}")
        claims = [c.model_copy(update={"verified": False}) for c in verdict.claims]
        return verdict.model_copy(update={
            "ok": False, "violations": [*verdict.violations, down], "judgement": judgement, "claims": claims,
            "citations": [] if mode is AnswerMode.CLAIMS else verdict.citations,
            "audit_mode": AuditMode.UNGROUNDED if mode is AnswerMode.CLAIMS else verdict.audit_mode,
        })
    found = [v for j in judgement.statements if (v := _violation(j)) is not None]
    supported = {j.item for j in judgement.statements if j.support is Support.SUPPORTS}
    kept = [v for v in verdict.violations if not (held_for_judge(v) and v.claim in supported)]
    violations = [*kept, *found]
    if violations == verdict.violations:
        return verdict.model_copy(update={"judgement": judgement})
    if mode is not AnswerMode.CLAIMS:
        return verdict.model_copy(update={"ok": not violations, "violations": violations, "judgement": judgement})
    failed = {v.claim for v in violations}
    claims = [c.model_copy(update={"verified": i not in failed}) for i, c in enumerate(verdict.claims)]
    if verdict.not_covered:
        claims = [c.model_copy(update={"verified": False}) if c.text in verdict.not_covered else c for c in claims]
    mode_now = audit_mode(violations, sum(c.verified for c in claims))
    return verdict.model_copy(update={
        "ok": mode_now is AuditMode.STRICT, "audit_mode": mode_now, "violations": violations, "claims": claims,
        "citations": verified_citations(claims, EvidenceIndex(evidence)), "judgement": judgement,
    })
