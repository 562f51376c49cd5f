"""Citations-mode verifier: an answer with inline [KB-ID] references.

Rules (docs/DESIGN.md 3.6), each a violation kind:
- UNKNOWN_ID: a cited id is not one of the context blocks' KB-IDs.
- NO_CITATION: the answer cites nothing at all (and is not a refusal: the refusal
  sentence and nothing else, see text.is_refusal).
- QUOTE_NOT_IN_SOURCE: a double-quoted passage is not verbatim in a cited block.
- LINK_NOT_IN_SOURCE: a URL, e-mail address, phone number or Slack link of a
  sentence is not in the blocks it cites, nor in any other block the answer
  cites (links.py).
- the checks of one statement against the sentences of its blocks that state it
  (statement.py): NUMBER_NOT_IN_SOURCE, SCOPE_NOT_IN_SOURCE, NEGATION_NOT_IN_SOURCE,
  NEGATION_DROPPED, WORDS_NOT_IN_SOURCE.
- UNCITED_SENTENCE: a sentence states a number (not the question's, not a Stand,
  not a written-out sum), a quotation or a link, but neither it nor any sentence
  of its paragraph cites a block, so nothing can back it. For numbers alone the
  finding is soft: the judge is asked about the sentence with every block the
  answer cites.

A sentence that says what the KB does not cover (not_covered.py) is a partial
refusal: not checked, listed in Verdict.not_covered.

Which blocks a sentence cites: its own references; without any, those of the
next sentence of the same paragraph that has some (models often cite once at
the end of a passage); at the end of a paragraph, those of the sentence before
(a trailing "(Stand 2026-01)" belongs to what precedes it); a paragraph without
any, right after one with some, those of the paragraph before ("Zusammen
180,90 €"); a sentence still without any whose every number a cited sentence
states too (a short answer ahead of its details), those of the sentences that
state them. Sentences without numbers or quotations and without any citation
(a heading, "Kurz gesagt:") are allowed: there is nothing in them to check.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from bot.answer.verify.align import Aligner, Passage
from bot.answer.verify.calculation import ARITHMETIC
from bot.answer.verify.links import find_links, missing_links
from bot.answer.verify.not_covered import says_not_covered
from bot.answer.verify.numbers import find_numbers
from bot.answer.verify.refs import IdSet, Ref, find_refs, ordered_ids, strip_refs
from bot.answer.verify.statement import StatementContext, check_statement
from bot.answer.verify.support import Weigher, weigher
from bot.answer.verify.text import is_refusal, quote_in, quoted_passages, strip_think
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


def passage(ev: Evidence) -> Passage:
    """A block as the statement checks read it (align.Passage): its text, language and header."""
    c = ev.chunk
    extra = tuple(filter(None, [f"Stand: {c.stand}" if c.stand else "", *c.legal_bases]))
    return Passage(c.text, c.language, c.title, c.section, extra)


def _sentences(text: str, known: IdSet, language: str) -> list[list[_Sentence]]:
    """The answer's sentences, grouped by paragraph (a list is one group): its Markdown
    units (kb_index.markdown), so a hard-wrapped line does not end a sentence."""
    out, index = [], 0
    for paragraph in unit_groups(text):
        group = []
        for unit in paragraph:
            for sentence in sentences(unit, language):
                group.append(_Sentence(index, sentence, find_refs(sentence, known)))
                index += 1
        out.append(group)
    return out


def unit_groups(text: str) -> list[list[str]]:
    """The text's units (paragraphs, list items, rows, headings), those of one list or table together."""
    groups: dict[int, list[str]] = {}
    for unit in markdown.units(text, html=False):
        if unit.kind != "code":
            groups.setdefault(unit.group, []).append(unit.text)
    return list(groups.values())


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


def _assign_citations(groups: list[list[_Sentence]], language: str) -> list[list[_Sentence]]:
    """Fill `cited` of every sentence: what its paragraph cites (_inherit), and a paragraph
    without any citation right after a cited one sums that one up ("Together 180,90 €", the
    lines of a worked example): it rests on what the paragraph before cites; a sentence still
    without any that repeats numbers cited sentences state rests on what they cite (_restating).
    One rule for the checks and for what the judge is asked, so nothing checked goes unjudged."""
    previous: list[_Sentence] = []
    for group in groups:
        _inherit(group)
        if not any(s.has_refs for s in group) and previous and previous[-1].cited:
            for s in group:
                s.cited = previous[-1].cited
        previous = group
    _restating([s for group in groups for s in group], language)
    return groups


def _restating(flat: list[_Sentence], language: str) -> None:
    """A sentence nothing cites whose every number a cited sentence of the answer states too (the short
    answer ahead of its details: "Kurz: 419 € bekommst du zurück.") rests on what those sentences cite."""
    stating: dict[str, list[str]] = {}
    for s in flat:
        for n in find_numbers(strip_refs(s.text, s.refs), language) if s.cited else ():
            for value in n.values:
                stating.setdefault(value, []).extend(s.cited)
    for s in flat:
        if s.cited or s.has_refs:
            continue
        numbers = find_numbers(strip_refs(s.text, s.refs), language)
        if numbers and all(n.values & stating.keys() for n in numbers):
            ids = [i for n in numbers for v in sorted(n.values & stating.keys()) for i in stating[v]]
            s.cited = tuple(dict.fromkeys(ids))


# "Stand: 2026-01", "(Stand 2026-01)", "as of 2026-01": the date the answer rests on, as rule 6 asks.
_STAND_NOTE = re.compile(r"^\W*(?:stand|as of|valid as of|gültig ab|based on the stand)\b", re.IGNORECASE)


# A line that only names a Stand ("Stand: 2026-01"): the checks compare it with the blocks' headers;
# it says nothing a judge could find in a block's text.
_STAND_ONLY = re.compile(r"^\W*(?:stand|as of|valid as of|gültig ab|based on the stand)\W*[\d\-./ ]+\W*$", re.IGNORECASE)


def _stand_note(body: str, ctx: StatementContext) -> bool:
    """An uncited line that only names the Stand of a block of the prompt."""
    stands = {v for p in ctx.passages for e in p.header_extra if e.startswith("Stand:")
              for n in find_numbers(e, p.language, source=True) for v in n.values}
    numbers = find_numbers(body, ctx.language)
    return bool(_STAND_NOTE.match(body)) and all(n.values & stands for n in numbers)


def _uncited(s: _Sentence, body: str, quotes: list[str], unquoted: str, ctx: StatementContext) -> list[Violation]:
    """A sentence nothing cites may say what has nothing to check (a heading, "Kurz gesagt:"),
    repeat the question's numbers or work with them, or name the Stand; no more."""
    asked = {v for q in ctx.question_numbers for v in q.values}
    # A line of arithmetic ("5.200 € × 3 ÷ 65 = 240 €") shows its work: numbers of any block may stand in it.
    given = asked | (_prompt_values(ctx) if ARITHMETIC.search(unquoted) else set())
    numbers = [n for n in find_numbers(unquoted, ctx.language)
               if not n.values & given and not ctx.worked.accepts(n, unquoted, ctx.language)]
    if quotes or find_links(body):
        return [Violation(kind="UNCITED_SENTENCE", detail=f"no citation for: {s.text}", claim=s.index)]
    if numbers and not _stand_note(body, ctx):
        # Soft: its numbers may be stated in a block the answer cites elsewhere, which the judge, shown
        # all of those blocks, can find (judgement.statements); a quotation or a link cannot wait for it.
        return [Violation(kind="UNCITED_SENTENCE", detail=f"no citation for: {s.text}", claim=s.index, soft=True)]
    return []


def _check_sentence(
    s: _Sentence, blocks: dict[str, list[str]], passages: dict[str, list[Passage]], ctx: StatementContext,
    answer_sources: list[str],
) -> list[Violation]:
    """The checks of one sentence; `answer_sources` are the texts of every block the answer cites."""
    body = strip_refs(s.text, s.refs)
    quotes = quoted_passages(body)
    unquoted = body
    for q in quotes:  # a quotation is checked verbatim as a whole: its numbers and negations need no second check
        unquoted = unquoted.replace(q, " ")
    if s.has_refs and not s.cited:
        return []  # cites only unknown ids: already an UNKNOWN_ID, nothing to check against
    if not s.cited:
        return _uncited(s, body, quotes, unquoted, ctx)
    sources = [t for kb_id in s.cited for t in blocks.get(kb_id, [])]
    cited = [p for kb_id in s.cited for p in passages.get(kb_id, [])]
    where = f"[{', '.join(s.cited)}]"
    violations = [
        Violation(
            kind="QUOTE_NOT_IN_SOURCE",
            detail=f"quotation {q!r} is not verbatim in {where}",
            claim=s.index,
        )
        for q in quotes
        if not any(quote_in(q, source) for source in sources)
    ]
    violations += [
        Violation(kind="LINK_NOT_IN_SOURCE", detail=f"{link!r} is not in {where}", claim=s.index)
        for link in missing_links(body, sources)
        # a link of another block the answer cites is no made-up one, only cited a sentence too early or late
        if link in missing_links(body, answer_sources)
    ]
    # The refusal sentence next to an answer ("... [id]. The KB does not cover the
    # rest.") says what the KB lacks, which no block can state.
    if is_refusal(unquoted):
        return violations
    problems, _ = check_statement(unquoted, cited, ctx, need_support=False)
    violations += [Violation(kind=p.kind, detail=f"{where}: {p.detail}", claim=s.index, soft=p.soft) for p in problems]
    return violations


# "möglich [lb-atz-01]." without its reference: "möglich ." -> "möglich."
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class CitedSentence:
    index: int  # 0-based over the whole answer, as in Violation.claim
    text: str  # without its references
    cited: tuple[str, ...]  # the KB-IDs it relies on (module docstring: its own, or its paragraph's)


def cited_sentences(
    draft_text: str, evidence: list[Evidence], language: str = "en", *, uncited: Collection[int] = ()
) -> list[CitedSentence]:
    """The sentences of a draft that rest on blocks, with the KB-IDs each rests on: what
    the entailment judge is asked about. The refusal sentence beside an answer is left
    out: it says what the KB lacks, which no block can state. A sentence of `uncited`
    (held back by a soft UNCITED_SENTENCE) rests on every block the answer cites."""
    known = IdSet([ev.entry_id for ev in evidence])
    groups = _assign_citations(_sentences(strip_think(draft_text), known, language), language)
    everything = tuple(dict.fromkeys(i for group in groups for s in group for i in s.cited))
    out = []
    for s in (s for group in groups for s in group):
        cited = s.cited or (everything if s.index in uncited else ())
        body = _SPACE_BEFORE_STOP.sub(r"\1", " ".join(strip_refs(s.text, s.refs).split()))
        if cited and any(ch.isalnum() for ch in body) and not is_refusal(body) and not says_not_covered(body) \
                and not _STAND_ONLY.match(body):
            out.append(CitedSentence(s.index, body, cited))
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
    draft_text: str,
    evidence: list[Evidence],
    language: str = "en",
    idf: Mapping[str, float] | Weigher | None = None,
    *,
    question: str = "",
    question_language: str = "",
    aligner: Aligner | None = None,
) -> Verdict:
    """Check a citations-mode draft against the context blocks it was written from.

    `idf` weighs words (support.weigher); without it every word weighs the same.
    `question` is what was asked: its numbers may be repeated and worked with.
    `aligner` aligns each sentence to the block sentences that state it; without
    one, by words only (align.Aligner).
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
    gaps = [strip_refs(s.text, s.refs).strip() for s in flat if says_not_covered(strip_refs(s.text, s.refs))]
    if not any(s.has_refs for s in flat):
        if gaps and len(gaps) == len(flat):
            return Verdict(ok=True, refusal=True, not_covered=gaps)
        detail = "empty answer" if not text else "the answer cites no KB-ID"
        return Verdict(ok=False, violations=[Violation(kind="NO_CITATION", detail=detail)])
    blocks = block_texts(evidence)
    passages: dict[str, list[Passage]] = {}
    for ev in evidence:
        passages.setdefault(ev.entry_id, []).append(passage(ev))
    ctx = StatementContext(language, aligner or Aligner(weight), question, question_language,
                           [passage(ev) for ev in evidence], answer=text)
    _assign_citations(groups, language)
    answer_sources = [t for kb_id in dict.fromkeys(i for s in flat for i in s.cited) for t in blocks.get(kb_id, [])]
    checked = [s for s in flat if not _partial_refusal(s)]  # nothing in one a block could state (not_covered.py)
    # Read once before checking: what the answer works out (ctx.worked) is known then wherever it is
    # stated, so a result ahead of its working ("11 days left, worth 2,310 EUR", then the steps) passes.
    for s in checked:
        _check_sentence(s, blocks, passages, ctx, answer_sources)
    for s in checked:
        violations += _check_sentence(s, blocks, passages, ctx, answer_sources)
    return Verdict(ok=not violations, violations=violations, citations=citations, not_covered=gaps)


def _prompt_values(ctx: StatementContext) -> set[str]:
    return {v for p in ctx.passages for n in find_numbers(p.text, p.language, source=True) for v in n.values}


def _partial_refusal(s: _Sentence) -> bool:
    """A sentence that says only what the KB does not cover, and gives no link. The numbers it names
    are those of what is missing ("whether 25 December is one", "whether the 350 EUR difference is
    yours to pay"): worked out from the asker's case, often, and stated by no block, rightly. They are
    not checked, and the judge is not asked: it could only call what is missing not stated. A link is
    something to follow, so a sentence with one is checked as any."""
    body = strip_refs(s.text, s.refs)
    return says_not_covered(body) and not find_links(body)
