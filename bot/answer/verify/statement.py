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
from itertools import pairwise

from whoosh.lang.stopwords import stoplists

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
from bot.answer.verify.legal import swapped_reference
from bot.answer.verify.numbers import (
    DAYS_PER_UNIT,
    Number,
    WorkedOut,
    arithmetic,
    find_numbers,
    formulas,
    is_constant,
    is_word_ordinal,
    months_named,
)
from bot.answer.verify.support import (
    _NEGATIVE_RESULT,
    MIN_PARTIAL_STEM,
    NEGATION_NEAR_SHARE,
    anchor_found,
    anchors,
    assess,
    content_terms,
    match_term,
)
from bot.answer.verify.swaps import swapped_words

# Claims: support.assess's words test, or (an embedder configured) this close in meaning.
CLAIM_COSINE = 0.86
# Across languages the words cannot be counted: meaning alone, held to this.
CROSS_LANGUAGE_COSINE = 0.84

# WORDS_NOT_IN_SOURCE: the share of the statement's word weight that the aligned
# sentences lack and other sentences of the context have, past which the
# statement took its words from somewhere else.
MISPLACED_SHARE = 0.2

# WORDS_NOT_IN_SOURCE is claimed only where the aligned sentences hold this share of the
# statement otherwise: a sentence that matches but for one name has had that name swapped.
SWAP_MIN_COVERAGE = 0.5

# A number must stand in the sentences the statement is aligned to, not just somewhere in
# the cited block ("ab 14 Uhr" added to a rule that names 14 Uhr for another case).
STRICT_NUMBERS = True
MIN_DISTINCTIVE = 13
MIN_MISPLACED_TERMS = 1

# How far from a number a bound or order word is read as belonging to it
# ("frühestens acht Wochen vor", "20 Tage oder mehr"), in words between them.
ATTACH_WORDS = 4


@dataclass(frozen=True)
class Problem:
    kind: str
    detail: str
    # Every finding here is a judgement of the alignment's heuristics or of arithmetic followed
    # one step at a time, which the entailment judge may overrule (Violation.soft).
    soft: bool = True


@dataclass
class StatementContext:
    """What every statement of one answer is checked with."""

    language: str  # the answer's
    aligner: Aligner
    question: str = ""
    question_language: str = ""
    passages: Sequence[Passage] = ()  # every block of the prompt: where else words stand
    answer: str = ""  # the whole draft: the numbers it writes may be the operands of its arithmetic
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
            self._worked = WorkedOut(self.question_numbers, _numbers_of(self.passages),
                                     find_numbers(_REFS.sub(" ", self.answer), self.language),
                                     months_named(self.question),
                                     self.question,
                                     formulas(" ".join([self.answer, *map(_passage_text, self.passages)])))
        return self._worked


# "[hb-pto-03]": a citation's id holds no number the answer writes.
_REFS = re.compile(r"\[[^\]\n]*\]")


def _passage_text(p: Passage) -> str:
    return "\n".join(filter(None, [p.title, p.section, *p.header_extra, p.text]))


def _numbers_of(passages: Sequence[Passage]) -> list[Number]:
    return [n for p in passages for n in find_numbers(_passage_text(p), p.language, source=True)]


def _sentence_numbers(aligned: Sequence[SourceSentence]) -> list[Number]:
    return [n for s in aligned for n in find_numbers(s.text, s.language, source=True)]


def _values(numbers: Sequence[Number]) -> set[str]:
    return {v for n in numbers for v in n.values}


def _slot(n: Number) -> str:
    """What a number measures: durations share one slot ("1 Monat" against "zwei Wochen")."""
    return "duration" if n.unit in DAYS_PER_UNIT else n.unit


def _other_number(n: Number, aligned: list[Number], aligned_values: set[str]) -> bool:
    """Does the matching sentence measure the same thing with other values only ("vier Wochen",
    or "8 or 12 weeks", where the statement says "6 Wochen" / "10 weeks")?"""
    if not n.unit or n.values & aligned_values:
        return False
    # ("the first week" is a week's place in an order, no length to hold "5 working days" against)
    theirs = [m for m in aligned if _slot(m) == _slot(n) and not is_word_ordinal(m)]
    return bool(theirs) and not any(_same_amount(n, m) for m in theirs)


# The word a number counts, by its first letters, in either language ("fünf Passwörtern", "10 passwords").
COUNTED_PREFIX = 5
_FOLD = str.maketrans("äöüß", "aous")
_COUNTED = re.compile(rf"\s+([^\W\d_]{{{COUNTED_PREFIX},}})")


def _counted(text: str, n: Number) -> str:
    m = _COUNTED.match(text, n.end)
    return m.group(1).casefold().translate(_FOLD)[:COUNTED_PREFIX] if m else ""


def _other_count(text: str, n: Number, aligned: Sequence[SourceSentence]) -> str | None:
    """For a number without a unit: the other number of the matching sentence that counts the same
    thing ("deine letzten fünf Passwörter" against "your last 10 passwords"), if it has only others."""
    noun = _counted(text, n)
    if not noun:
        return None
    theirs = [m for s in aligned for m in find_numbers(s.text, s.language, source=True)
              if not m.unit and _counted(s.text, m) == noun]
    if not theirs or any(n.values & m.values for m in theirs):
        return None
    return theirs[0].raw


# An ordinal before these is an age ("bis zum dritten Geburtstag": three years old).
_AGE_AFTER = re.compile(r"\s+(?:geburtstag|lebensjahr|birthday|year of life)", re.IGNORECASE)


def _ordinals_of_things(aligned: Sequence[SourceSentence]) -> set[str]:
    """Values only word ordinals of the aligned sentences state, other than ages: "a second monitor"
    states no 2 that "alle zwei Jahre" could be."""
    ordinal: set[str] = set()
    cardinal: set[str] = set()
    for s in aligned:
        for m in find_numbers(s.text, s.language, source=True):
            thing = is_word_ordinal(m) and not _AGE_AFTER.match(s.text, m.end)
            (ordinal if thing else cardinal).update(m.values)
    return ordinal - cardinal


def _same_amount(a: Number, b: Number) -> bool:
    if a.values & b.values and (a.unit == b.unit or not (a.unit in DAYS_PER_UNIT and b.unit in DAYS_PER_UNIT)):
        return True
    if a.unit in DAYS_PER_UNIT and b.unit in DAYS_PER_UNIT:
        return bool(_days(a) & _days(b))
    return False


def _days(n: Number) -> set[float]:
    out = set()
    for v in n.values:
        try:
            out.add(float(v) * DAYS_PER_UNIT[n.unit])
        except (ValueError, KeyError):
            continue
    return out


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


def _stated_in(n: Number, numbers: list[Number], header_values: set[str]) -> bool:
    """Do `numbers` state n's value in a unit that fits ("15. des Vormonats" is not "15 %")?"""
    if n.values & header_values:
        return True
    return any(m.values & n.values and (not m.unit or not n.unit or m.unit == n.unit) for m in numbers)


def _other_unit(n: Number, stated: list[Number]) -> str | None:
    """The unit the blocks give this value, when they give it only with another one: "three working
    days" where they say "three calendar days"."""
    if not n.unit:
        return None
    units = {m.unit for m in stated if m.values & n.values}
    if n.unit in units or "" in units or not units:
        return None
    return sorted(units)[0]


# "5 weeks and 5 days", "3 Monate und 2 Tage": one span of time in two units.
_JOINED = re.compile(r"^\s*(?:and|und|,)\s*$")


def _compound_durations(text: str, said: Sequence[Number]) -> set[int]:
    """The positions in `said` of durations written as a compound: a span counted out (from the
    asker's dates, say), which no rule states so."""
    out = set()
    for i, (a, b) in enumerate(pairwise(said)):
        if a.unit in DAYS_PER_UNIT and b.unit in DAYS_PER_UNIT and a.unit != b.unit \
                and _JOINED.match(_between_units(text, a, b)):
            out |= {i, i + 1}
    return out


def _between_units(text: str, a: Number, b: Number) -> str:
    """What stands between the unit word after `a` and the number `b` ("5 weeks and 5": " and ")."""
    gap = text[a.end : b.start]
    return re.sub(r"^\s*\w+", "", gap, count=1)


def check_numbers(text: str, cited: Sequence[Passage], alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    stated = _numbers_of(cited)
    stated_values = _values(stated)
    aligned = _sentence_numbers(alignment.sentences)
    near = _sentence_numbers(alignment.near)
    # The Stand and legal bases of a cited block belong to all its sentences (rule 6 asks for the Stand).
    aligned_values = _values(aligned) | {v for s in source_sentences(cited) if s.header for v in s.values}
    problems = []
    said = find_numbers(text, ctx.language)
    # A statement that works with the asker's numbers combines what several sentences state.
    computing = _asker_numbers(text, ctx)
    # "70 % of 5,812.50 € ÷ 30 = 135.63 €": the operands of arithmetic written out may come from any
    # sentence of the cited blocks; the result is recomputed.
    operands = {o.start for chain, _result in arithmetic(text, ctx.language) for o, _percent in chain[::2]}
    compound = _compound_durations(text, said)
    # What the aligned sentences state, less what only an ordinal of a thing states ("a second monitor").
    comparable = aligned_values - _ordinals_of_things(alignment.sentences)
    for i, n in enumerate(said):
        if n.values & stated_values:
            # Across languages the alignment is by meaning and less sure; a slot is then compared only
            # when the statement has this one number.
            single = not alignment.cross_language or len(said) == 1
            # A statement about the asker's case measures it with the rule's numbers and theirs, and
            # with what it works out from theirs ("5 weeks and 5 days before"); any other is the rule's.
            # (An operand of arithmetic written out may come from any sentence of the cited blocks.)
            other = None
            if single and not (computing and i in compound) and n.start not in operands:
                if _other_number(n, aligned, comparable):
                    other = next(m.raw for m in aligned if _slot(m) == _slot(n))
                elif not n.unit:
                    other = _other_count(text, n, alignment.sentences)
            if other is not None and not ctx.worked.accepts(n, text, ctx.language):
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r}: the matching sentence says {other!r}"))
            elif ctx.worked.known(n):
                continue  # also the asker's own: their case, not the rule's
            elif not computing and (unit := _other_unit(n, aligned)) is not None:
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw} {n.unit}: the cited blocks state {n.raw} "
                                                                 f"{unit}, not {n.unit}"))
            elif STRICT_NUMBERS and _distinctive(n) and not _stated_in(n, aligned + near, aligned_values - _values(aligned)) \
                    and not computing and n.start not in operands:
                problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r} is in the cited blocks, but not in the "
                                                                 f"sentences that state the rest: {' / '.join(alignment.texts)}"))
            continue
        if ctx.worked.accepts(n, text, ctx.language) or (n.start in operands and is_constant(n)):
            continue  # worked out, or a factor of arithmetic written out ("28 × 5/12": a twelfth a month)
        # Stated nowhere: a fact added, or a result of steps WorkedOut does not follow (the days to
        # a deadline of the asker's dates, a sum of sums), which the judge recomputes with the question.
        problems.append(Problem("NUMBER_NOT_IN_SOURCE", f"{n.raw!r} is not stated in the cited blocks, nor worked out "
                                                         "from the question's numbers"))
    return problems


# ------------------------------------------------------------------ commitments


# Weak cues whose bound is plain when they stand right before a number ("ab der 12. Woche", "bis 603 €").
# (German only: "from 40 to 50" and "until" are too often a span, not a bound.)
_CLEAR_WEAK = frozenset({"ab", "bis"})


def attached_families(
    text: str, language: str, numbers: Sequence[Number], *, strong_only: bool = False
) -> dict[int, set[str]]:
    """Per number (by position in `numbers`), the families of the cues that bound it: a cue bounds
    the nearest number in its direction (attaches_backwards), within ATTACH_WORDS words."""
    out: dict[int, set[str]] = {i: set() for i in range(len(numbers))}
    for cue in cm.find_cues(text, language):
        if cue.family in ("NEG", "ALL", "SOME") or cue.noun or (strong_only and not cue.strong and cue.phrase not in _CLEAR_WEAK):
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


def _aligned_families(aligned: Sequence[SourceSentence], *, nouns: bool = True) -> set[str]:
    return {c.family for s in aligned for c in cm.find_cues(s.text, s.language) if nouns or not c.noun}


def _family_label(family: str, text: str, language: str) -> str:
    words = [c.phrase for c in cm.find_cues(text, language) if c.family == family]
    return repr(words[0]) if words else family.lower()


def _asker_numbers(text: str, ctx: StatementContext) -> bool:
    """Does the statement work with the asker's own numbers (a comparison of their case with a rule)?"""
    return any(ctx.worked.known(n) for n in find_numbers(text, ctx.language))


def _compares_values(text: str, language: str) -> bool:
    numbers = find_numbers(text, language)
    units = [n.unit for n in numbers if n.unit]
    return any(units.count(u) >= 2 and len({frozenset(n.values) for n in numbers if n.unit == u}) >= 2 for u in set(units))


_ASKER = {
    "de": re.compile(r"\b(?:du|dein\w*|dir|dich|Sie|Ihr\w*|Ihnen)\b"),
    "en": re.compile(r"\b(?:you|your|yours)\b", re.IGNORECASE),
}


_ORDER = frozenset({"BEFORE", "AFTER", "EARLIEST", "LATEST"})


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
    # "Da dein Grundlohn unter 25 € liegt": a comparison of the asker's own case, even without their
    # number; "150 % – mehr als die 125 % an anderen Feiertagen": one of two values of one unit.
    about_asker = bool(_ASKER[lang if lang == "de" else "en"].search(text)) or _compares_values(text, lang)
    source = " / ".join(alignment.texts)
    problems = []
    context = {c.family for c in cm.find_cues(text, lang)} & stated
    # "44 days after 2 March": an order word on a date of the asker's places their case, no rule's bound.
    numbers = find_numbers(text, lang)
    attached = attached_families(text, lang, numbers)
    theirs = {f for k, fams in attached.items() if ctx.worked.asked_date(numbers[k]) for f in fams} & _ORDER
    # "Insgesamt bis zu 252 € steuerfrei": a bound on a result the answer worked out from the asker's case
    # is the answer's reading of the rule, which the numbers check has already recomputed.
    stated_values = {v for s in alignment.sentences for v in s.values} | _values(_numbers_of(ctx.passages))
    results = {f for k, fams in attached.items()
               if not numbers[k].values & stated_values and ctx.worked.known(numbers[k]) for f in fams}
    mine = {c.family for c in said}
    for family in dict.fromkeys(c.family for c in said):
        if cm.backers(family, context) & (stated | near) or family in theirs or family in results:
            continue
        if comparing and family in cm.COMPARISONS:
            continue
        # A bound by name ("allowance", "Grenze") backs, but is no opposite of anything; nor is an order word
        # of the source that the statement says too ("nach Möglichkeit 14 Tage vor Abflug" for "14 days before").
        opposite = cm.OPPOSITE.get(family, frozenset()) & _aligned_families(alignment.sentences, nouns=False) - mine
        word = _family_label(family, text, lang)
        if opposite:
            problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} where the matching sentence says the opposite: {source}"))
        elif family in cm.ADDED_FAILS and not (about_asker and family in cm.COMPARISONS) \
                and not _backed_in_own_clause(text, family, ctx, pool):
            problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} is not in the matching sentence: {source}"))
    problems += _number_bounds(text, alignment, ctx)
    problems += _narrowed_quantifier(text, alignment, ctx)
    return problems


def _backed_in_own_clause(text: str, family: str, ctx: StatementContext, pool: Sequence[SourceSentence]) -> bool:
    """A statement that joins two rules ("bis zu 3 Tage remote; mindestens 2 Tage bist du im Büro") is
    aligned by the one that holds most of its words: the clause that holds the bound is aligned on its own."""
    parts = clauses(text)
    if len(parts) < 2:
        return False
    for part in parts:
        cues = {c.family for c in cm.find_cues(part, ctx.language)}
        if family not in cues:
            continue
        aligned = ctx.aligner.align(part, ctx.language, pool).sentences
        if cm.backers(family, cues & _aligned_families(aligned)) & _aligned_families(aligned):
            return True
    return False


_NEXT_WORDS = re.compile(r"\W*([^\W\d_][\w-]*)")


def _words_after(text: str, position: int, n: int = 3) -> list[str]:
    out: list[str] = []
    while len(out) < n and (m := _NEXT_WORDS.match(text, position)):
        out.append(m.group(1).casefold())
        position = m.end()
    return out


def _narrowed_quantifier(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    """ "every wireless network" where the matching sentence says "every network": a word put
    between the quantifier and what it quantifies narrows the rule to a part of it."""
    lang = ctx.language
    theirs = [(s, _words_after(s.text, c.end)) for s in alignment.sentences if s.language == lang
              for c in cm.find_cues(s.text, s.language) if c.family == "ALL"]
    company: set[str] | None = None
    for cue in cm.find_cues(text, lang):
        if cue.family != "ALL":
            continue
        mine = _words_after(text, cue.end)
        for sentence, words in theirs:
            if not words or words[0] not in mine[1:]:
                continue
            # ("all Northwind offices": the company's own name narrows nothing)
            inserted = mine[: mine.index(words[0])]
            if inserted:
                company = _company_words(text, ctx) if company is None else company
                inserted = [w for w in inserted if w not in company]
            if inserted and not any(w in sentence.text.casefold() for w in inserted):
                return [Problem("SCOPE_NOT_IN_SOURCE", f"{cue.phrase!r} {' '.join(mine[: len(inserted) + 1])!r} where the "
                                                       f"matching sentence says {cue.phrase!r} {words[0]!r}: {sentence.text}")]
    return []


def _company_words(text: str, ctx: StatementContext) -> set[str]:
    """The words of the company's name ("Northwind Labs"), as the statement or the prompt's blocks write it."""
    names = [m.group(0) for m in _COMPANY_NAME.finditer(text)]
    names += [m.group(0) for s in ctx.pool[:COMPANY_SENTENCES] for m in _COMPANY_NAME.finditer(s.text)]
    return {w.casefold() for name in names for w in name.split()}


# Enough of the prompt's sentences to find the company's name in.
COMPANY_SENTENCES = 200


def _number_bounds(text: str, alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    """A bound or order on a number, against the same number in the aligned sentences:
    "spätestens acht Wochen vor" where they say "frühestens acht Wochen vor", "ab der 12. Woche"
    where they say "bis zum Ende der 12. Woche". Weak cues ("bis", "ab") count here: on the
    same number, an opposite one is a contradiction."""
    problems = []
    # "über 50 € steuerpflichtig" for "bis zu 50 € steuerfrei": the other side of the bound, said
    # with the opposite predicate, is the same rule.
    if cm.negates_what_it_says(text, ctx.language) or any(
        s.language == ctx.language and cm.flipped_words(text, s.text, ctx.language) for s in alignment.sentences
    ):
        return []
    said = find_numbers(text, ctx.language)
    mine_all = attached_families(text, ctx.language, said, strong_only=True)
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
            if not cm.backers(family, mine & theirs) & theirs and cm.OPPOSITE.get(family, frozenset()) & theirs:
                word = _family_label(family, text, ctx.language)
                problems.append(Problem("SCOPE_NOT_IN_SOURCE", f"{word} {n.raw}: the matching sentence bounds "
                                                               f"{n.raw} the other way"))
    return problems


# ------------------------------------------------------------------ negation


def _states_negative(text: str, language: str, *, other_language: bool = False) -> bool:
    """Does a source sentence state something negative? Read generously, bounds included
    ("nicht mehr als"): this side decides whether a correct answer is rejected. Across languages
    a word negated by its prefix counts too ("unused" for "nicht genommen"); in one language the
    words themselves are compared (commitments.flipped_words)."""
    plain = text.replace("’", "'")
    if cm.families(text, language) & {"NEG", "EXCEPT", "ONLY"} or _RAW_NEGATION[language if language == "de" else "en"].search(plain):
        return True
    if other_language and cm.affix_negated(text):
        return True
    if _INSTEAD.search(plain):
        return True  # "stattdessen werden die tatsächlichen Kosten angesetzt" backs "not the 1 % rule"
    if _NEGATIVE_VERB.search(plain):
        return True  # "entfällt der Anspruch" backs "there is no Elterngeld"
    return bool(_NEGATIVE_RESULT.get(language, _NEGATIVE_RESULT["en"]).search(text))


# "not A but B", "kein A, sondern B", "instead of": a negation that sets up what is affirmed.
_CONTRAST = {
    "en": re.compile(r"\b(?:not|no)\b[^.;:]{1,80}?\bbut\b|\binstead of\b|\brather than\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:nicht|kein\w*)\b[^.;:]{1,80}?,?\s+sondern\b|\bstatt\b|\banstatt\b", re.IGNORECASE),
}

# Verbs that say something ends or is not allowed: what a negation in an answer may restate.
_NEGATIVE_VERB = re.compile(
    r"\b(?:entf(?:ällt|allen)|wegf(?:ällt|allen)|fällt\s+\w*\s*weg|verf(?:ällt|allen)|erlisch\w*|erlosch\w*|"
    r"ausgeschlossen|untersagt|verboten|unzulässig|forfeit\w*|lapses?|excluded|prohibited|forbidden|ruled out)\b",
    re.IGNORECASE,
)
_INSTEAD = re.compile(r"\b(?:stattdessen|statt|anstatt|anstelle|instead|rather than|in place of)\b", re.IGNORECASE)

_RAW_NEGATION = {
    "en": re.compile(r"\b(?:not|no|never|none|nothing|without|cannot|\w+n't)\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:nicht|kein\w*|nie|niemals|ohne|nichts)\b", re.IGNORECASE),
}

# A dropped negation is claimed only against a clause that holds this share of the
# statement's words: below it, the clause may be about something else.
DROPPED_CLAUSE_SHARE = 0.4
# Content words on each side of a negation that count as what it negates.
PREDICATE_REACH = 2


# A clause of the aligned sentences is about what the statement says when it shares this many
# content words with it, besides a word of opposite polarity ("beitragsfrei" / "beitragspflichtig").
SHARED_CLAUSE_TERMS = 2


def _sharing_clauses(words: list[str], language: str, aligned: Sequence[SourceSentence]) -> list[str]:
    out = []
    for s in aligned:
        if s.language != language:
            continue
        for clause in clauses(s.text, commas=True):
            held = set(content_terms(clause, language))
            if sum(1 for t in words if match_term(t, held, language)) >= SHARED_CLAUSE_TERMS:
                out.append(clause)
    return out


def _most_held(words: list[str], language: str, aligned: Sequence[SourceSentence]
               ) -> tuple[int, str, SourceSentence] | None:
    """(how many of `words` it holds, the clause, its sentence) for the clause of the aligned sentences
    in `language` that holds most of them, the first of equals; commas end clauses (German subordinate
    clauses). None when no clause holds any."""
    best: tuple[int, str, SourceSentence] | None = None
    for s in aligned:
        if s.language != language:
            continue
        for clause in clauses(s.text, commas=True):
            held = set(content_terms(clause, language))
            score = sum(1 for t in words if match_term(t, held, language))
            if score > (best[0] if best else 0):
                best = (score, clause, s)
    return best


def _best_clause(words: list[str], language: str, aligned: Sequence[SourceSentence]) -> tuple[str, str] | None:
    """The clause of the aligned sentences that holds most of the statement's words (text, language),
    if it holds DROPPED_CLAUSE_SHARE of them."""
    best = _most_held(words, language, aligned)
    if best is None or best[0] < DROPPED_CLAUSE_SHARE * len(words):
        return None
    return best[1], best[2].language


def _near_sentences(words: list[str], lang: str, alignment: Alignment, pool: Sequence[SourceSentence]) -> list[SourceSentence]:
    """The aligned sentences and every sentence of the cited blocks that holds nearly as many of the
    statement's words as the best one: a source often states a negative in another sentence than
    the one that best matches the statement's words ("... did not do better than ...")."""
    shares = [sum(1 for t in words if match_term(t, s.terms, lang)) if s.language == lang else 0 for s in pool]
    top = max(shares, default=0)
    near = [s for s, share in zip(pool, shares, strict=True) if top and share >= NEGATION_NEAR_SHARE * top]
    near += list(alignment.near)
    return [*alignment.sentences, *dict.fromkeys(s for s in near if s not in alignment.sentences)]


# What introduces a conclusion the answer draws from what it has just restated.
_CONCLUSION = {
    "en": re.compile(r"(?:[,;]\s*|\s[–—-]\s*)(?:so(?!\s+that)|therefore|thus|hence|which means|that means|meaning)\b"
                     r"|\b(?:therefore|thus|hence)\b", re.IGNORECASE),  # "so that" is a purpose, part of the rule
    # German marks a conclusion inside its clause too: "Eine Anordnung ist also nicht nötig".
    "de": re.compile(r"\b(?:also|daher|deshalb|deswegen|somit|folglich|demnach|das heißt|d\. h\.)\b", re.IGNORECASE),
}
# "zählt nicht mit, weil nur … angerechnet wird", "is not covered, because only …": the negation is what
# the rule's "only" leaves out.
_ONLY_REASON = {
    "en": re.compile(r"\b(?:because|since|as)\s+only\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:weil|da|denn)\s+(?:\w+\s+)?nur\b", re.IGNORECASE),
}
# "…, weil …", "…, because …": what follows is the reason, a rule the other checks hold to the blocks.
_REASON = {
    "en": re.compile(r",\s*(?:because|since|as)\b", re.IGNORECASE),
    "de": re.compile(r",\s*(?:weil|da|denn)\b", re.IGNORECASE),
}
# A statement that opens with the condition of a rule not met: "Without breakfast in the hotel rate, …",
# "If no meals are provided, …", "Ohne Frühstück …", "Wenn kein Frühstück enthalten ist, …".
_NEGATED_CONDITION = {
    "en": re.compile(r"^\W*(?:without\b|(?:if|when|where|as long as)\s+(?:no|there is no|there are no)\b)",
                     re.IGNORECASE),
    "de": re.compile(r"^\W*(?:ohne\b|(?:wenn|falls|sofern|solange)\s+(?:\w+\s+)?kein\w*\b)", re.IGNORECASE),
}
# A rule stated with its condition: "If meals are provided, the per diem is reduced".
_CONDITIONAL = {
    "en": re.compile(r"\b(?:if|when|where|unless|provided|as long as)\b", re.IGNORECASE),
    "de": re.compile(r"\b(?:wenn|falls|sofern|soweit|solange|bei)\b", re.IGNORECASE),
}


def _concluded_negation(text: str, language: str, aligned: Sequence[SourceSentence] = ()) -> bool:
    """Is every negation of the statement in a conclusion it draws ("Only claims older than 90 days are
    rejected, so this claim is not rejected"; "Die Anordnung ist also nicht nötig", from the sentence
    before)? The premise is the rule, held against the blocks by the other checks; the conclusion
    applies it. A premise that negates too ("No breakfast was included, so there is no reduction") says
    that the condition of a rule stated with one is not met."""
    lang = language if language == "de" else "en"
    if _ONLY_REASON[lang].search(text):
        return True
    reason = _REASON[lang].search(text)
    if reason and cm.negates(text[: reason.start()], language) and not cm.negates(text[reason.end():], language):
        return True  # "Steuerklasse II kommt nicht in Frage, weil sie für Alleinerziehende gilt"
    if _NEGATED_CONDITION[lang].match(text) and any(_conditional(s) and not cm.negates(s.text, s.language)
                                                    for s in aligned):
        return True  # "Without breakfast, the per diem is not reduced": the rule's condition not met
    m = _CONCLUSION[lang].search(text)
    if m is None:
        return False
    premise = text[: m.start()]
    if len(word_terms(premise, language)) < MIN_CLAUSE_WORDS and not find_numbers(premise, language):
        return True  # the premise is the sentence before: checked on its own
    if not cm.negates(premise, language):
        return True
    return any(_conditional(s) for s in aligned)


def _conditional(sentence: SourceSentence) -> bool:
    return bool(_CONDITIONAL.get(sentence.language, _CONDITIONAL["en"]).search(sentence.text))


_COORDINATED = re.compile(r"\s(?:und|oder|sowie|and|or|nor)\s", re.IGNORECASE)


def _negated_predicate(clause: str, language: str) -> set[str]:
    """The content words next to the clause's negations (the words it negates, in either word order)."""
    out: set[str] = set()
    spans = [(c.start, c.end) for c in cm.find_cues(clause, language) if c.family == "NEG"]
    spans += [m.span() for m in _NEGATIVE_RESULT.get(language, _NEGATIVE_RESULT["en"]).finditer(clause)]
    for start, end in spans:
        # English negates what follows ("not allowed"); German also what precedes ("gibt es nicht").
        # (within its clause: "nicht arbeiten, zahlt der Arbeitgeber" does not negate the paying)
        tail = clauses(clause[end:], commas=True)
        # ("nicht erfüllt oder in der ersten Jahreshälfte ausscheidet" negates the fulfilling only)
        after = word_terms(_COORDINATED.split(tail[0])[0], language)[:PREDICATE_REACH] if tail else []
        # German also negates what precedes ("gibt es nicht", "den Urlaub nicht"), when nothing follows
        # in its clause; "wegen eines Verbots ganz oder teilweise nicht arbeiten" negates the working.
        before = word_terms(clause[:start], language)[-PREDICATE_REACH:] if language == "de" and not after else []
        out |= set(before) | set(after)
    return out


def _negation_backed(text: str, lang: str, candidates: Sequence[SourceSentence]) -> bool:
    """Does one of the candidate sentences state a negative ("nicht steuerfrei" is backed by
    "steuerpflichtig" too, by the word's affix)?"""
    return any(_states_negative(s.text, s.language, other_language=s.language != lang)
               or (s.language == lang and cm.flipped_words(text, s.text, lang)) for s in candidates)


# "No need to use a vacation day: Northwind Labs grants …", "Nein: …": a short answer to the asker's
# question before a colon, the statement that gives its reason after it.
SHORT_ANSWER_WORDS = 8
_SHORT_ANSWER = re.compile(r"^\W*([^:]{1,80}):\s+(\S.*)$", re.DOTALL)


def _after_short_answer(text: str) -> str | None:
    m = _SHORT_ANSWER.match(_LABEL.sub("", text.strip()))  # after a bold label ("**Graduation:**")
    if m is None or len(m.group(1).split()) > SHORT_ANSWER_WORDS or re.search(r"\d", m.group(1)):
        return None
    return m.group(2)


def check_negation(
    text: str, alignment: Alignment, ctx: StatementContext, pool: Sequence[SourceSentence] = ()
) -> list[Problem]:
    if not alignment.sentences:
        return []
    lang = ctx.language
    source = " / ".join(alignment.texts)
    said = cm.families(text, lang)
    words = list(dict.fromkeys(word_terms(text, lang)))
    if "NEG" in said and (rest := _after_short_answer(text)) is not None and "NEG" not in cm.families(rest, lang):
        return check_negation(rest, alignment, ctx, pool)  # "No need to use a vacation day: … grants 1 day"
    if "NEG" in said:
        candidates = _near_sentences(words, lang, alignment, pool)
        if _CONTRAST[lang if lang == "de" else "en"].search(text):
            return []  # "kein Gehalt, sondern Krankengeld": what it affirms is the point
        if _asker_numbers(text, ctx):
            return []  # "die Obergrenze erreichst du damit nicht": a conclusion about the asker's case
        if _concluded_negation(text, lang, alignment.sentences):
            return []  # "…, so this claim is not rejected": the asker's case, drawn from the rule before it
        if (added := _added_in_part(text, lang, alignment.sentences)) is not None:
            return [added]
        if _negation_backed(text, lang, candidates):
            return []
        # A statement of two clauses ("X covers Y, and then you do not have to Z") may rest on two
        # sentences: the clause that negates is aligned on its own.
        negated = [c for c in clauses(text, commas=True) if cm.negates(c, lang)]
        if negated and len(negated) < len(clauses(text, commas=True)) and all(
            _negation_backed(c, lang, ctx.aligner.align(c, lang, pool).sentences) for c in negated
        ):
            return []
        return [Problem("NEGATION_NOT_IN_SOURCE", f"the statement negates, the matching sentence does not: {source}")]
    if "EXCEPT" in said or _NEGATIVE_RESULT.get(lang, _NEGATIVE_RESULT["en"]).search(text):
        return []  # an exception stated instead of the negation ("außer" for "nicht, wenn")
    if "ONLY" in said and _aligned_families(alignment.sentences) & {"ONLY", "EXCEPT"}:
        return []  # "nur, wenn" for "nicht, außer wenn"
    for clause in _sharing_clauses(words, lang, alignment.sentences):
        for said_word, stated_word in cm.flipped_words(text, clause, lang):
            return [Problem("NEGATION_DROPPED", f"{said_word!r} where the matching sentence says {stated_word!r}: {clause}")]
    best = _best_clause(words, lang, alignment.sentences)
    if best is None and alignment.cross_language and len(alignment.sentences) == 1:
        only = alignment.sentences[0]
        if len(clauses(only.text, commas=True)) == 1:
            best = (only.text, only.language)
    dropped = _dropped(best, words, lang)
    if dropped is None:
        dropped = _dropped_in_part(text, lang, alignment.sentences)
    parts = clauses(text)
    if dropped is None and best is None and len(parts) > 1:
        # A statement of two clauses ("… mit Unterschrift; eine E-Mail genügt") holds too few words of
        # either source clause as a whole: each of its clauses is held against the aligned sentences.
        for part in parts:
            part_words = list(dict.fromkeys(word_terms(part, lang)))
            if len(part_words) >= MIN_CLAUSE_WORDS and "NEG" not in cm.families(part, lang):
                dropped = _dropped(_best_clause(part_words, lang, alignment.sentences), part_words, lang)
                if dropped is not None:
                    break
    return [dropped] if dropped is not None else []


# A clause of fewer content words shares too little with any source clause to say which it restates.
MIN_CLAUSE_WORDS = 3


def _same_head(term: str, words: set[str], language: str) -> bool:
    """`match_term`, but a German compound only by its head, its last part: "ausgezahlt" is "gezahlt",
    "Arbeitgeber" is no "arbeiten"."""
    if language != "de":
        return match_term(term, words, language)
    return any(term == w or (min(len(term), len(w)) >= MIN_PARTIAL_STEM and (term.endswith(w) or w.endswith(term)))
               for w in words)


# A clause of the statement is held against the source clause that holds this share of its words.
PART_CLAUSE_SHARE = 0.6


# A negating clause of the statement restates a source clause when it holds this share of its words.
RESTATED_CLAUSE_SHARE = 0.8


def _added_in_part(text: str, lang: str, aligned: Sequence[SourceSentence]) -> Problem | None:
    """NEGATION_NOT_IN_SOURCE when a negating clause of the statement restates a clause of a source
    sentence that states nothing negative ("In den acht Wochen nach der Entbindung gilt kein absolutes
    Beschäftigungsverbot" against "… gilt ein absolutes …"), whatever another aligned sentence negates."""
    for part in clauses(text, commas=True):
        part_words = list(dict.fromkeys(word_terms(part, lang)))
        if len(part_words) < MIN_CLAUSE_WORDS or "NEG" not in cm.families(part, lang):
            continue
        best = _most_held(part_words, lang, aligned)
        if best is None or best[0] < RESTATED_CLAUSE_SHARE * len(part_words):
            continue
        if not _negation_backed(part, lang, [best[2]]):
            return Problem("NEGATION_NOT_IN_SOURCE", f"the statement negates, the matching sentence does not: "
                                                     f"{best[2].text}")
    return None


def _dropped_in_part(text: str, lang: str, aligned: Sequence[SourceSentence]) -> Problem | None:
    """NEGATION_DROPPED when one clause of the statement restates a source clause without its negation:
    "If a holiday falls on a Sunday, you get a replacement day off" against "…, there is no replacement
    day off" (the statement's condition clause holds more of its words than the negated one)."""
    for part in clauses(text, commas=True):
        part_words = list(dict.fromkeys(word_terms(part, lang)))
        if len(part_words) < SHARED_CLAUSE_TERMS or "NEG" in cm.families(part, lang):
            continue
        best = _most_held(part_words, lang, aligned)
        if best is None or best[0] < max(SHARED_CLAUSE_TERMS, PART_CLAUSE_SHARE * len(part_words)):
            continue
        if (dropped := _dropped((best[1], best[2].language), part_words, lang)) is not None:
            return dropped
    return None


def _dropped(best: tuple[str, str] | None, words: list[str], lang: str) -> Problem | None:
    """NEGATION_DROPPED when the source clause `best` negates what the statement (its `words`) affirms."""
    if best is None or not (cm.negates_what_it_says(*best)
                            or _NEGATIVE_RESULT.get(best[1], _NEGATIVE_RESULT["en"]).search(best[0])):
        return None
    # What the clause negates must be what the statement affirms: "unused leave that could not be
    # taken" negates "taken", which a statement about paying for unused leave does not say.
    predicate = _negated_predicate(*best)
    if best[1] == lang and not any(_same_head(t, predicate, lang) for t in words):
        return None
    return Problem("NEGATION_DROPPED", f"the matching sentence negates, the statement does not: {best[0]}")


# ------------------------------------------------------------------ words


# A company by its name: the employer a company's KB speaks of ("Northwind Labs", "Muster GmbH").
_COMPANY = r"(?-i:[A-Z][\w&-]+ (?:GmbH|AG|SE|KG|Inc|Ltd|LLC|Labs|Group|Gruppe))"
_COMPANY_NAME = re.compile(_COMPANY)


# Who does something: an office, a team, a fund, a role, a portal. A statement that names another
# one than the sentence it rests on has the wrong actor ("bei der Elterngeldstelle" for "beim
# Arbeitgeber"); other nouns are paraphrased too often ("Mutterschutz" for "Schutzfrist") to tell.
_ACTOR = {
    "de": re.compile(
        r"\b(?:\w*(?:stelle|amt|ämter|kasse|kassen|zentrale|abteilung|team|leitung|behörde|agentur|gericht"
        r"|versicherung|versicherer|träger|portal|desk|beauftragte\w*)|arbeitgeber\w*|arbeitnehmer\w*"
        r"|führungskraft|führungskräfte|vorgesetzte\w*|betriebsrat|personalabteilung|krankenkasse\w*"
        r"|minijob-zentrale|finanzamt|hr|cfo|ceo|it|bundesamt\w*|bundeszentralamt\w*|arzt|ärztin|gläubiger\w*"
        r"|drittschuldner\w*|elterngeldstelle|unternehmen|firma|" + _COMPANY + r")\b",
        re.IGNORECASE,
    ),
    "en": re.compile(
        r"\b(?:(?:\w+ )?(?:team|desk|department|office|portal|insurer|authority|agency|fund|court|manager|head"
        r"|reception|hr|cfo|ceo|payroll|doctor|physician|employer|employee|creditor|company)|" + _COMPANY + r")\b",
        re.IGNORECASE,
    ),
}


# One actor by several names: in a company's KB its HR department speaks for the employer.
_SAME_ACTOR = {
    "employer": {"arbeitgeb", "hr", "personalabteil", "employ", "compani", "unternehm", "firma"},
    "insurer": {"krankenkass", "health insur", "insur", "krankenversicher"},
}


# Names that hold one of _SAME_ACTOR's and are someone else: the employee ("employe") is not the employer ("employ").
_OTHER_ACTOR = ("employe", "arbeitnehm")


# "the company offices", "the HR portal's login": an actor's name as a modifier names a thing, not who acts.
_MODIFIED = re.compile(r"\s+(?:offices?|laptops?|accounts?|systems?|buildings?|sites?|locations?|policy|policies|"
                       r"standorte?|büros?|konten?|systeme?|gebäude)\b", re.IGNORECASE)


def _actors(text: str, language: str, *, company: bool = True) -> set[str]:
    """Who acts in `text`; with `company` False, not the company by its name: a company's KB names itself in
    sentence after sentence ("All Northwind Labs business trips need…"), and a statement that leaves
    the name out has lost no actor."""
    found = set()
    for m in _ACTOR.get(language, _ACTOR["en"]).finditer(text):
        if _MODIFIED.match(text, m.end()):
            continue
        if _COMPANY_NAME.fullmatch(m.group(0)):
            if company:
                found.add("employer")
        else:
            found.add(" ".join(word_terms(m.group(0), language)))
    # A compound names its actor inside it: "Arbeitgeberzuschuss" is the employer's.
    return {next((name for name, names in _SAME_ACTOR.items() if any(n in a for n in names)
                  and not any(o in a for o in _OTHER_ACTOR)), a) for a in found} - {""}


def _same_actor(a: str, b: str) -> bool:
    """One names the other, or more of it: "team" and "security team"; not "employe" and "employer"."""
    words_a, words_b = set(a.split()), set(b.split())
    return words_a <= words_b or words_b <= words_a


def check_words(
    text: str, alignment: Alignment, ctx: StatementContext, cited: Sequence[SourceSentence] = ()
) -> list[Problem]:
    """An actor swapped for another: the statement names one (an office, a team, a fund, a role)
    that the aligned sentences lack ("Elterngeldstelle"), while they name one the statement lacks
    ("Arbeitgeber"), and match the rest of it (SWAP_MIN_COVERAGE)."""
    if alignment.cross_language or not alignment.sentences or alignment.coverage < SWAP_MIN_COVERAGE:
        return []
    lang = ctx.language
    # The best sentence alone, when it states all of the statement but its actor: a second aligned
    # sentence may have joined only because it names the swapped-in actor.
    best = alignment.sentences[0]
    said = _actors(text, lang)
    rest = [t for t in word_terms(text, lang) if not any(t in a.split() for a in said)]
    if not rest or sum(1 for t in rest if match_term(t, best.terms, lang)) < SWAP_MIN_COVERAGE * len(rest):
        best_only = False
    else:
        best_only = True
    own_sentences = [best] if best_only else list(alignment.sentences)
    own_actors = {a for s in own_sentences for a in _actors(s.text, lang)}
    asked = _actors(ctx.question, lang) if ctx.question else set()
    swapped_in = sorted(a for a in said if a not in own_actors and a not in asked
                        and not any(_same_actor(a, o) for o in own_actors))
    swapped_out = sorted(a for s in own_sentences if s.language == lang for a in _actors(s.text, lang, company=False)
                         if a not in said and a not in asked and not any(_same_actor(a, o) for o in said))
    if not swapped_in or not swapped_out:
        return _slot_swap(text, alignment, lang, cited) or _tool_swap(text, alignment, cited)
    return _swapped(text, alignment, ctx, swapped_in, swapped_out)


def _slot_swap(text: str, alignment: Alignment, lang: str, cited: Sequence[SourceSentence]) -> list[Problem]:
    """A word changed in a frame the statement repeats ("jeden angefangenen Kalendermonat")."""
    elsewhere = {t for s in cited if s.language == lang for t in s.terms}
    found = swapped_words(text, [s.text for s in alignment.sentences if s.language == lang and not s.header], lang,
                          elsewhere)
    if found is None:
        return []
    said, stated, sentence = found
    if not stated:
        return [Problem("WORDS_NOT_IN_SOURCE", f"{said!r} is an alternative the matching sentence lacks: {sentence}")]
    return [Problem("WORDS_NOT_IN_SOURCE", f"{said!r} where the matching sentence says {stated!r}: {sentence}")]


def _tool_names(text: str, brands: set[str]) -> set[str]:
    """ "Northwind People", "Northwind-Print": the names the company gives its tools and teams."""
    return {f"{m.group(1)} {m.group(2)}" for m in _TOOL_NAME.finditer(text) if m.group(1) in brands}


_TOOL_NAME = re.compile(r"(?-i:\b([A-Z][\w&]+)[ -]([A-Z][\w&]*))")


def _tool_swap(text: str, alignment: Alignment, cited: Sequence[SourceSentence]) -> list[Problem]:
    """One of the company's tools for another ("in Northwind People" where the aligned sentence says
    "in Northwind Spend"): both names stand in the KB, so no check of words found elsewhere sees it."""
    brands = {m.group(0).split()[0] for s in cited for m in _COMPANY_NAME.finditer(s.text)}
    said = _tool_names(text, brands)
    aligned = set().union(*(_tool_names(s.text, brands) for s in alignment.sentences))
    companies = {m.group(0) for m in _COMPANY_NAME.finditer(text)}
    swapped_in = sorted(n for n in said - aligned if n not in companies)
    swapped_out = sorted(n for n in aligned - said if not _COMPANY_NAME.fullmatch(n))
    if not swapped_in or not swapped_out:
        return []
    return [Problem("WORDS_NOT_IN_SOURCE", f"{', '.join(swapped_in)} where the matching sentence has "
                                           f"{', '.join(swapped_out)}: {' / '.join(alignment.texts)}")]


def _swapped(text: str, alignment: Alignment, ctx: StatementContext, swapped_in: list[str],
             swapped_out: list[str]) -> list[Problem]:
    return [Problem("WORDS_NOT_IN_SOURCE", f"{', '.join(swapped_in)} where the matching sentence has "
                                           f"{', '.join(dict.fromkeys(swapped_out))}: {' / '.join(alignment.texts)}")]


# Currency and unit codes a model writes in its own style ("EUR" for "€"): no names.
_NOT_NAMES = frozenset({"EUR", "USD", "CHF", "GBP", "KM", "CET", "CEST", "UTC", "AM", "PM", "PDF"})


def check_names(text: str, cited: Sequence[Passage], ctx: StatementContext) -> list[Problem]:
    """Names and codes ("PTEN", "A1", "SGB III") must be in the cited blocks, spelled alike in any language."""
    texts = [_passage_text(p) for p in cited]
    # Across languages an acronym is translated ("WLAN" for "Wi-Fi"); a code with digits is not ("A1", "SGB III").
    missing = [a for a in anchors(text, ctx.language) if any(ch.isdigit() for ch in a)
               and a.upper() not in _NOT_NAMES and not anchor_found(a, texts, ctx.language)]
    if missing:
        return [Problem("UNSUPPORTED_CLAIM", f"names not in the cited blocks: {', '.join(missing)}")]
    return []


def check_support(text: str, cited: Sequence[Passage], alignment: Alignment, ctx: StatementContext) -> list[Problem]:
    """Claims: in the claim's language, the words test of support.assess (one or two sentences hold
    most of the claim's word weight, its word pairs stand close, its names are there; calibrated on
    SciFact), or a cosine of CLAIM_COSINE with the aligned sentence; across languages, meaning alone.
    A claim that works with the asker's numbers is not held to support."""
    if _asker_numbers(text, ctx):
        # "Acht Wochen ab dem 2. Mai reichen bis zum 27. Juni": the rule applied to the asker's case,
        # whose words are the asker's and the answer's; as in citations mode, its numbers, negation,
        # bounds and actors are checked, not its support.
        return []
    if alignment.cross_language:
        ok = alignment.cosine is not None and alignment.cosine >= CROSS_LANGUAGE_COSINE
        if not ok and alignment.cosine is not None:
            clause = ctx.aligner.closeness_to_clauses(text, alignment.sentences)
            ok = clause is not None and clause >= CROSS_LANGUAGE_COSINE
        return [] if ok else [Problem("UNSUPPORTED_CLAIM", "the cited evidence does not state this (not close enough "
                                                           "in meaning to any of its sentences)")]
    passages = [t for p in cited for t in (p.title, p.text) if t]
    found = assess(text, passages, ctx.language, idf=ctx.aligner.weight)
    if found.lexical:
        return []
    close = ctx.aligner.closeness(text, alignment.sentences)  # embedded only where the words fall short
    if close is not None and close >= CLAIM_COSINE:
        return []
    missing = ", ".join(found.missing) or "-"
    return [Problem("UNSUPPORTED_CLAIM", f"the cited evidence does not state this (words not found: {missing})")]


# A statement this short, with at most one content word and no number, is an answer's lead-in
# ("Nicht sofort.", "Not in full.", "Yes.", "For you:"): only the question gives it a meaning; the
# sentences after it say what it means, and are checked.
LEAD_IN_WORDS = 3
LABELLED_EXTRA_WORDS = 2


def lead_in(text: str, language: str) -> bool:
    """ "Nicht sofort.", "**The wine:** probably not.", "Für eine Dienstreise ergibt sich:": what introduces
    or sums up the statements around it, which the question gives its meaning."""
    plain = _LABEL.sub("", text.strip())
    if plain.rstrip().endswith(":"):
        return True  # introduces what follows (a list, a calculation)
    # After a label, the short answer to the question about it ("Friday from home: unfortunately not.",
    # "**Your teammate:** no, it's not the same.") may be a few words longer.
    labelled = plain != text.strip()
    after_colon = False
    if (rest := _after_short_answer(plain)) is not None:
        plain, labelled, after_colon = rest, True, True
    if len(plain.split()) > LEAD_IN_WORDS + (LABELLED_EXTRA_WORDS if labelled else 0) or any(ch.isdigit() for ch in plain):
        return False
    common = set(stoplists.get(_STOPLIST_NAMES.get(language, "en"), ())) | _YES_NO
    # Up to three words, one may be its own ("**Tax return:** Yes, it matters."); a longer short answer
    # after a label, or one after a plain "…:", has none, or it says something of the label ("Parking: not
    # for employees").
    own = sum(1 for w in re.findall(r"[^\W\d_]+", plain.casefold()) if w not in common and len(w) > 1)
    return own <= 1 if len(plain.split()) <= LEAD_IN_WORDS and not after_colon else own == 0


# "**The wine:** probably not.": a bold label before the words of a statement.
_LABEL = re.compile(r"^\W*\*\*[^*]{1,60}\*\*:?\s*")
_YES_NO = frozenset({"yes", "no", "ja", "nein", "doch", "probably", "wahrscheinlich", "likely", "eher", "unfortunately",
                     "leider", "sadly", "same", "gleiche", "dasselbe"})


_STOPLIST_NAMES = {"en": "en", "de": "de"}


_QUOTED_SPAN = re.compile(r"„[^“”\"]*[“”]|“[^”]*”|\"[^\"]*\"|»[^«]*«|«[^»]*»")


def check_statement(
    text: str, cited: Sequence[Passage], ctx: StatementContext, *, need_support: bool
) -> tuple[list[Problem], Alignment]:
    """Every check of one statement (its quotations already taken out by the caller)."""
    pool = source_sentences(cited)
    if lead_in(text, ctx.language):
        return check_numbers(text, cited, ctx.aligner.align(text, ctx.language, pool), ctx), Alignment((), 0.0, None, False)
    alignment = ctx.aligner.align(text, ctx.language, pool)
    problems = check_numbers(text, cited, alignment, ctx)
    problems += check_negation(text, alignment, ctx, pool)
    problems += check_commitments(text, alignment, ctx, pool)
    if need_support:
        problems += check_support(text, cited, alignment, ctx) or (
            check_names(text, cited, ctx) if alignment.cross_language else [])
    problems += check_words(text, alignment, ctx, pool)
    problems += check_references(text, alignment)
    return problems, alignment


def check_references(text: str, alignment: Alignment) -> list[Problem]:
    """A law's paragraph the aligned sentences do not name, where they name another ("§ 3 BUrlG" for
    "§ 19 JArbSchG")."""
    found = swapped_reference(text, [s.text for s in alignment.sentences if not s.header])
    if found is None:
        return []
    (number, law), stated = found
    named = ", ".join(f"§ {n} {lw}" for n, lw in sorted(stated))
    return [Problem("WORDS_NOT_IN_SOURCE", f"'§ {number} {law}' where the matching sentence names {named}: "
                                           f"{' / '.join(alignment.texts)}")]
