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
from bot.answer.verify.support import (
    _NEGATIVE_RESULT,
    NEGATION_NEAR_SHARE,
    anchor_found,
    anchors,
    content_terms,
    match_term,
)

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

# A number must stand in the sentences the statement is aligned to, not just somewhere in
# the cited block ("ab 14 Uhr" added to a rule that names 14 Uhr for another case).
STRICT_NUMBERS = True
MIN_DISTINCTIVE = 13
MIN_MISPLACED_TERMS = 1

# How far from a number a bound or order word is read as belonging to it
# ("frühestens acht Wochen vor", "20 Tage oder mehr"), in words between them.
ATTACH_WORDS = 3


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


def _distinctive(n: Number) -> bool:
    """A number that says which rule it comes from: a date, a time, an amount, a year; not a
    small count ("2 Stunden", "5 days"), which sentences of every rule share."""
    for v in n.values:
        try:
            value = float(v)
        except ValueError:
            return True  # a date or a time
        if value != int(value) or value >= MIN_DISTINCTIVE:
            return True
    return False


def _other_unit(n: Number, stated: list[Number]) -> str | None:
    """The unit the blocks give this value, when they give it only with another one: "three working
    days" where they say "three calendar days"."""
    if not n.unit:
        return None
    units = {m.unit for m in stated if m.values & n.values}
    if n.unit in units or "" in units or not units:
        return None
    return sorted(units)[0]


def check_numbers(text: str, cited: Sequence[Passage], alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    stated = _numbers_of(cited)
    stated_values = _values(stated)
    asked_values = _values(ctx.question_numbers)
    aligned = _sentence_numbers(alignment.sentences)
    aligned_values = _values(aligned)
    problems = []
    said = find_numbers(text, ctx.language)
    # A statement that works with the asker's numbers combines what several sentences state.
    computing = _asker_numbers(text, ctx)
    for n in said:
        if n.values & stated_values:
            if _other_number(n, said, aligned, aligned_values, asked_values):
                other = next(m.raw for m in aligned if m.unit == n.unit)
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r}: the matching sentence says {other!r}"))
            elif n.values & asked_values or ctx.worked.accepts(n):
                continue  # also the asker's own: their case, not the rule's
            elif (unit := _other_unit(n, stated)) is not None:
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw} {n.unit}: the cited blocks state {n.raw} "
                                                                 f"{unit}, not {n.unit}"))
            elif STRICT_NUMBERS and _distinctive(n) and not n.values & aligned_values and not computing:
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r} is in the cited blocks, but not in the "
                                                                 f"sentences that state the rest: {' / '.join(alignment.texts)}"))
            continue
        if n.values & asked_values or ctx.worked.accepts(n):
            continue
        problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r} is not stated in the cited blocks, nor worked out "
                                                         "from the question's numbers"))
    return problems


# ------------------------------------------------------------------ commitments


def attached_families(text: str, language: str, numbers: Sequence[Number]) -> dict[int, set[str]]:
    """Per number (by position in `numbers`), the families of the cues that bound it: a cue bounds
    the nearest number in its direction (attaches_backwards), within ATTACH_WORDS words."""
    out: dict[int, set[str]] = {i: set() for i in range(len(numbers))}
    for cue in cm.find_cues(text, language):
        if cue.family in ("NEG", "ALL", "SOME") or cue.noun:
            continue
        if cm.attaches_backwards(cue):
            before = [i for i, n in enumerate(numbers) if n.end <= cue.start]
            if before and _words_between(text, numbers[before[-1]].end, cue.start) <= ATTACH_WORDS:
                out[before[-1]].add(cue.family)
        else:
            after = [i for i, n in enumerate(numbers) if n.start >= cue.end]
            if after and _words_between(text, cue.end, numbers[after[0]].start) <= ATTACH_WORDS:
                out[after[0]].add(cue.family)
    return out


def _words_between(text: str, start: int, end: int) -> int:
    return len(text[start:end].split())


def _aligned_families(aligned: Sequence[SourceSentence]) -> set[str]:
    return {c.family for s in aligned for c in cm.find_cues(s.text, s.language)}


def _family_label(family: str, text: str, language: str) -> str:
    words = [c.phrase for c in cm.find_cues(text, language) if c.family == family]
    return repr(words[0]) if words else family.lower()


def _asker_numbers(text: str, ctx: StatementContext) -> bool:
    """Does the statement work with the asker's own numbers (a comparison of their case with a rule)?"""
    asked = {v for n in ctx.question_numbers for v in n.values}
    return any(n.values & asked or ctx.worked.accepts(n) for n in find_numbers(text, ctx.language))


def check_commitments(
    text: str, alignment: Alignment, ctx: StatementContext, pool: Sequence[SourceSentence] = ()
) -> list[Problem]:
    """Bounds, order and scope words the statement adds, or turns into their opposite."""
    if not alignment.sentences:
        return []
    lang = ctx.language
    said = [c for c in cm.find_cues(text, lang) if c.strong and c.family != "NEG"]
    stated = _aligned_families(alignment.sentences)
    # What backs a bound may stand in a sentence next to the best one; an opposite counts only
    # in the aligned sentences themselves.
    near = _aligned_families(_near_sentences(list(dict.fromkeys(word_terms(text, lang))), lang, alignment, pool))
    # "1.100 € liegt unter der Grenze": the answer compares the asker's case with a rule; that
    # comparison is the answer's, not a bound the rule states.
    comparing = _asker_numbers(text, ctx)
    source = " / ".join(alignment.texts)
    problems = []
    for family in dict.fromkeys(c.family for c in said):
        if cm.BACKED_BY[family] & (stated | near):
            continue
        opposite = cm.OPPOSITE.get(family, frozenset()) & stated
        word = _family_label(family, text, lang)
        if opposite:
            problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} where the matching sentence says the opposite: {source}"))
        elif family in cm.ADDED_FAILS and not (comparing and family in cm.COMPARISONS):
            problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} is not in the matching sentence: {source}"))
    problems += _number_bounds(text, alignment, ctx)
    return problems


def _number_bounds(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    """A bound or order on a number, against the same number in the aligned sentences:
    "spätestens acht Wochen vor" where they say "frühestens acht Wochen vor", "ab der 12. Woche"
    where they say "bis zum Ende der 12. Woche". Weak cues ("bis", "ab") count here: on the
    same number, an opposite one is a contradiction."""
    problems = []
    said = find_numbers(text, ctx.language)
    mine_all = attached_families(text, ctx.language, said)
    for k, n in enumerate(said):
        mine = mine_all[k]
        if not mine:
            continue
        theirs: set[str] = set()
        for s in alignment.sentences:
            stated = find_numbers(s.text, s.language, source=True)
            attached = attached_families(s.text, s.language, stated)
            for j, m in enumerate(stated):
                if m.values & n.values:
                    theirs |= attached[j]
        for family in sorted(mine):
            if not cm.BACKED_BY[family] & theirs and cm.OPPOSITE.get(family, frozenset()) & theirs:
                word = _family_label(family, text, ctx.language)
                problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} {n.raw}: the matching sentence bounds "
                                                               f"{n.raw} the other way"))
    return problems


# ------------------------------------------------------------------ negation


def _states_negative(text: str, language: str) -> bool:
    """Does a source sentence state something negative? Read generously, bounds included
    ("nicht mehr als"): this side decides whether a correct answer is rejected."""
    plain = text.replace("’", "'")
    if cm.families(text, language) & {"NEG", "EXCEPT", "ONLY"} or _RAW_NEGATION[language if language == "de" else "en"].search(plain):
        return True
    return bool(_NEGATIVE_RESULT.get(language, _NEGATIVE_RESULT["en"]).search(text))


# "not A but B", "kein A, sondern B", "instead of": a negation that sets up what is affirmed.
_CONTRAST = {
    "en": re.compile(r"\b(?:not|no)\b[^.;:]{1,80}?\bbut\b|\binstead of\b|\brather than\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:nicht|kein\w*)\b[^.;:]{1,80}?,?\s+sondern\b|\bstatt\b|\banstatt\b", re.IGNORECASE),
}

_RAW_NEGATION = {
    "en": re.compile(r"\b(?:not|no|never|none|nothing|without|cannot|\w+n't)\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:nicht|kein\w*|nie|niemals|ohne|nichts)\b", re.IGNORECASE),
}

# A dropped negation is claimed only against a clause that holds this share of the
# statement's words: below it, the clause may be about something else.
DROPPED_CLAUSE_SHARE = 0.4
# Content words on each side of a negation that count as what it negates.
PREDICATE_REACH = 2


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


def _near_sentences(words: list[str], lang: str, alignment: Alignment, pool: Sequence[SourceSentence]) -> list[SourceSentence]:
    """The aligned sentences and every sentence of the cited blocks that holds nearly as many of the
    statement's words as the best one: a source often states a negative in another sentence than
    the one that best matches the statement's words ("... did not do better than ...")."""
    shares = [sum(1 for t in words if match_term(t, s.terms, lang)) if s.language == lang else 0 for s in pool]
    top = max(shares, default=0)
    near = [s for s, share in zip(pool, shares, strict=True) if top and share >= NEGATION_NEAR_SHARE * top]
    return [*alignment.sentences, *(s for s in near if s not in alignment.sentences)]


def _negated_predicate(clause: str, language: str) -> set[str]:
    """The content words next to the clause's negations (the words it negates, in either word order)."""
    out: set[str] = set()
    spans = [(c.start, c.end) for c in cm.find_cues(clause, language) if c.family == "NEG"]
    spans += [m.span() for m in _NEGATIVE_RESULT.get(language, _NEGATIVE_RESULT["en"]).finditer(clause)]
    for start, end in spans:
        # English negates what follows ("not allowed"); German also what precedes ("gibt es nicht").
        before = word_terms(clause[:start], language)[-PREDICATE_REACH:] if language == "de" else []
        after = word_terms(clause[end:], language)[:PREDICATE_REACH]
        out |= set(before) | set(after)
    return out


def check_negation(
    text: str, alignment: Alignment, ctx: StatementContext, pool: Sequence[SourceSentence] = ()
) -> list[Problem]:
    if not alignment.sentences:
        return []
    lang = ctx.language
    source = " / ".join(alignment.texts)
    said = cm.families(text, lang)
    words = list(dict.fromkeys(word_terms(text, lang)))
    if "NEG" in said:
        candidates = _near_sentences(words, lang, alignment, pool)
        if _CONTRAST[lang if lang == "de" else "en"].search(text):
            return []  # "kein Gehalt, sondern Krankengeld": what it affirms is the point
        if any(_states_negative(s.text, s.language) or (s.language == lang and cm.flipped_words(text, s.text, lang))
               for s in candidates):
            return []  # "nicht steuerfrei" for "steuerpflichtig": the same, by the word's affix
        return [Problem("NEGATION_NOT_IN_SOURCE", f"the statement negates, the matching sentence does not: {source}")]
    if "EXCEPT" in said or _NEGATIVE_RESULT.get(lang, _NEGATIVE_RESULT["en"]).search(text):
        return []  # an exception stated instead of the negation ("außer" for "nicht, wenn")
    if "ONLY" in said and _aligned_families(alignment.sentences) & {"ONLY", "EXCEPT"}:
        return []  # "nur, wenn" for "nicht, außer wenn"
    best = _best_clause(words, lang, alignment.sentences)
    if best is not None:
        for said_word, stated_word in cm.flipped_words(text, best[0], lang):
            return [Problem("NEGATION_DROPPED", f"{said_word!r} where the matching sentence says {stated_word!r}: {best[0]}")]
    if best is None and alignment.cross_language and len(alignment.sentences) == 1:
        only = alignment.sentences[0]
        if len(clauses(only.text, commas=True)) == 1:
            best = (only.text, only.language)
    if best is None or not (cm.negates(*best) or _NEGATIVE_RESULT.get(best[1], _NEGATIVE_RESULT["en"]).search(best[0])):
        return []
    # What the clause negates must be what the statement affirms: "unused leave that could not be
    # taken" negates "taken", which a statement about paying for unused leave does not say.
    predicate = _negated_predicate(*best)
    if best[1] == lang and not any(match_term(t, predicate, lang) for t in words):
        return []
    return [Problem("NEGATION_DROPPED", f"the matching sentence negates, the statement does not: {best[0]}")]


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
    problems += check_negation(text, alignment, ctx, pool)
    problems += check_commitments(text, alignment, ctx, pool)
    if need_support:
        problems += check_support(alignment) or check_names(text, cited, ctx)
    problems += check_words(text, alignment, ctx)
    return problems, alignment
