"""Citations-mode checks: an answer with inline [KB-ID] references.

The sound checks of docs/DESIGN.md 3.6, each finding a kind of policy.py's table; whether a
sentence says what its blocks say is the entailment judge's to decide (bot.answer.judge). A
sentence on what the KB does not cover (not_covered.py) is not checked.

Which blocks a sentence cites: its own references; else those of the next sentence of its
paragraph that has some (models often cite once at the end of a passage), else of the one
before; a paragraph without any, right after a cited one, those of the paragraph before; a
sentence still without any whose every number a cited sentence states, those of the sentences
that state them. The judge sees any other with every block the answer cites (a quotation or a link in it
fails at once), but for an uncited heading of the answer's own layout ("**Overtime**", "Zum Wechsel:": up to
six words, no number, no sentence end), which only names what the cited lines under it say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.answer.verify.links import find_links, missing_links
from bot.answer.verify.not_covered import says_not_covered
from bot.answer.verify.numbers import find_numbers, unstated
from bot.answer.verify.policy import finding
from bot.answer.verify.refs import IdSet, Ref, find_refs, ordered_ids, strip_refs
from bot.answer.verify.text import evidence_text, is_refusal, quote_in, quoted_passages, strip_think
from bot.models import Evidence, Verdict, Violation
from kb_index import markdown
from kb_index.sentences import sentences


@dataclass
class _Sentence:
    index: int  # 0-based over the whole answer
    text: str
    refs: list[Ref]
    cited: tuple[str, ...] = ()  # KB-IDs it relies on after inheritance

    @property
    def own_ids(self) -> tuple[str, ...]:
        return tuple(i for r in self.refs for i in r.ids)


def _sentences(text: str, known: IdSet, language: str) -> list[list[_Sentence]]:
    """The answer's sentences, grouped by paragraph (a list or a table is one group): its Markdown
    units (kb_index.markdown), so a hard-wrapped line does not end a sentence."""
    paragraphs: dict[int, list[str]] = {}
    lines = text.splitlines()
    for unit in markdown.units(text, html=False):
        if unit.kind != "code":
            paragraphs.setdefault(unit.group, []).append(_unit_text(unit, lines[unit.line], language))
    out, index = [], 0
    for paragraph in paragraphs.values():
        group = []
        for line in paragraph:
            for sentence in sentences(line, language):
                group.append(_Sentence(index, sentence, find_refs(sentence, known)))
                index += 1
        out.append(group)
    return out


def _unit_text(unit: markdown.Unit, line: str, language: str) -> str:
    """A unit's text; with the number its line opens with where that is a date's day ("1. März 2026"), no item's."""
    opening = re.match(r"(?:\s*[-*+>]\s)*\s*(\d+\.\s)", line) if unit.marker.strip()[:1].isdigit() else None
    whole = opening.group(1) + unit.text if opening else ""
    dated = opening and any(n.start == 0 and n.end > len(opening.group(1)) for n in find_numbers(whole, language))
    return whole if dated else unit.text


def _inherit(group: list[_Sentence]) -> None:
    """Fill `cited` of each sentence of one paragraph from its own or its neighbours' references."""
    for i, s in enumerate(group):
        if s.refs:
            s.cited = s.own_ids
            continue
        source = next((t for t in group[i + 1 :] if t.refs), None) or next((t for t in reversed(group[:i]) if t.refs), None)
        s.cited = source.own_ids if source else ()


def _assign_citations(groups: list[list[_Sentence]], language: str) -> list[list[_Sentence]]:
    """Fill `cited` of every sentence (module docstring). A paragraph nothing cites right after a
    cited one sums it up (a total, the lines of a worked example). One rule for the checks and for
    what the judge is asked, so nothing checked goes unjudged."""
    previous: list[_Sentence] = []
    for group in groups:
        _inherit(group)
        if not any(s.refs for s in group) and previous and previous[-1].cited:
            for s in group:
                s.cited = previous[-1].cited
        previous = group
    _restating([s for group in groups for s in group], language)
    return groups


def _restating(flat: list[_Sentence], language: str) -> None:
    """A sentence nothing cites whose every number a cited sentence states too (a short answer ahead
    of its details) rests on what those sentences cite."""
    stating: dict[str, list[str]] = {}
    for s in flat:
        for n in find_numbers(strip_refs(s.text, s.refs), language) if s.cited else ():
            for value in n.values:
                stating.setdefault(value, []).extend(s.cited)
    for s in flat:
        if s.cited or s.refs:
            continue
        numbers = find_numbers(strip_refs(s.text, s.refs), language)
        if numbers and all(n.values & stating.keys() for n in numbers):
            ids = [i for n in numbers for v in sorted(n.values & stating.keys()) for i in stating[v]]
            s.cited = tuple(dict.fromkeys(ids))


# "Stand: 2026-01", "(as of 2026-01)": the date the answer rests on, as the prompt's rules ask. A line
# that only names one is compared with the blocks' headers: it says nothing a judge could find in a text.
_STAND = r"^\W*(?:stand|as of|valid as of|gültig ab|based on the stand)"
_STAND_NOTE = re.compile(_STAND + r"\b", re.IGNORECASE)
_STAND_ONLY = re.compile(_STAND + r"\W*[\d\-./ ]+\W*$", re.IGNORECASE)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+[^\d.!?]+|\*\*[^*\d.!?]+\*\*:?|__[^_\d.!?]+__:?|[^\d.!?:*_]+:)\s*$")


@dataclass(frozen=True)
class _Context:
    language: str
    question: str
    stands: frozenset[str]  # every reading of the Stand of every block of the prompt


def _uncited(s: _Sentence, body: str, quotes: list[str], unquoted: str, ctx: _Context) -> list[Violation]:
    """A sentence nothing cites may say what has nothing to check (a heading, "In short:"),
    repeat the question's numbers, or name the Stand; no more."""
    if quotes or find_links(body):
        return [finding("UNCITED_SENTENCE", f"no citation for: {s.text}", s.index)]
    numbers = find_numbers(unquoted, ctx.language)
    stand_note = bool(_STAND_NOTE.match(body)) and all(n.values & ctx.stands for n in numbers)
    if unstated(unquoted, [], ctx.language, question=ctx.question) and not stand_note:
        # Its numbers may be stated in a block the answer cites elsewhere, which the judge, shown
        # all of those blocks, can find (judgement.statements); a quotation or a link cannot wait for it.
        return [finding("UNCITED_NUMBER", f"no citation for: {s.text}", s.index)]
    return []


def _check_sentence(s: _Sentence, blocks: dict[str, list[str]], ctx: _Context, answer_sources: list[str]) -> list[Violation]:
    """The checks of one sentence; `answer_sources` are the texts of every block the answer cites."""
    body = strip_refs(s.text, s.refs)
    quotes = quoted_passages(body)
    unquoted = body
    for q in quotes:  # a quotation is checked verbatim as a whole: its numbers need no second check
        unquoted = unquoted.replace(q, " ")
    if s.refs and not s.cited:
        return []  # cites only unknown ids: already an UNKNOWN_ID, nothing to check against
    if not s.cited:
        return _uncited(s, body, quotes, unquoted, ctx)
    sources = [t for kb_id in s.cited for t in blocks.get(kb_id, [])]
    where = f"[{', '.join(s.cited)}]"
    violations = [finding("QUOTE_NOT_IN_SOURCE", f"quotation {q!r} is not verbatim in {where}", s.index)
                  for q in quotes if not any(quote_in(q, source) for source in sources)]
    # A link of another block the answer cites is no made-up one, only cited a sentence too early or late.
    violations += [finding("LINK_NOT_IN_SOURCE", f"{link!r} is not in {where}", s.index)
                   for link in missing_links(body, sources) if link in missing_links(body, answer_sources)]
    # The refusal sentence beside an answer says what the KB lacks, which no block can state.
    if is_refusal(unquoted):
        return violations
    violations += [finding("NUMBER_NOT_IN_SOURCE", f"{where}: {raw!r} is not stated in the cited blocks", s.index)
                   for raw in unstated(unquoted, sources, ctx.language, question=ctx.question)]
    return violations


# "possible [doc-01]." without its reference: "possible ." -> "possible."
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class CitedSentence:
    index: int  # 0-based over the whole answer, as in Violation.claim
    text: str  # without its references
    cited: tuple[str, ...]  # the KB-IDs it relies on (module docstring: its own, or its paragraph's)


def cited_sentences(draft_text: str, evidence: list[Evidence], language: str = "en") -> list[CitedSentence]:
    """The sentences of a draft that would be posted, with the KB-IDs each rests on: what the judge is
    asked about (not the refusal sentence beside an answer, which no block can state). A sentence that
    still cites nothing ("No, never.", a summary ahead of the cited details) rests on every block the
    answer cites: nothing posted goes unasked."""
    known = IdSet([ev.entry_id for ev in evidence])
    groups = _assign_citations(_sentences(strip_think(draft_text), known, language), language)
    everything = tuple(dict.fromkeys(i for group in groups for s in group for i in s.cited))
    out = []
    for s in (s for group in groups for s in group):
        if not s.refs and _is_heading(s.text):
            continue
        cited = s.cited or everything
        body = _SPACE_BEFORE_STOP.sub(r"\1", " ".join(strip_refs(s.text, s.refs).split()))
        if cited and any(ch.isalnum() for ch in body) and not is_refusal(body) and not says_not_covered(body) \
                and not _STAND_ONLY.match(body):
            out.append(CitedSentence(s.index, body, cited))
    return out


def _is_heading(text: str) -> bool:
    return bool(_HEADING.match(text)) and len(text.split()) <= 6  # longer: a statement set in bold


def _unknown_id_violations(all_sentences: list[_Sentence]) -> list[Violation]:
    first: dict[str, tuple[str, int]] = {}  # each unknown id once, where it is first cited
    for s in all_sentences:
        for token in (t for ref in s.refs for t in ref.unknown):
            first.setdefault(token.casefold(), (token, s.index))
    return [finding("UNKNOWN_ID", f"[{token}] is not the KB-ID of any context block", i) for token, i in first.values()]


def verify_citations(draft_text: str, evidence: list[Evidence], language: str = "en", *, question: str = "") -> Verdict:
    """The sound checks of a citations-mode draft against the context blocks it was written from.
    `question` is what was asked: its numbers may be repeated."""
    text = strip_think(draft_text)
    known = IdSet([ev.entry_id for ev in evidence])
    groups = _sentences(text, known, language)
    flat = [s for group in groups for s in group]
    citations = ordered_ids([r for s in flat for r in s.refs])
    if is_refusal(text) and not citations:
        return Verdict(ok=True, refusal=True)
    violations = _unknown_id_violations(flat)
    gaps = [strip_refs(s.text, s.refs).strip() for s in flat if says_not_covered(strip_refs(s.text, s.refs))]
    if not any(s.refs for s in flat):
        if gaps and len(gaps) == len(flat):
            return Verdict(ok=True, refusal=True, not_covered=gaps)
        detail = "empty answer" if not text else "the answer cites no KB-ID"
        return Verdict(ok=False, violations=[finding("NO_CITATION", detail)])
    blocks: dict[str, list[str]] = {}
    for ev in evidence:
        blocks.setdefault(ev.entry_id, []).append(evidence_text(ev))
    stands = frozenset(v for ev in evidence if ev.chunk.stand
                       for n in find_numbers(ev.chunk.stand, ev.chunk.language, source=True) for v in n.values)
    ctx = _Context(language, question, stands)
    _assign_citations(groups, language)
    answer_sources = [t for kb_id in dict.fromkeys(i for s in flat for i in s.cited) for t in blocks.get(kb_id, [])]
    for s in flat:
        if not _partial_refusal(s):  # nothing in one a block could state (not_covered.py)
            violations += _check_sentence(s, blocks, ctx, answer_sources)
    return Verdict(ok=not violations, violations=violations, citations=citations, not_covered=gaps)


def _partial_refusal(s: _Sentence) -> bool:
    """A sentence that says only what the KB does not cover, and gives no link. Its numbers are those
    of what is missing, stated by no block, rightly: not checked, and the judge, who could only call
    them not stated, is not asked. A link is something to follow: a sentence with one is checked."""
    body = strip_refs(s.text, s.refs)
    return says_not_covered(body) and not find_links(body)
