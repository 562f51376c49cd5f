"""One statement (an answer sentence, or a claim) against the blocks it cites: align, then check.

Both verifiers (citations.py, claims.py) hand each statement here with the
blocks it cites. The statement is aligned to the sentences of those blocks
that state it (align.py), and then checked:

- numbers: each must be stated by the cited blocks (any spelling, any language:
  numbers.py), or be one the question gave, or be worked out from one the
  question gave (1 % of its list price); and a matching sentence that states
  another number of the same unit ("vier Wochen" against the statement's "6
  Wochen") fails it even when the other number stands elsewhere in the block;
- commitments (commitments.py): a bound, an order, "only", "all"/"some" the
  statement adds, or turns into its opposite ("spätestens" for "frühestens"),
  against the aligned sentences; checked by family, so "bis zu" backs "höchstens"
  and "vier Wochen" backs "four weeks";
- negation, both ways: a negation the aligned sentences do not have
  (NEGATION_NOT_IN_SOURCE), and one they have and the statement dropped
  (NEGATION_DROPPED), including by affix ("pfändbar" for "unpfändbar"). An
  exception stated as a negation ("nicht, wenn ...") for "außer ..." passes,
  and the reverse;
- words (same language): content words the aligned sentences lack but other
  sentences of the prompt's blocks have (WORDS_NOT_IN_SOURCE): a wrong actor
  or object is taken from elsewhere in the context ("Elterngeldstelle" for
  "Arbeitgeber");
- support (claims, and citations sentences without a number or quote): the
  aligned sentences must hold enough of the statement, by words or by
  meaning (UNSUPPORTED_CLAIM).

Thresholds were chosen on the tune half of bench/trust (drafts written as
capable models write, right and with realistic mistakes), and are reported on
its test half; SciFact (bench/verifier_scifact.py) is measured in the same run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.answer.verify import commitments as cm
from bot.answer.verify.align import (
    Aligner,
    Alignment,
    Passage,
    SourceSentence,
    clauses,
    source_sentences,
    word_terms,
)
from bot.answer.verify.numbers import Number, WorkedOut, find_numbers
from bot.answer.verify.support import _NEGATIVE_RESULT, anchor_found, anchors, content_terms, match_term

# Claims: the aligned sentences must hold this share of the claim's word weight,
# or (an embedder configured) be this close in meaning.
CLAIM_COVERAGE = 0.45
CLAIM_COSINE = 0.86
# Across languages the words cannot be counted: meaning alone, held to this.
CROSS_LANGUAGE_COSINE = 0.84

# WORDS_NOT_IN_SOURCE: the share of the statement's word weight that the aligned
# sentences lack and other sentences of the context have, past which the
# statement took its words from somewhere else.
MISPLACED_SHARE = 0.2
MIN_MISPLACED_TERMS = 1

# How far from a number a bound or order word is read as belonging to it
# ("frühestens acht Wochen vor", "20 Tage oder mehr"), in characters.
ATTACHED_BEFORE = 30
ATTACHED_AFTER = 25


@dataclass(frozen=True)
class Problem:
    kind: str
    detail: str


@dataclass
class StatementContext:
    """What every statement of one answer is checked with."""

    language: str  # the answer's
    aligner: Aligner
    question: str = ""
    question_language: str = ""
    passages: Sequence[Passage] = ()  # every block of the prompt: where else words stand
    _pool: list[SourceSentence] | None = field(default=None, repr=False)
    _question_numbers: list[Number] | None = field(default=None, repr=False)
    _worked: WorkedOut | None = field(default=None, repr=False)

    @property
    def pool(self) -> list[SourceSentence]:
        if self._pool is None:
            self._pool = source_sentences(self.passages)
        return self._pool

    @property
    def question_numbers(self) -> list[Number]:
        if self._question_numbers is None:
            self._question_numbers = find_numbers(self.question, self.question_language or self.language)
        return self._question_numbers

    @property
    def worked(self) -> WorkedOut:
        """What the answer may work out from the question; one for the whole answer, so its steps chain."""
        if self._worked is None:
            self._worked = WorkedOut(self.question_numbers, _numbers_of(self.passages))
        return self._worked


def _passage_text(p: Passage) -> str:
    return "\n".join(filter(None, [p.title, p.section, *p.header_extra, p.text]))


def _numbers_of(passages: Sequence[Passage]) -> list[Number]:
    return [n for p in passages for n in find_numbers(_passage_text(p), p.language, source=True)]


def _sentence_numbers(aligned: Sequence[SourceSentence]) -> list[Number]:
    return [n for s in aligned for n in find_numbers(s.text, s.language, source=True)]


def _values(numbers: Sequence[Number]) -> set[str]:
    return {v for n in numbers for v in n.values}


def _other_number(n: Number, said: list[Number], aligned: list[Number], aligned_values: set[str],
                  asked_values: set[str]) -> bool:
    """Does the matching sentence give another value in the one slot this number fills ("vier
    Wochen" where the statement says "6 Wochen")? Only when both have one number of that unit:
    a sentence of several amounts does not say which one the statement means."""
    if not n.unit or n.values & (aligned_values | asked_values):
        return False
    mine = {v for m in said if m.unit == n.unit for v in m.values}
    theirs = {frozenset(m.values) for m in aligned if m.unit == n.unit}
    return len(theirs) == 1 and mine == set(n.values)


def check_numbers(text: str, cited: Sequence[Passage], alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    stated = _numbers_of(cited)
    stated_values = _values(stated)
    asked_values = _values(ctx.question_numbers)
    aligned = _sentence_numbers(alignment.sentences)
    aligned_values = _values(aligned)
    problems = []
    said = find_numbers(text, ctx.language)
    for n in said:
        if n.values & stated_values:
            if _other_number(n, said, aligned, aligned_values, asked_values):
                other = next(m.raw for m in aligned if m.unit == n.unit)
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r}: the matching sentence says {other!r}"))
            continue
        if n.values & asked_values or ctx.worked.accepts(n):
            continue
        problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r} is not stated in the cited blocks, nor worked out "
                                                         "from the question's numbers"))
    return problems


# ------------------------------------------------------------------ commitments


def _families_near(text: str, language: str, start: int, end: int, *, strong_only: bool = False) -> set[str]:
    return {
        c.family
        for c in cm.find_cues(text, language)
        if start - ATTACHED_BEFORE <= c.start and c.end <= end + ATTACHED_AFTER and (c.strong or not strong_only)
    }


def _aligned_families(aligned: Sequence[SourceSentence]) -> set[str]:
    return {c.family for s in aligned for c in cm.find_cues(s.text, s.language)}


def _family_label(family: str, text: str, language: str) -> str:
    words = [c.phrase for c in cm.find_cues(text, language) if c.family == family]
    return repr(words[0]) if words else family.lower()


def check_commitments(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    if not alignment.sentences:
        return []
    lang = ctx.language
    said = [c for c in cm.find_cues(text, lang) if c.strong and c.family != "NEG"]
    stated = _aligned_families(alignment.sentences)
    source = " / ".join(alignment.texts)
    problems = []
    for family in dict.fromkeys(c.family for c in said):
        backed = bool(cm.BACKED_BY[family] & stated)
        if backed:
            continue
        opposite = cm.OPPOSITE.get(family, frozenset()) & stated
        word = _family_label(family, text, lang)
        if opposite:
            problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} where the matching sentence says the opposite: {source}"))
        elif family in cm.ADDED_FAILS:
            problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} is not in the matching sentence: {source}"))
    problems += _number_bounds(text, alignment, ctx)
    return problems


def _number_bounds(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    """A bound or order attached to a number, against the same number in the aligned sentences:
    "spätestens acht Wochen vor" where they say "frühestens acht Wochen vor"."""
    problems = []
    for n in find_numbers(text, ctx.language):
        mine = _families_near(text, ctx.language, n.start, n.end, strong_only=True) - {"NEG", "ALL", "SOME"}
        if not mine:
            continue
        theirs: set[str] = set()
        seen = False
        for s in alignment.sentences:
            for m in find_numbers(s.text, s.language, source=True):
                if m.values & n.values:
                    seen = True
                    theirs |= _families_near(s.text, s.language, m.start, m.end)
        if not seen or not theirs:
            continue
        for family in mine:
            if not cm.BACKED_BY[family] & theirs and cm.OPPOSITE.get(family, frozenset()) & theirs:
                word = _family_label(family, text, ctx.language)
                problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} {n.raw}: the matching sentence says otherwise"
                                                               f" about {n.raw}"))
    return problems


# ------------------------------------------------------------------ negation


def _states_negative(text: str, language: str) -> bool:
    """Does a source sentence state something negative? Read generously, bounds included
    ("nicht mehr als"): this side decides whether a correct answer is rejected."""
    plain = text.replace("’", "'")
    if cm.families(text, language) & {"NEG", "EXCEPT"} or _RAW_NEGATION[language if language == "de" else "en"].search(plain):
        return True
    return bool(_NEGATIVE_RESULT.get(language, _NEGATIVE_RESULT["en"]).search(text))


_RAW_NEGATION = {
    "en": re.compile(r"\b(?:not|no|never|none|nothing|without|cannot|\w+n't)\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:nicht|kein\w*|nie|niemals|ohne|nichts)\b", re.IGNORECASE),
}

# A dropped negation is claimed only against a clause that holds this share of the
# statement's words: below it, the clause may be about something else.
DROPPED_CLAUSE_SHARE = 0.4


def _best_clause(words: list[str], language: str, aligned: Sequence[SourceSentence]) -> tuple[str, str] | None:
    """The clause of the aligned sentences that holds most of the statement's words (text, language),
    if it holds DROPPED_CLAUSE_SHARE of them; commas end clauses (German subordinate clauses)."""
    best, best_score = None, 0
    for s in aligned:
        if s.language != language:
            continue
        for clause in clauses(s.text, commas=True):
            held = set(content_terms(clause, language))
            score = sum(1 for t in words if match_term(t, held, language))
            if score > best_score:
                best, best_score = (clause, s.language), score
    if best is None or best_score < DROPPED_CLAUSE_SHARE * len(words):
        return None
    return best


def check_negation(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    if not alignment.sentences:
        return []
    lang = ctx.language
    source = " / ".join(alignment.texts)
    said = cm.families(text, lang)
    if "NEG" in said:
        if not any(_states_negative(s.text, s.language) for s in alignment.sentences):
            return [Problem("NEGATION_NOT_IN_SOURCE", f"the statement negates, the matching sentence does not: {source}")]
        return []
    if said & {"EXCEPT", "ONLY"} or _NEGATIVE_RESULT.get(lang, _NEGATIVE_RESULT["en"]).search(text):
        return []  # an exception or restriction stated instead of the negation
    words = list(dict.fromkeys(word_terms(text, lang)))
    best = _best_clause(words, lang, alignment.sentences)
    if best is not None:
        for said_word, stated_word in cm.flipped_words(text, best[0], lang):
            return [Problem("NEGATION_DROPPED", f"{said_word!r} where the matching sentence says {stated_word!r}: {best[0]}")]
    if best is None and alignment.cross_language and len(alignment.sentences) == 1:
        only = alignment.sentences[0]
        if len(clauses(only.text, commas=True)) == 1:
            best = (only.text, only.language)
    if best is not None and cm.negates(*best):
        return [Problem("NEGATION_DROPPED", f"the matching sentence negates, the statement does not: {best[0]}")]
    return []


# ------------------------------------------------------------------ words


def check_words(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    """Words of the statement that the aligned sentences lack and another sentence of the prompt has."""
    if alignment.cross_language or not alignment.missing:
        return []
    lang = ctx.language
    asked = set(word_terms(ctx.question, lang)) if ctx.question else set()
    aligned = set(alignment.sentences)
    elsewhere = [s for s in ctx.pool if s.language == lang and s not in aligned]
    weight = ctx.aligner.weight
    words = list(dict.fromkeys(word_terms(text, lang)))
    total = sum(weight(t) for t in words) or 1.0
    misplaced = [
        t for t in alignment.missing
        if not match_term(t, asked, lang) and any(match_term(t, s.terms, lang) for s in elsewhere)
    ]
    share = sum(weight(t) for t in misplaced) / total
    if len(misplaced) >= MIN_MISPLACED_TERMS and share >= MISPLACED_SHARE:
        return [Problem("WORDS_NOT_IN_SOURCE", f"{', '.join(misplaced)}: not in the matching sentence "
                                               f"({' / '.join(alignment.texts)}), but elsewhere in the context")]
    return []


# Currency and unit codes a model writes in its own style ("EUR" for "€"): no names.
_NOT_NAMES = frozenset({"EUR", "USD", "CHF", "GBP", "KM", "CET", "CEST", "UTC", "AM", "PM", "PDF"})


def check_names(text: str, cited: Sequence[Passage], ctx: StatementContext) -> list[Problem]:
    """Names and codes ("PTEN", "A1", "SGB III") must be in the cited blocks, spelled alike in any language."""
    texts = [_passage_text(p) for p in cited]
    missing = [a for a in anchors(text, ctx.language)
               if a.upper() not in _NOT_NAMES and not anchor_found(a, texts, ctx.language)]
    if missing:
        return [Problem("UNSUPPORTED_CLAIM", f"names not in the cited blocks: {', '.join(missing)}")]
    return []


def check_support(alignment: Alignment) -> list[Problem]:
    if alignment.cross_language:
        ok = alignment.cosine is not None and alignment.cosine >= CROSS_LANGUAGE_COSINE
    else:
        ok = alignment.coverage >= CLAIM_COVERAGE or (alignment.cosine is not None and alignment.cosine >= CLAIM_COSINE)
    if ok:
        return []
    missing = ", ".join(alignment.missing) or "-"
    return [Problem("UNSUPPORTED_CLAIM", f"the cited evidence does not state this (words not found: {missing})")]


_QUOTED_SPAN = re.compile(r"„[^“”\"]*[“”]|“[^”]*”|\"[^\"]*\"|»[^«]*«|«[^»]*»")


def check_statement(
    text: str, cited: Sequence[Passage], ctx: StatementContext, *, need_support: bool
) -> tuple[list[Problem], Alignment]:
    """Every check of one statement (its quotations already taken out by the caller)."""
    pool = source_sentences(cited)
    alignment = ctx.aligner.align(text, ctx.language, pool)
    problems = check_numbers(text, cited, alignment, ctx)
    problems += check_negation(text, alignment, ctx)
    problems += check_commitments(text, alignment, ctx)
    if need_support:
        problems += check_support(alignment) or check_names(text, cited, ctx)
    problems += check_words(text, alignment, ctx)
    return problems, alignment
