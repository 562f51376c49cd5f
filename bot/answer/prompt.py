"""What the model is told: rules, numbered context blocks, the question.

The rules and the verifiers are two sides of one contract: every rule here is
one a verifier checks (citations.py, claims.py), and the refusal sentence asked
for is the one `is_refusal` recognises. The words, in every language, are in
bot.i18n (the PROMPT_ keys and REFUSAL).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from bot.i18n import Key, message, normalize_language
from bot.models import AnswerMode, Evidence, GenerationRequest, Question, Violation
from kb_index import ChunkResult

# Trimming keeps at least this many blocks, whatever the budget: below that the
# model too often lacks the one block that answers, and a refusal costs more
# than a somewhat longer prompt.
MIN_BLOCKS = 6

# Earlier thread messages come out of the same prompt budget as the blocks, and
# never take more than this share of it: they say what "and for part-timers?"
# refers to, the blocks say what is true. Each message is cut to at most
# HISTORY_MESSAGE_CHARS; the newest are kept first.
HISTORY_BUDGET_SHARE = 0.15
HISTORY_MESSAGE_CHARS = 1_000

# Characters of a block header besides its metadata values ("Block 12 — [..]",
# the labels, line breaks): budget accounting without rendering each block.
BLOCK_OVERHEAD_CHARS = 64

EVIDENCE_ID_HEX = 16  # 64 bits of sha256: collisions within one KB are not a concern

CLAIMS_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            # No maxItems: a runaway answer must stay visible (TOO_MANY_CLAIMS),
            # not be cut off silently by the decoder.
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1},
                    "evidence_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                },
                "required": ["text", "evidence_ids"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["claims"],
    "additionalProperties": False,
}


def system_rules(mode: AnswerMode, language: str, max_claims: int = 12) -> str:
    if mode is AnswerMode.CLAIMS:
        return message(Key.PROMPT_RULES_CLAIMS, language, max_claims=max_claims)
    return message(Key.PROMPT_RULES_CITATIONS, language, refusal=message(Key.REFUSAL, language))


def evidence_id(chunk: ChunkResult) -> str:
    """Content-addressed: the same text of the same section gets the same id in every prompt."""
    digest = hashlib.sha256("\x1f".join([chunk.entry_id, chunk.section, chunk.text]).encode("utf-8"))
    return digest.hexdigest()[:EVIDENCE_ID_HEX]


def build_evidence(chunks: Sequence[ChunkResult]) -> list[Evidence]:
    """One Evidence per block, numbered in prompt order (E1..En). A chunk retrieved
    twice (a hit and a cross-ref expansion of it) becomes one block."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for chunk in chunks:
        eid = evidence_id(chunk)
        if eid in seen:
            continue
        seen.add(eid)
        n = len(out) + 1
        out.append(Evidence(block=n, pointer_id=f"E{n}", evidence_id=eid, chunk=chunk))
    return out


def _labelled(label: Key, language: str, value: str) -> str:
    return f"{message(label, language)}: {value}"


def render_block(ev: Evidence, mode: AnswerMode, language: str) -> str:
    c = ev.chunk
    pointer = f"{ev.pointer_id} — " if mode is AnswerMode.CLAIMS else ""
    head = f"Block {ev.block} — {pointer}[{c.entry_id}]"
    if c.expanded:
        head += f" ({message(Key.PROMPT_XREF, language)})"
    lines = [head, _labelled(Key.PROMPT_TITLE, language, c.title)]
    if c.section:  # a page of a PDF without headings has no section name
        lines.append(_labelled(Key.PROMPT_SECTION, language, c.section))
    if c.stand:
        lines.append(f"Stand: {c.stand}")
    if c.legal_bases:
        lines.append(_labelled(Key.PROMPT_LEGAL, language, ", ".join(c.legal_bases)))
    return "\n".join(lines) + "\n\n" + c.text.strip()


def build_user_content(
    question: str,
    evidence: list[Evidence],
    mode: AnswerMode = AnswerMode.CITATIONS,
    language: str = "en",
    history: Sequence[str] = (),
) -> str:
    """Blocks first, the question last: the model reads the question right before it answers."""
    parts = [message(Key.PROMPT_BLOCKS, language), *(render_block(ev, mode, language) for ev in evidence)]
    if history:
        parts.append(message(Key.PROMPT_HISTORY, language) + "\n" + "\n".join(f"- {h}" for h in history))
    parts.append(_labelled(Key.PROMPT_QUESTION, language, question.strip()))
    return "\n\n".join(parts)


def build_messages(
    question: str,
    evidence: list[Evidence],
    mode: AnswerMode = AnswerMode.CITATIONS,
    language: str = "en",
    history: Sequence[str] = (),
) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_rules(mode, language)},
        {"role": "user", "content": build_user_content(question, evidence, mode, language, history)},
    ]


def build_request(question: Question, evidence: list[Evidence], mode: AnswerMode) -> GenerationRequest:
    """Everything a backend needs; claims mode carries the JSON schema that
    constrains decoding (in the form the server takes: bot.answer.structured)."""
    return GenerationRequest(
        messages=build_messages(question.text, evidence, mode, question.language, question.history),
        mode=mode,
        question=question.text,
        evidence=evidence,
        language=normalize_language(question.language),
        json_schema=CLAIMS_JSON_SCHEMA if mode is AnswerMode.CLAIMS else None,
    )


def regeneration_feedback(violations: Sequence[Violation], language: str = "en") -> str:
    """The message appended for the one retry: what was wrong, one line each."""
    lines = [message(Key.PROMPT_RETRY_INTRO, language)]
    for v in violations:
        where = f" (#{v.claim + 1})" if v.claim is not None else ""
        lines.append(f"- {v.kind}{where}: {v.detail}")
    lines.append(message(Key.PROMPT_RETRY_OUTRO, language))
    return "\n".join(lines)


def retry_messages(
    messages: list[dict[str, str]], draft: str, violations: Sequence[Violation], language: str = "en"
) -> list[dict[str, str]]:
    """The conversation for the retry: the rejected draft, then the feedback on it."""
    return [
        *messages,
        {"role": "assistant", "content": draft},
        {"role": "user", "content": regeneration_feedback(violations, language)},
    ]


def _block_cost(chunk: ChunkResult) -> int:
    meta = [chunk.entry_id, chunk.title, chunk.section, chunk.stand or "", *chunk.legal_bases]
    return len(chunk.text) + sum(len(m) for m in meta) + BLOCK_OVERHEAD_CHARS


def clip_history(history: Sequence[str], budget_chars: int | None) -> list[str]:
    """The thread history that fits its share of the prompt budget, oldest first."""
    limit = None if budget_chars is None else int(budget_chars * HISTORY_BUDGET_SHARE)
    kept: list[str] = []
    used = 0
    for earlier in reversed(history):
        if len(earlier) > HISTORY_MESSAGE_CHARS:
            earlier = earlier[:HISTORY_MESSAGE_CHARS].rsplit(None, 1)[0] + " …"
        if limit is not None and used + len(earlier) > limit:
            break
        kept.append(earlier)
        used += len(earlier)
    return kept[::-1]


def trim_to_budget(chunks: list[ChunkResult], budget_chars: int | None) -> list[ChunkResult]:
    """Drop low-ranked tail blocks whole until the rest fits `budget_chars`.

    A block is never cut: half a section may drop the sentence that qualifies
    the rest. At least MIN_BLOCKS stay (all, when there are fewer). Without a
    budget the input list itself comes back.
    """
    if budget_chars is None:
        return chunks
    keep, used = 0, 0
    for chunk in chunks:
        used += _block_cost(chunk)
        if used > budget_chars:
            break
        keep += 1
    return list(chunks[: max(keep, min(MIN_BLOCKS, len(chunks)))])
