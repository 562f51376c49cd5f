"""Citations-mode verifier: an answer with inline [KB-ID] references.

Rules (docs/DESIGN.md 3.6), each a violation kind:
- UNKNOWN_ID: a cited id is not one of the context blocks' KB-IDs.
- NO_CITATION: the answer cites nothing at all (and is not a refusal: the refusal
  sentence and nothing else, see text.is_refusal).
- NUMBER_NOT_IN_SOURCE: a number, date or amount of a sentence is not stated by
  the blocks that sentence cites.
- QUOTE_NOT_IN_SOURCE: a double-quoted passage is not verbatim in a cited block.
- LINK_NOT_IN_SOURCE: a URL, e-mail address, phone number or Slack link of a
  sentence is not in the blocks it cites (links.py).
- NEGATION_NOT_IN_SOURCE: a sentence negates ("never", "cannot", "kein") and the
  best-matching sentences of the blocks it cites do not (support.negation_backed).
- UNCITED_SENTENCE: a sentence states a number, a quotation or a link, but neither
  it nor any sentence of its paragraph cites a block, so nothing can back it.

Which blocks a sentence cites: its own references; without any, those of the
next sentence of the same paragraph that has some (models often cite once at
the end of a passage); at the end of a paragraph, those of the sentence before
(a trailing "(Stand 2026-01)" belongs to what precedes it). Sentences without
numbers or quotations and without any citation in their paragraph (a heading,
"Kurz gesagt:") are allowed: there is nothing in them to check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.answer.verify.links import find_links, missing_links
from bot.answer.verify.numbers import missing_numbers
from bot.answer.verify.refs import IdSet, Ref, find_refs, ordered_ids, strip_refs
from bot.answer.verify.support import Weigher, negation_backed, weigher
from bot.answer.verify.text import is_refusal, paragraphs, quote_in, quoted_passages, sentences, strip_think
from bot.models import Evidence, Verdict, Violation


@dataclass
class _Sentence:
    index: int  # 0-based over the whole answer
    text: str
    refs: list[Ref]
    cited: tuple[str, ...] = ()  # KB-IDs it relies on after inheritance

    @property
    def own_ids(self) -> tuple[str, ...]:
        return tuple(i for r in self.refs for i in r.ids)

    @property
    def has_refs(self) -> bool:
        return bool(self.refs)


def block_texts(evidence: list[Evidence]) -> dict[str, list[str]]:
    """Per KB-ID, the text of each of its blocks as the model saw it: the header
    metadata counts, since a model may repeat the Stand or a legal basis."""
    texts: dict[str, list[str]] = {}
    for ev in evidence:
        c = ev.chunk
        header = " ".join(filter(None, [c.title, c.section, c.stand or "", *c.legal_bases]))
        texts.setdefault(c.entry_id, []).append(f"{header}\n{c.text}")
    return texts


def _sentences(text: str, known: IdSet, language: str) -> list[list[_Sentence]]:
    out, index = [], 0
    for paragraph in paragraphs(text):
        group = []
        for sentence in sentences(paragraph, language):
            group.append(_Sentence(index, sentence, find_refs(sentence, known)))
            index += 1
        out.append(group)
    return out


def _inherit(group: list[_Sentence]) -> None:
    """Fill `cited` of each sentence of one paragraph (rule in the module docstring)."""
    for i, s in enumerate(group):
        if s.has_refs:
            s.cited = s.own_ids
            continue
        later = next((t for t in group[i + 1 :] if t.has_refs), None)
        earlier = next((t for t in reversed(group[:i]) if t.has_refs), None)
        source = later or earlier
        s.cited = source.own_ids if source else ()


def _check_sentence(
    s: _Sentence, blocks: dict[str, list[str]], language: str, weight: Weigher
) -> list[Violation]:
    body = strip_refs(s.text, s.refs)
    quotes = quoted_passages(body)
    unquoted = body
    for q in quotes:  # a quotation is checked verbatim as a whole: its numbers and negations need no second check
        unquoted = unquoted.replace(q, " ")
    if s.has_refs and not s.cited:
        return []  # cites only unknown ids: already an UNKNOWN_ID, nothing to check against
    if not s.cited:
        if quotes or missing_numbers(unquoted, [], language) or find_links(body):
            return [Violation(kind="UNCITED_SENTENCE", detail=f"no citation for: {s.text}", claim=s.index)]
        return []
    sources = [t for kb_id in s.cited for t in blocks.get(kb_id, [])]
    violations = [
        Violation(
            kind="NUMBER_NOT_IN_SOURCE",
            detail=f"{number!r} is not stated in [{', '.join(s.cited)}]",
            claim=s.index,
        )
        for number in missing_numbers(unquoted, sources, language)
    ]
    violations += [
        Violation(
            kind="QUOTE_NOT_IN_SOURCE",
            detail=f"quotation {q!r} is not verbatim in [{', '.join(s.cited)}]",
            claim=s.index,
        )
        for q in quotes
        if not any(quote_in(q, source) for source in sources)
    ]
    violations += [
        Violation(kind="LINK_NOT_IN_SOURCE", detail=f"{link!r} is not in [{', '.join(s.cited)}]", claim=s.index)
        for link in missing_links(body, sources)
    ]
    # A quotation's negation is checked verbatim with it; the refusal sentence
    # next to an answer ("... [id]. The KB does not cover the rest.") says what
    # the KB lacks, which no block can state.
    if not is_refusal(unquoted) and not negation_backed(unquoted, sources, language, weight):
        violations.append(
            Violation(
                kind="NEGATION_NOT_IN_SOURCE",
                detail=f"the sentence negates, the matching sentences of [{', '.join(s.cited)}] do not: {body.strip()}",
                claim=s.index,
            )
        )
    return violations


# "möglich [lb-atz-01]." without its reference: "möglich ." -> "möglich."
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class CitedSentence:
    index: int  # 0-based over the whole answer, as in Violation.claim
    text: str  # without its references
    cited: tuple[str, ...]  # the KB-IDs it relies on (module docstring: its own, or its paragraph's)


def cited_sentences(draft_text: str, evidence: list[Evidence], language: str = "en") -> list[CitedSentence]:
    """The sentences of a draft that rest on blocks, with the KB-IDs each rests on: what
    the entailment judge is asked about. The refusal sentence beside an answer is left
    out: it says what the KB lacks, which no block can state."""
    known = IdSet([ev.entry_id for ev in evidence])
    out = []
    for group in _sentences(strip_think(draft_text), known, language):
        _inherit(group)
        for s in group:
            body = _SPACE_BEFORE_STOP.sub(r"\1", " ".join(strip_refs(s.text, s.refs).split()))
            if s.cited and any(ch.isalnum() for ch in body) and not is_refusal(body):
                out.append(CitedSentence(s.index, body, s.cited))
    return out


def _unknown_id_violations(all_sentences: list[_Sentence]) -> list[Violation]:
    seen: set[str] = set()
    out = []
    for s in all_sentences:
        for ref in s.refs:
            for token in ref.unknown:
                if token.casefold() not in seen:
                    seen.add(token.casefold())
                    out.append(
                        Violation(
                            kind="UNKNOWN_ID",
                            detail=f"[{token}] is not the KB-ID of any context block",
                            claim=s.index,
                        )
                    )
    return out


def verify_citations(
    draft_text: str, evidence: list[Evidence], language: str = "en", idf: Mapping[str, float] | Weigher | None = None
) -> Verdict:
    """Check a citations-mode draft against the context blocks it was written from.

    `idf` weighs words where the negation rule looks for a sentence's best
    matches (support.weigher); without it every word weighs the same.
    """
    weight = weigher(idf)
    text = strip_think(draft_text)
    known = IdSet([ev.entry_id for ev in evidence])
    groups = _sentences(text, known, language)
    flat = [s for group in groups for s in group]
    citations = ordered_ids([r for s in flat for r in s.refs])
    if is_refusal(text) and not citations:
        return Verdict(ok=True, refusal=True)
    violations = _unknown_id_violations(flat)
    if not any(s.has_refs for s in flat):
        detail = "empty answer" if not text else "the answer cites no KB-ID"
        return Verdict(ok=False, violations=[Violation(kind="NO_CITATION", detail=detail)])
    blocks = block_texts(evidence)
    for group in groups:
        _inherit(group)
    for s in flat:
        violations += _check_sentence(s, blocks, language, weight)
    return Verdict(ok=not violations, violations=violations, citations=citations)
