"""Words that change what a sentence commits to: bounds, order, scope, exceptions, negation.

"spätestens acht Wochen vor" and "frühestens acht Wochen vor" share every word
but one; so do "may not be installed" and "may be installed", "höchstens 90
Prozent" and "mindestens 90 Prozent". A check that asks whether an answer's
words are in its source passes all of them. So these words are found here, in
English and German, and sorted into families that mean the same in both
languages; the verifier compares families (statement.py), as it compares the
values of numbers rather than their spelling.

Families:
- LOWER (at least, mindestens, or more), UPPER (at most, up to, höchstens, bis zu,
  not exceed), EARLIEST (no earlier than, frühestens, nicht vor), LATEST (no later
  than, spätestens), MORE (more than, über 600), LESS (less than, unter 600);
- BEFORE (before, in advance, vor) and AFTER (after, nach);
- ONLY (only, nur, ausschließlich), EXCEPT (unless, except, außer, es sei denn);
- ALL (all, every, always, alle, jede, immer) and SOME (some, certain, einige, bestimmte);
- NEG: negation (not, never, kein, nicht, ohne, prohibited, verboten).

A phrase is matched once, the longest first: "nicht mehr als" is UPPER, not a
negation followed by MORE; "not only" affirms and is nothing. Some words only
back a family and never demand one (`strong=False`): "bis" and "by" can state
a deadline, "ab" and "from" a lower bound, but they are far too common to count
as a bound an answer adds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

# Families one may use for another when backing a statement: a bound stated as
# "at most" is backed by "up to", "no later than" by "by", an exception by a
# negation ("except part-timers" = "not part-timers"), and the reverse.
BACKED_BY: dict[str, frozenset[str]] = {
    # "at least 8 hours" is not "more than 8 hours" (a day of exactly 8 hours), so LOWER and MORE
    # do not back each other, nor UPPER and LESS.
    "LOWER": frozenset({"LOWER", "EARLIEST", "RANGE"}),
    "MORE": frozenset({"MORE"}),
    # Not backed by an order word: "frühestens acht Wochen vor" has both, and "spätestens acht
    # Wochen vor" must not pass on its "vor".
    "EARLIEST": frozenset({"EARLIEST", "LOWER"}),
    "UPPER": frozenset({"UPPER", "LATEST", "ONLY", "RANGE"}),
    "LESS": frozenset({"LESS"}),
    "LATEST": frozenset({"LATEST", "UPPER"}),
    "ONLY": frozenset({"ONLY", "EXCEPT", "NEG", "UPPER", "LOWER", "MORE", "LESS", "EARLIEST", "LATEST"}),
    "EXCEPT": frozenset({"EXCEPT", "NEG", "ONLY"}),
    "BEFORE": frozenset({"BEFORE", "LATEST"}),
    "AFTER": frozenset({"AFTER", "EARLIEST"}),
    "ALL": frozenset({"ALL"}),
    "SOME": frozenset({"SOME"}),
    "NEG": frozenset({"NEG", "EXCEPT", "ONLY"}),
    "RANGE": frozenset({"RANGE"}),
}

# Opposites: a statement with one, against a source with the other and not the
# first, says the contrary ("spätestens" for "frühestens").
OPPOSITE: dict[str, frozenset[str]] = {
    "LOWER": frozenset({"UPPER", "LESS"}),
    "MORE": frozenset({"UPPER", "LESS"}),
    "UPPER": frozenset({"LOWER", "MORE"}),
    "LESS": frozenset({"LOWER", "MORE"}),
    "EARLIEST": frozenset({"LATEST"}),
    "LATEST": frozenset({"EARLIEST"}),
    "BEFORE": frozenset({"AFTER"}),
    "AFTER": frozenset({"BEFORE"}),
    "ALL": frozenset({"SOME"}),
    "SOME": frozenset({"ALL"}),
}

# Families an answer may not add when its source has none of their backers
# (checked like numbers). The others are checked only against their opposite:
# "vor", "nach", "alle" are everywhere in correct paraphrases.
# "only" is left out: as often a degree ("only a modest effect") as a restriction.
ADDED_FAILS = frozenset({"LOWER", "UPPER", "EARLIEST", "LATEST", "MORE", "LESS", "EXCEPT"})

# Comparisons an answer makes of the asker's own case with a rule ("liegt unter der Grenze").
COMPARISONS = frozenset({"MORE", "LESS"})

# Words that stand after what they bound ("acht Wochen vor", "20 days or more", "by
# 31 March at the latest"); every other cue bounds the number after it ("höchstens 90 %").
POSTFIX = frozenset({"BEFORE", "AFTER"})
_POSTFIX_PHRASES = re.compile(r"^(?:or (?:more|less|fewer|longer)|oder (?:mehr|weniger|länger)|at the (?:latest|earliest))$")


def backers(family: str, context: set[str]) -> frozenset[str]:
    """What backs `family`, where the statement and its source both count back from an event
    ("BEFORE"): "spätestens 7 Wochen vor" is "mindestens 7 Wochen vor", and "frühestens ... vor"
    is "höchstens ... vor"."""
    backed = BACKED_BY[family]
    if "BEFORE" in context:
        backed = backed | {"LATEST": {"LOWER"}, "LOWER": {"LATEST"}, "EARLIEST": {"UPPER"}, "UPPER": {"EARLIEST"}}.get(family, set())
    return frozenset(backed)


def attaches_backwards(cue: Cue) -> bool:
    """Does the cue bound the number before it rather than the one after it?"""
    return cue.family in POSTFIX or bool(_POSTFIX_PHRASES.match(cue.phrase))

_NUM = r"(?=\s*(?:\d|€|\$|eur\b|euro\b))"  # "über 600", "under 25 EUR": a comparison, not "about"

# (pattern, family or None, strong). Family None: the phrase means nothing here but
# must not be read as its parts ("not only"). Strong None: a noun that names a bound
# ("Minijob-Grenze", "budget"): it backs a bound, but bounds no number next to it.
_Lexicon = list[tuple[str, str | None, bool | None]]

_EN: _Lexicon = [
    (r"not only", None, True),
    (r"no (?:more|greater|higher|longer) than|not (?:more|greater|higher|longer) than", "UPPER", True),
    (r"(?:must|may|should|can|shall|will|does|do|did)(?: not|n't) exceed\w*|cannot exceed|never exceeds?"
     r"|not (?:to )?exceed\w*", "UPPER", True),
    (r"at (?:the )?most|up to|a maximum of|maximum of|at a maximum|maximum|max\.?(?=\s)|or (?:less|fewer)"
     r"|capped at|limited to|no more|not more", "UPPER", True),
    (r"no (?:less|fewer|shorter|lower) than|not (?:less|fewer|shorter|lower) than", "LOWER", True),
    (r"at (?:the )?least|a minimum of|minimum of|at a minimum|or (?:more|longer)|min\.(?=\s)", "LOWER", True),
    (r"no earlier than|not earlier than|at the earliest|not (?:before|until)|earliest", "EARLIEST", True),
    (r"no later than|not later than|at the latest|not after|latest", "LATEST", True),
    (r"(?:more|greater|higher|longer) than|in excess of|exceed\w*|over" + _NUM + r"|above" + _NUM, "MORE", True),
    (r"(?:less|fewer|shorter|lower) than|under" + _NUM + r"|below" + _NUM, "LESS", True),
    (r"between", "RANGE", False),  # "between 300 EUR and 1,800 EUR" backs "at least 300 EUR" and "at most 1,800 EUR"
    (r"until|till|within|by(?=\s+(?:the\s+)?\d)", "UPPER", False),
    # A budget, limit or allowance is a bound by what it is: "a budget of 500 EUR" backs "up to 500 EUR".
    (r"budgets?|limit\w*|caps?|ceiling|allowance|maximum\w*", "UPPER", None),
    (r"minimum\w*", "LOWER", None),
    (r"from|starting|since", "LOWER", False),
    (r"before|prior to|in advance|ahead of|beforehand", "BEFORE", True),
    (r"after|afterwards|following", "AFTER", True),
    (r"only|solely|exclusively", "ONLY", True),
    (r"unless|except(?: for)?|excluding|other than|apart from|with the exception of|exempt\w*", "EXCEPT", True),
    (r"all|every\w*|each|always|any", "ALL", True),
    (r"some|certain|sometimes|partly|partially|in some cases", "SOME", True),
    (r"not|no|never|neither|nor|none|nothing|nobody|nowhere|without|cannot|\w+n't|prohibited|forbidden|banned",
     "NEG", True),
]

# "[nicht] nach X, sondern nach Y": what an amount is based on, no order in time.
_BASED_ON = r"[^.;]*\bsondern\s+nach\b"

_DE: _Lexicon = [
    (r"nicht nur", None, True),
    # Mindestlohn, Höchstbetrag, Minijob-Grenze, Budget: names of amounts that are bounds; they back a
    # bound an answer states ("höchstens 603 €" for "die Minijob-Grenze von 603 €"), never demand one.
    (r"höchst\w+(?<!höchstens)|[\w-]*grenze\w*|[\w-]*budgets?|limit\w*|[\w-]*freibetrag\w*|deckel\w*", "UPPER", None),
    (r"mindest\w+(?<!mindestens)", "LOWER", None),
    # "mindestens bis zu dem Zeitpunkt": at least until, a bound below, though it says "bis zu".
    (r"(?:mindestens|wenigstens) bis(?: zu| zum| zur)?", "LOWER", True),
    (r"(?:höchstens|längstens|maximal) bis(?: zu| zum| zur)?", "UPPER", True),
    (r"nicht (?:mehr|länger|höher|größer) als|nicht über" + _NUM, "UPPER", True),
    (r"(?:nicht|nie) (?:zu )?(?:übersteig|überschreit)\w*|(?:übersteig|überschreit)\w* (?:\w+ )?nicht", "UPPER", True),
    (r"höchstens|maximal|max\.(?=\s)|bis zu|bis maximal|oder weniger|begrenzt auf", "UPPER", True),
    (r"nicht (?:weniger|kürzer|niedriger|geringer) als|nicht unter" + _NUM, "LOWER", True),
    (r"mindestens|wenigstens|mind\.(?=\s)|oder mehr|oder länger", "LOWER", True),
    (r"frühestens|nicht (?:vor|früher als)|erst (?:ab|nach|wenn)", "EARLIEST", True),
    (r"spätestens|nicht (?:später als|nach(?!" + _BASED_ON + r"))|bis spätestens", "LATEST", True),
    (r"(?:mehr|länger|höher|größer) als|oberhalb|übersteig\w*|überschreit\w*|über" + _NUM, "MORE", True),
    (r"(?:weniger|kürzer|niedriger|geringer) als|unterhalb|unterschreit\w*|unter" + _NUM, "LESS", True),
    (r"zwischen", "RANGE", False),
    (r"bis|innerhalb|binnen", "UPPER", False),
    (r"ab|seit", "LOWER", False),
    (r"vor(?!\s*(?:allem|ort)\b)|vorher|bevor|im voraus|vorab|zuvor|rechtzeitig", "BEFORE", True),
    (r"nach(?!\s*(?:§|art\.|maßgabe|ansicht)|\s+dem\s+\w+gesetz|" + _BASED_ON + r")|nachdem|danach"
     r"|anschließend|im nachhinein", "AFTER", True),
    (r"nur|ausschließlich|lediglich", "ONLY", True),
    (r"außer|es sei denn|ausgenommen|mit ausnahme|abgesehen von|(?:sofern|soweit) nicht", "EXCEPT", True),
    (r"alle\w*|jede\w*|sämtliche\w*|immer|stets", "ALL", True),
    (r"einige\w*|manche\w*|bestimmte\w*|teilweise|manchmal|gelegentlich|unter umständen", "SOME", True),
    (r"nicht|kein\w*|nie|niemals|niemand\w*|nirgends|nirgendwo|ohne|weder|nichts|verboten|untersagt", "NEG", True),
]

# The opposite of a word by its affix: "unpfändbar" / "pfändbar", "unpaid" /
# "paid", "non-refundable" / "refundable", "steuerfrei" / "steuerpflichtig".
_NEG_PREFIX = {"en": ("un", "non-", "non", "in", "dis"), "de": ("un", "nicht-", "nicht")}
_FREE_SUFFIX = ("frei", "pflichtig")
MIN_AFFIX_STEM = 4  # "un" + at least this many letters: "unter" is not "un-ter"


@dataclass(frozen=True)
class Cue:
    family: str
    strong: bool
    start: int
    end: int
    phrase: str
    noun: bool = False  # a bound by name ("Minijob-Grenze"): backs, never bounds a number next to it


@cache
def _compiled(language: str) -> list[tuple[re.Pattern[str], str | None, bool | None]]:
    lexicon = _DE if language == "de" else _EN
    return [(re.compile(rf"(?<![\w-])(?:{p})(?![\w-])"), family, strong) for p, family, strong in lexicon]


def _plain(text: str) -> str:
    """Lower case with the apostrophes and spaces a model types normalised, same length as `text`
    (lower(), not casefold(), which writes "ß" as "ss": "außer" must stay "außer")."""
    return text.replace("’", "'").replace("\u00a0", " ").replace("\u202f", " ").lower()


def find_cues(text: str, language: str) -> list[Cue]:
    """Every cue of `text`, in order; a span is taken by the first pattern that matches it."""
    return list(_find_cues(text, language))


@lru_cache(maxsize=16_384)
def _find_cues(text: str, language: str) -> tuple[Cue, ...]:
    plain = _plain(text)
    if len(plain) != len(text):  # a rare letter whose lower case is longer: keep positions of the plain text
        text = plain
    taken = [False] * len(plain)
    found: list[Cue] = []
    for pattern, family, strong in _compiled(language):
        for m in pattern.finditer(plain):
            if any(taken[m.start() : m.end()]):
                continue
            for k in range(m.start(), m.end()):
                taken[k] = True
            if family is None:
                continue
            if family == "NEG" and _not_a_negation(text, m):
                continue
            if family in ("MORE", "LESS") and _phrasal_verb(plain, m.start()):
                continue
            if family in ("BEFORE", "AFTER") and language == "de" and _SEPARATED_PARTICLE.match(plain, m.end()):
                continue  # "Liegen mehrere Pfändungen vor.": the particle of "vorliegen", no order
            if family in ("BEFORE", "AFTER") and _POINT_IN_TIME.match(plain, m.end()):
                # "before 10:00", "vor dem 31. März": a deadline, not an offset ("acht Wochen vor")
                family = "LATEST" if family == "BEFORE" else "EARLIEST"
            found.append(Cue(family, bool(strong), m.start(), m.end(), m.group(0), noun=strong is None))
    return tuple(_compose(sorted(found, key=lambda c: c.start), plain))


# A negation right before a comparison bounds it: "may not work more than 10 hours"
# is at most 10 hours, "not before the 1st" no earlier than the 1st.
_NEGATED = {"MORE": "UPPER", "LESS": "LOWER", "BEFORE": "EARLIEST", "AFTER": "LATEST"}
# Words between the negation and what it bounds: "may not work more than"; but "not before" only
# as such ("could not take before the birth" negates the taking).
_NEGATION_REACH = {"MORE": 3, "LESS": 3, "BEFORE": 0, "AFTER": 0}


def _compose(found: list[Cue], text: str) -> list[Cue]:
    out: list[Cue] = []
    used: set[int] = set()
    for i, cue in enumerate(found):
        if i in used:
            continue
        merged = None
        if cue.family == "NEG":
            for j in range(i + 1, len(found)):
                nxt = found[j]
                between = len(text[cue.end : nxt.start].split())
                if between > max(_NEGATION_REACH.values()):
                    break
                if nxt.family in _NEGATED and nxt.strong and between <= _NEGATION_REACH[nxt.family]:
                    merged = Cue(_NEGATED[nxt.family], True, cue.start, nxt.end, text[cue.start : nxt.end])
                    used.add(j)
                    break
        out.append(merged or cue)
    return out


# "carry over 5 days", "hand over", "roll over": a verb's particle, not a comparison.
_PARTICLE_VERBS = frozenset(
    "carry carried carries carrying hand handed hands take taken took takes turn turned roll rolled rolls left "
    "pass passed move moved moves go goes went spill".split()
)


# "before 10:00", "vor dem 31. März", "after 2019"; not "after 12 weeks" (an offset, a duration).
_POINT_IN_TIME = re.compile(
    r"\s+(?:(?:dem|the|den|der)\s+)?\d[\d.:,]*(?!\s*(?:weeks?|days?|months?|years?|hours?|wochen|tage[n]?|monate[n]?"
    r"|jahre[n]?|stunden|minutes?|minuten)\b)(?=\W|$)",
    re.IGNORECASE,
)


# A German verb's separated particle ends its clause: "liegen … vor", "reicht … nach".
_SEPARATED_PARTICLE = re.compile(r"\s*(?:[.,;:!?)]|$)")


def _phrasal_verb(plain: str, start: int) -> bool:
    before = plain[:start].split()
    return bool(before) and before[-1] in _PARTICLE_VERBS


def _not_a_negation(original: str, m: re.Match[str]) -> bool:
    """ "NO" in capitals is a name (nitric oxide), "No." an abbreviation (number)."""
    word = original[m.start() : m.end()]
    if word.isupper() and len(word) > 1:
        return True
    return word.casefold() == "no" and original[m.end() : m.end() + 1] == "."


def families(text: str, language: str, *, strong_only: bool = False) -> set[str]:
    return {c.family for c in find_cues(text, language) if c.strong or not strong_only}


def negates(text: str, language: str) -> bool:
    """Does the text negate? A bound ("no later than", "nicht mehr als") is no negation."""
    return any(c.family == "NEG" for c in find_cues(text, language))


# "ohne Kind", "without a receipt": a condition on a noun, not the polarity of what is said.
_CONDITION_ONLY = frozenset({"ohne", "without"})


def negates_what_it_says(text: str, language: str) -> bool:
    """Does the text negate what it says (not just a condition: "eine Beschäftigte ohne Kind erhält")?"""
    return any(c.family == "NEG" and c.phrase not in _CONDITION_ONLY for c in find_cues(text, language))


# ------------------------------------------------------------------ affixes

_WORD = re.compile(r"[^\W\d_][\w-]*")


# "steuer- und sozialversicherungsfrei": the first word shares the second's ending.
_ELIDED = re.compile(r"([^\W\d_]+)-\s+(?:und|oder|and|or)\s+([^\W\d_]+)", re.IGNORECASE)


def _words(text: str) -> set[str]:
    words = {w.casefold() for w in _WORD.findall(text)}
    for m in _ELIDED.finditer(text):
        second = m.group(2).casefold()
        for suffix in _FREE_SUFFIX:
            if second.endswith(suffix):
                words.add(m.group(1).casefold() + suffix)
    return words


def _negated_forms(word: str, language: str) -> list[str]:
    """The words `word` would be without a negating affix ("unpfändbar" -> "pfändbar")."""
    out = []
    for prefix in _NEG_PREFIX.get(language, _NEG_PREFIX["en"]):
        if word.startswith(prefix) and len(word) - len(prefix) >= MIN_AFFIX_STEM:
            out.append(word[len(prefix) :])
    return out


def flipped_words(statement: str, source: str, language: str) -> list[tuple[str, str]]:
    """Pairs (statement word, source word) of opposite polarity by affix, in one language:
    "pfändbar" against "unpfändbar", "steuerpflichtig" against "steuerfrei". Only where the two
    say it of the same thing (a word next to each is shared) and the statement does not name
    both ("from unstable to stable")."""
    said, stated = _words(statement), _words(source)
    pairs = []
    for a, b in ((said, stated), (stated, said)):
        for word in a:
            for base in _negated_forms(word, language):
                if base in b and word not in b:
                    pairs.append((word, base) if a is said else (base, word))
    for word in said:
        for mine, other in (_FREE_SUFFIX, _FREE_SUFFIX[::-1]):
            if word.endswith(mine) and len(word) > len(mine):
                flipped = word[: -len(mine)] + other
                if flipped in stated and word not in stated:
                    pairs.append((word, flipped))
    return sorted({(x, y) for x, y in pairs if y not in said and _same_neighbours(statement, x, source, y)})


_NEIGHBOURS = 5  # words on each side that say what a word is said of


def _neighbours(text: str, word: str) -> set[str]:
    words = [w.casefold() for w in _WORD.findall(text)]
    out: set[str] = set()
    for i, w in enumerate(words):
        if w == word:
            out |= {x for x in words[max(0, i - _NEIGHBOURS) : i + _NEIGHBOURS + 1] if x != word and len(x) > 3}
    return out


def _same_neighbours(statement: str, said_word: str, source: str, stated_word: str) -> bool:
    mine, theirs = _neighbours(statement, said_word), _neighbours(source, stated_word)
    return any(a[:5] == b[:5] for a in mine for b in theirs)


# A word negated by its prefix ("unused", "unbezahlt", "non-refundable", "invalid"): the generous
# side's reading, to back a negation a statement puts in words ("nicht genommene Tage" for
# "unused days"), never to demand one.
_AFFIX_NEGATED = re.compile(
    r"(?<![\w-])(?:(?:un|non-?|in|im|ir|dis)[a-z]{2,}(?:ed|able|ible|ful|less|id|ive)"  # unused, invalid
    r"|un[a-zäöüß]{3,}(?:bar|lich|ig|sam|t|en))(?![\w-])",  # unbezahlt, unpfändbar
    re.IGNORECASE,
)
_NOT_NEGATED = frozenset(
    "under united universal unlimited until unit units unique university unternehmen unterlagen unterschied "
    "unterschiedlich untersagt unterstützt unterstützen unterhalt unterhalten unterricht interested important "
    "impressed informed included involved invited intended internal international individual initial immediate "
    "discussed distributed interest instead indeed".split()
)


def affix_negated(text: str) -> bool:
    return any(m.group(0).lower() not in _NOT_NEGATED for m in _AFFIX_NEGATED.finditer(text))
