"""From a verified draft to the Answer that is posted: footnotes and sources.

KB-IDs in the draft become numbered markers [1], [2] in order of first use, and
each number gets one Source. The markers index `Answer.sources`; what the
citation pointed at stays in `Answer.citations` as KB-IDs.
"""

from __future__ import annotations

import re
from typing import Any

from bot.answer.verify.refs import IdSet, find_refs
from bot.answer.verify.text import strip_think
from bot.i18n import Key, message
from bot.models import (
    Answer,
    AnswerMode,
    AuditMode,
    Claim,
    Evidence,
    Outcome,
    Question,
    Source,
    Verdict,
)


def _question_text(question: Question | str) -> str:
    return question.text if isinstance(question, Question) else question


def truncated_note(language: str, limit: int | None) -> list[str]:
    """The note that the question was cut to `limit` characters, when it was (`limit` not None)."""
    return [] if limit is None else [message(Key.TRUNCATED, language, limit=limit)]


def _question_notes(question: Question | str, language: str) -> list[str]:
    """Whatever the outcome, an asker whose question was cut is told so."""
    if isinstance(question, Question) and question.truncated:
        return truncated_note(language, len(question.text))
    return []


def make_source(n: int, ev: Evidence) -> Source:
    c = ev.chunk
    return Source(
        n=n,
        id=c.entry_id,
        title=c.title,
        section=c.section,
        stand=c.stand,
        url=c.url,
        page=c.page,
        passage=c.text,
        collection=c.collection,
        content_hash=c.content_hash or ev.evidence_id,
    )


class _Footnotes:
    """Numbers KB-IDs in order of first use; the first block seen for an entry is its source."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.sources: list[Source] = []

    def number(self, ev: Evidence) -> int:
        if ev.entry_id not in self.numbers:
            self.numbers[ev.entry_id] = len(self.numbers) + 1
            self.sources.append(make_source(self.numbers[ev.entry_id], ev))
        return self.numbers[ev.entry_id]

    @property
    def citations(self) -> list[str]:
        return list(self.numbers)


def render_citations_text(draft_text: str, evidence: list[Evidence]) -> tuple[str, list[Source], list[str]]:
    """(text with [n] markers, sources, KB-IDs in order of first use) of a citations-mode draft.

    A bracket of several ids becomes "[1][2]"; a bare mention keeps the id in the
    sentence and gets its marker after it. An entry with several blocks in context
    is sourced by its best-ranked block (the first in prompt order).
    """
    text = strip_think(draft_text)
    first_block: dict[str, Evidence] = {}
    for ev in evidence:
        first_block.setdefault(ev.entry_id, ev)
    notes = _Footnotes()
    out, position = [], 0
    for ref in find_refs(text, IdSet(list(first_block))):
        markers = "".join(f"[{notes.number(first_block[i])}]" for i in ref.ids)
        out.append(text[position : ref.start])
        out.append(f"{text[ref.start:ref.end]} {markers}" if ref.bare and markers else markers)
        position = ref.end
    out.append(text[position:])
    return _markers_inside_sentences("".join(out).strip()), notes.sources, notes.citations


# "Text. [1]" -> "Text [1].": the marker belongs to the sentence it backs,
# whichever side of the full stop the model put the citation.
_MARKERS_AFTER_STOP = re.compile(r"([.!?])[ \t]+((?:\[\d+\])+)(?=\s|$)")


def _markers_inside_sentences(text: str) -> str:
    return _MARKERS_AFTER_STOP.sub(r" \2\1", text)


def _claim_sentence(claim: Claim, markers: str) -> str:
    body = claim.text.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else "."
    body = body.rstrip(".!? ")
    return f"{body} {markers}{end}" if markers else f"{body}{end}"


def render_claims_text(claims: list[Claim], evidence: list[Evidence]) -> tuple[str, list[Source], list[str]]:
    """(text, sources, KB-IDs) from the verified claims, one sentence each with its
    markers. A footnote's source is the block the first claim citing the entry used."""
    by_pointer = {ev.pointer_id: ev for ev in evidence}
    notes = _Footnotes()
    sentences = []
    for claim in claims:
        if not claim.verified:
            continue
        numbers: list[int] = []
        for pointer in claim.evidence_ids:
            ev = by_pointer.get(pointer)
            if ev is not None and (n := notes.number(ev)) not in numbers:
                numbers.append(n)
        sentences.append(_claim_sentence(claim, "".join(f"[{n}]" for n in numbers)))
    return " ".join(sentences), notes.sources, notes.citations


def refusal_answer(
    question: Question | str, language: str = "en", mode: AnswerMode = AnswerMode.CITATIONS, n_context: int = 0
) -> Answer:
    """The KB has nothing on it: a verified refusal (no footnotes, nothing to review)."""
    return _own_words(
        question, message(Key.REFUSAL, language), Outcome.REFUSED, mode, n_context, verified=True, refused=True,
        notes=_question_notes(question, language),
    )


def uncertain_answer(
    question: Question | str,
    draft: str,
    verdict: Verdict,
    language: str = "en",
    mode: AnswerMode = AnswerMode.CITATIONS,
    n_context: int = 0,
) -> Answer:
    """Verification failed after the retry: the asker gets the uncertain message,
    the rejected draft and its violations go along for the review card."""
    return _own_words(
        question, message(Key.UNCERTAIN, language), Outcome.UNCERTAIN, mode, n_context, verified=False,
        refused=True, draft=draft, notes=_question_notes(question, language),
        audit_mode=verdict.audit_mode, violations=list(verdict.violations), json_fixups=list(verdict.json_fixups),
    )


def error_answer(
    question: Question | str, language: str = "en", mode: AnswerMode = AnswerMode.CITATIONS, n_context: int = 0
) -> Answer:
    """The model failed past all retries: an apology, so the asker is never left waiting."""
    text = message(Key.LLM_DOWN, language)
    return _own_words(question, text, Outcome.ERROR, mode, n_context, verified=False, refused=False)


def _own_words(
    question: Question | str, text: str, outcome: Outcome, mode: AnswerMode, n_context: int, **fields: Any
) -> Answer:
    """An answer in the bot's own words rather than the KB's: nothing cited, no footnotes."""
    return Answer(
        question=_question_text(question), answer=text, outcome=outcome, mode=mode, n_context=n_context, **fields
    )


def build_answer(
    question: Question | str,
    draft: str,
    verdict: Verdict,
    evidence: list[Evidence],
    mode: AnswerMode = AnswerMode.CITATIONS,
    language: str = "en",
) -> Answer:
    """The Answer for the final verdict on `draft`: posted, partial, refusal or uncertain."""
    n_context = len(evidence)
    if verdict.refusal:
        answer = refusal_answer(question, language, mode, n_context)
        answer.json_fixups = list(verdict.json_fixups)
        return answer
    partial = verdict.audit_mode is AuditMode.HYBRID
    if not verdict.ok and not partial:
        return uncertain_answer(question, draft, verdict, language, mode, n_context)
    if mode is AnswerMode.CLAIMS:
        text, sources, citations = render_claims_text(verdict.claims, evidence)
        if verdict.not_covered:  # not posted as claims: they are no facts; said as what they are
            text = f"{text}\n\n{' '.join(_claim_sentence(Claim(text=t, evidence_ids=[]), '') for t in verdict.not_covered)}"
    else:
        text, sources, citations = render_citations_text(draft, evidence)
    notes = [message(Key.PARTIAL, language)] if partial else []
    if verdict.not_covered:
        notes.append(message(Key.NOT_COVERED, language))
    return Answer(
        question=_question_text(question),
        answer=text,
        notes=notes + _question_notes(question, language),
        verified=True,
        refused=False,
        citations=citations,
        sources=sources,
        mode=mode,
        audit_mode=verdict.audit_mode,
        violations=list(verdict.violations) if partial else [],
        n_context=n_context,
        outcome=Outcome.ANSWERED,
        partial=partial,
        json_fixups=list(verdict.json_fixups),
        not_covered=list(verdict.not_covered),
    )


class FootnoteMarkup:
    """How a footnote line is written on one surface. This base writes plain text,
    as a terminal shows it; bot.slack.footnotes writes the same line in mrkdwn
    (KB text escaped and cut to fit, the title linked where the surface has links)."""

    url_separator = " · "  # between the line and a url that the title does not link to

    def title(self, source: Source) -> str:
        return source.title or source.id

    def text(self, value: str) -> str:
        """KB or model text as the surface shows it."""
        return value

    def section(self, value: str) -> str:
        return self.text(value)

    def stand(self, value: str) -> str:
        return self.text(value)

    def url(self, source: Source) -> str | None:
        """The url written after the line; None when there is none or the title links to it."""
        return source.url


PLAIN = FootnoteMarkup()


def footnote(source: Source, markup: FootnoteMarkup = PLAIN) -> str:
    """`[n] title · section · p. 4 · Stand YYYY-MM`, and the entry's url, in `markup`: the one footnote format.

    The page is "p." in every language, as "Stand" is: the footnote is a
    reference, and one form is what people learn to read.
    """
    parts = [markup.title(source)]
    if source.section:
        parts.append(markup.section(source.section))
    if source.page:
        parts.append(f"p. {source.page}")
    if source.stand:
        parts.append(f"Stand {markup.stand(source.stand)}")
    line = f"[{source.n}] " + " · ".join(parts)
    url = markup.url(source)
    return f"{line}{markup.url_separator}{url}" if url else line


def format_text_answer(answer: Answer, language: str = "en", markup: FootnoteMarkup = PLAIN) -> str:
    """The answer as text: the answer and its notes, a blank line, then one line per footnote.
    Plain for a terminal; Slack's notification text is the same in mrkdwn."""
    if not answer.sources:
        return markup.text(answer.text)
    lines = [markup.text(answer.text), "", f"{markup.text(message(Key.SOURCES, language))}:"]
    lines += [footnote(s, markup) for s in answer.sources]
    return "\n".join(lines)
