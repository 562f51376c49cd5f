"""What the model is told: rules, numbered context blocks, the question.

The rules and the verifiers are two sides of one contract: every rule here is
one a verifier checks (citations.py, claims.py), and the refusal sentence asked
for is the one `is_refusal` recognises.
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

_LABELS = {
    "en": {"title": "Title", "section": "Section", "legal": "Legal bases", "xref": "cross-reference",
           "blocks": "Knowledge-base blocks:", "question": "Question", "history": "Earlier in this thread:"},
    "de": {"title": "Titel", "section": "Abschnitt", "legal": "Rechtsgrundlagen", "xref": "Querverweis",
           "blocks": "Blöcke aus der Wissensbasis:", "question": "Frage", "history": "Bisher in diesem Thread:"},
}

_RULES_CITATIONS = {
    "en": """You answer employees' questions from the company knowledge base, and only from it.
Rules:
1. Use only what the knowledge-base blocks below state. Add nothing from your own knowledge.
2. After every statement, write the KB-ID of the block it comes from in square brackets, as shown in the block header, e.g. [hr-travel-01]. Several sources: [hr-travel-01, hr-travel-02].
3. If the blocks do not answer the question, reply with exactly this sentence and nothing else: {refusal}
4. Write numbers, dates and amounts exactly as the cited block states them.
5. Use double quotes only for text copied word for word from a cited block.
6. Each block has a Stand (the date its content is valid for). If blocks disagree, follow the most recent Stand and say which Stand the answer is based on.
7. Answer in English, briefly and plainly.""",
    "de": """Du beantwortest Fragen von Mitarbeitenden aus der Wissensbasis des Unternehmens, und nur aus ihr.
Regeln:
1. Verwende nur, was die Blöcke aus der Wissensbasis unten aussagen. Ergänze nichts aus eigenem Wissen.
2. Schreibe nach jeder Aussage die KB-ID des Blocks, aus dem sie stammt, in eckigen Klammern, wie im Blockkopf angegeben, z. B. [lb-atz-01]. Mehrere Quellen: [lb-atz-01, lb-atz-02].
3. Wenn die Blöcke die Frage nicht beantworten, antworte genau mit diesem Satz und sonst nichts: {refusal}
4. Gib Zahlen, Daten und Beträge genau so wieder, wie der zitierte Block sie nennt.
5. Setze nur wörtlich aus einem zitierten Block übernommenen Text in doppelte Anführungszeichen.
6. Jeder Block hat einen Stand (das Datum, für das sein Inhalt gilt). Widersprechen sich Blöcke, richte dich nach dem neuesten Stand und nenne den Stand, auf dem die Antwort beruht.
7. Antworte auf Deutsch, knapp und verständlich.""",
}

_RULES_CLAIMS = {
    "en": """You answer employees' questions from the company knowledge base, and only from it.
Reply with JSON only, in this form: {{"claims": [{{"text": "...", "evidence_ids": ["E1"]}}]}}
Rules:
1. Each claim is one short statement that the knowledge-base blocks below state. Add nothing from your own knowledge.
2. Keep to the wording of the block. evidence_ids lists the E-numbers of the blocks that state the claim (see the block headers).
3. Write numbers, dates and amounts exactly as the block states them.
4. No quotation marks inside a claim's text.
5. At most {max_claims} claims.
6. If the blocks do not answer the question, reply with {{"claims": []}}.
7. Each block has a Stand (the date its content is valid for). If blocks disagree, follow the most recent Stand.
8. Write the claims in English.""",
    "de": """Du beantwortest Fragen von Mitarbeitenden aus der Wissensbasis des Unternehmens, und nur aus ihr.
Antworte nur mit JSON in dieser Form: {{"claims": [{{"text": "...", "evidence_ids": ["E1"]}}]}}
Regeln:
1. Jede Aussage (claim) ist ein kurzer Satz, den die Blöcke aus der Wissensbasis unten aussagen. Ergänze nichts aus eigenem Wissen.
2. Bleib beim Wortlaut des Blocks. evidence_ids nennt die E-Nummern der Blöcke, die die Aussage treffen (siehe Blockkopf).
3. Gib Zahlen, Daten und Beträge genau so wieder, wie der Block sie nennt.
4. Keine Anführungszeichen im Text einer Aussage.
5. Höchstens {max_claims} Aussagen.
6. Wenn die Blöcke die Frage nicht beantworten, antworte mit {{"claims": []}}.
7. Jeder Block hat einen Stand (das Datum, für das sein Inhalt gilt). Widersprechen sich Blöcke, richte dich nach dem neuesten Stand.
8. Schreibe die Aussagen auf Deutsch.""",
}


def system_rules(mode: AnswerMode, language: str, max_claims: int = 12) -> str:
    lang = normalize_language(language)
    if mode is AnswerMode.CLAIMS:
        return _RULES_CLAIMS[lang].format(max_claims=max_claims)
    return _RULES_CITATIONS[lang].format(refusal=message(Key.REFUSAL, lang))


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


def render_block(ev: Evidence, mode: AnswerMode, language: str) -> str:
    labels = _LABELS[normalize_language(language)]
    c = ev.chunk
    pointer = f"{ev.pointer_id} — " if mode is AnswerMode.CLAIMS else ""
    head = f"Block {ev.block} — {pointer}[{c.entry_id}]" + (f" ({labels['xref']})" if c.expanded else "")
    lines = [head, f"{labels['title']}: {c.title}", f"{labels['section']}: {c.section}"]
    if c.stand:
        lines.append(f"Stand: {c.stand}")
    if c.legal_bases:
        lines.append(f"{labels['legal']}: {', '.join(c.legal_bases)}")
    return "\n".join(lines) + "\n\n" + c.text.strip()


def build_user_content(
    question: str,
    evidence: list[Evidence],
    mode: AnswerMode = AnswerMode.CITATIONS,
    language: str = "en",
    history: Sequence[str] = (),
) -> str:
    """Blocks first, the question last: the model reads the question right before it answers."""
    labels = _LABELS[normalize_language(language)]
    parts = [labels["blocks"], *(render_block(ev, mode, language) for ev in evidence)]
    if history:
        parts.append(labels["history"] + "\n" + "\n".join(f"- {h}" for h in history))
    parts.append(f"{labels['question']}: {question.strip()}")
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
    constrains decoding (vLLM guided_json, response_format, Ollama format)."""
    return GenerationRequest(
        messages=build_messages(question.text, evidence, mode, question.language, question.history),
        mode=mode,
        question=question.text,
        evidence=evidence,
        language=normalize_language(question.language),
        json_schema=CLAIMS_JSON_SCHEMA if mode is AnswerMode.CLAIMS else None,
    )


_FEEDBACK_INTRO = {
    "en": "Your answer could not be verified against the knowledge-base blocks:",
    "de": "Deine Antwort ließ sich nicht anhand der Blöcke aus der Wissensbasis belegen:",
}
_FEEDBACK_OUTRO = {
    "en": "Answer again and follow the rules. If the blocks do not answer the question, say so as the rules ask.",
    "de": "Antworte noch einmal und halte dich an die Regeln. Wenn die Blöcke die Frage nicht beantworten, "
    "sag das so, wie die Regeln es verlangen.",
}


def regeneration_feedback(violations: Sequence[Violation], language: str = "en") -> str:
    """The message appended for the one retry: what was wrong, one line each."""
    lang = normalize_language(language)
    lines = [_FEEDBACK_INTRO[lang]]
    for v in violations:
        where = f" (#{v.claim + 1})" if v.claim is not None else ""
        lines.append(f"- {v.kind}{where}: {v.detail}")
    lines.append(_FEEDBACK_OUTRO[lang])
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
