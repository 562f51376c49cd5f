"""Numbers, dates and amounts: find them, and compare them across spellings and languages.

A number in an answer must be one a block it cites states, or one the asker gave in the question;
any other is held for the entailment judge (NUMBER_NOT_IN_SOURCE), which sees the question and may
find it worked out from the asker's case. The comparison is on values, not strings: "1.538,50" and
"1538.50" are one amount, "15.01.2026", "15. Januar 2026" and "2026-01-15" one date, "vier", "four"
and "4" one number; and on whole tokens, never substrings ("24" does not hide inside "2024").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import pairwise

from bot.answer.verify.text import as_read

_MONTH_NAMES = {
    "januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "april": 4, "mai": 5, "juni": 6, "juli": 7,
    "august": 8, "september": 9, "oktober": 10, "november": 11, "dezember": 12,
    "january": 1, "february": 2, "march": 3, "may": 5, "june": 6, "july": 7, "october": 10, "december": 12}
_MONTH_ABBREVIATIONS = {"jan": 1, "feb": 2, "mar": 3, "mär": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
                        "sept": 9, "oct": 10, "okt": 10, "nov": 11, "dec": 12, "dez": 12}
_MONTH = "|".join(sorted(_MONTH_NAMES, key=len, reverse=True)) + "|(?:" + "|".join(
    sorted(_MONTH_ABBREVIATIONS, key=len, reverse=True)) + r")\.?"

_TOKEN = re.compile(
    # Not glued to a word or another number: "CD4" and "p53" are names, not numbers.
    r"(?<![\w.,])(?:"
    r"(?P<iso>(?P<iy>\d{4})-(?P<im>\d{2})(?:-(?P<id>\d{2}))?)(?![\d-])"
    r"|(?P<dmy>(?P<dd>\d{1,2})\.(?P<dm>\d{1,2})\.(?P<dy>\d{4}))(?!\d)"
    r"|(?P<slash>(?P<sa>\d{1,2})/(?P<sb>\d{1,2})/(?P<sy>\d{4}))(?![\d/])"
    rf"|(?P<dname>(?P<nd>\d{{1,2}})(?:\.|st|nd|rd|th)?\s+(?:of\s+)?(?P<nm>{_MONTH})(?:,?\s+(?P<ny>\d{{4}}))?)(?!\w)"
    # ("im November 1.500 € Bonus" is no 1 November)
    rf"|(?P<mname>(?P<mm>{_MONTH})\s+(?P<md>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<my>\d{{4}}))?)(?!\w|[.,]\d)"
    r"|(?P<dm_only>(?P<od>\d{1,2})\.(?P<om>\d{1,2})\.)(?![\d\w])"
    r"|(?P<time>(?P<th>\d{1,2}):(?P<tm>\d{2}))(?!\d)"
    r"|(?P<num>\d+(?:[.,]\d+)*)"
    r")",
    re.IGNORECASE,
)


# Numbers people write as words ("sechs Wochen", "the third birthday"). "one"
# and "ein" are left out on the answer side: they are pronouns and articles far
# more often than numbers; so are "first" and "second" (order, a unit of time).
_WORDS = {
    "en": {
        "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
        "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
        "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
        "ninth": 9, "tenth": 10, "twelfth": 12, "once": 1, "twice": 2, "double": 2, "half": 0.5,
        "triple": 3, "threefold": 3, "fourfold": 4, "tenfold": 10},
    "de": {
        "null": 0, "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8,
        "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12, "zwanzig": 20, "dreißig": 30, "vierzig": 40,
        "fünfzig": 50, "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90, "hundert": 100,
        "ersten": 1, "erste": 1, "erster": 1, "zweiten": 2, "zweite": 2, "dritten": 3, "dritte": 3,
        "vierten": 4, "vierte": 4, "fünften": 5, "sechsten": 6, "siebten": 7, "achten": 8, "zehnten": 10,
        "zwölften": 12, "einmal": 1, "zweimal": 2, "doppelt": 2, "doppelte": 2, "doppelten": 2, "halbe": 0.5,
        "hälfte": 0.5, "dreifach": 3, "dreifache": 3, "dreifachen": 3, "vierfach": 4, "vierfache": 4,
        "vierfachen": 4, "fünffache": 5, "fünffachen": 5, "zehnfache": 10, "zehnfachen": 10}}

# Ordinals are numbers in a source ("the third birthday" states 3), not in an answer,
# which uses them to count its own steps ("in der vierten Woche" of a period).
_ORDINALS = {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "twelfth",
             "ersten", "erste", "erster", "zweiten", "zweite", "dritten", "dritte", "vierten", "vierte", "fünften",
             "sechsten", "siebten", "achten", "zehnten", "zwölften"}
# "several hundred hours" is no number either.
_NOT_NUMBERS_IN_ANSWERS = _ORDINALS | {"hundred", "hundert", "one", "eins", "once", "half", "einmal", "halbe", "hälfte",
                                       "double", "doppelt", "doppelte", "doppelten"}
_WORD = re.compile(r"\b[^\W\d_]+\b")

# Fractions as words: "ein Drittel" is no "Hälfte". "1/3" on both sides; a source's also offers its
# denominator (an answer may divide by it). English "third", "quarter" are rarely fractions; plurals are.
_FRACTIONS = {"en": {"thirds": 3, "fifths": 5, "sixths": 6, "eighths": 8, "tenths": 10, "twelfths": 12},
              "de": {"drittel": 3, "viertel": 4, "fünftel": 5, "sechstel": 6, "achtel": 8, "zehntel": 10, "zwölftel": 12}}
# An English source's ordinal may be a fraction ("one third of the pay").
_ORDINAL_FRACTIONS = {"third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "eighth": 8, "tenth": 10, "twelfth": 12}


@dataclass(frozen=True)
class Number:
    raw: str  # as written
    values: frozenset[str]  # its possible canonical readings
    start: int = -1
    end: int = -1


def _canon(text: str) -> str:
    try:
        return format(Decimal(text).normalize(), "f")
    except InvalidOperation:
        return text


def _number_readings(raw: str) -> set[str]:
    """Canonical readings of a digit group; two when the spelling is ambiguous."""
    seps = [c for c in raw if c in ".,"]
    if not seps:
        return {_canon(raw)}
    groups = re.split(r"[.,]", raw)
    if len(set(seps)) == 2:  # "1.538,50" / "1,538.50": the last separator is the decimal one
        decimal = seps[-1]
        if raw.count(decimal) == 1:
            return {_canon(raw.replace(seps[0], "").replace(decimal, "."))}
        return {raw}
    if len(seps) > 1:  # "1.000.000" is thousands; "1.2.3" is a version, keep as is
        if 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
            return {_canon("".join(groups))}
        return {raw}
    head, tail = groups
    readings = {_canon(f"{head}.{tail}")}
    if len(tail) == 3 and 1 <= len(head) <= 3 and head != "0":
        readings.add(_canon(head + tail))  # "1.538" is 1538 in German, 1.538 in English
    return readings


# The reading a day-and-month shares with the same day of any year: "~07-01".
_ANY_YEAR = "~"


def _date(year: str | None, month: int, day: int | None) -> str | None:
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    if year is None:
        return f"--{month:02d}-{day:02d}" if day is not None else None
    return f"{year}-{month:02d}" + (f"-{day:02d}" if day is not None else "")


def _date_readings(full: str | None, year: str | None, source: bool, *, day: int | None = None) -> set[str]:
    """A date's readings, none for no date; a source's also its parts ("2026", "15.01." and "15." of "2026-01-15")."""
    if full is None:
        return set()
    if not source:
        # "1. Juli 2026" is also the day of a yearly date a source names ("jedes Jahr zum 1. Juli").
        return {full, _ANY_YEAR + full[5:]} if year and len(full) == 10 else {full}
    parts = {full}
    if not year and full.startswith("--"):
        parts.add(_ANY_YEAR + full[2:])  # a day without a year: that day in any year
    if year:
        parts |= {_canon(year), full[:7]}
        if len(full) == 10:
            parts.add(f"--{full[5:]}")
    if day is not None:
        parts.add(str(day))
    return parts


def _no_date(m: re.Match[str], number: str, source: bool) -> set[str]:
    """A date that is none ("2026-13-01", "0. Januar", "2025-26"): as written; a source's states its number too."""
    return {m.group(0)} | (_number_readings(number) if source else set())


def _match_readings(m: re.Match[str], source: bool) -> set[str]:
    if m["iso"] or m["dmy"]:
        year, month, day = (m["iy"], m["im"], m["id"]) if m["iso"] else (m["dy"], m["dm"], m["dd"])
        readings = _date_readings(_date(year, int(month), int(day) if day else None), year, source)
        return readings or _no_date(m, year, source)
    if m["slash"]:  # "03/01/2026": 1 March in the US, 3 January elsewhere; a draft cannot say which is meant
        a, b, year = int(m["sa"]), int(m["sb"]), m["sy"]
        readings = _date_readings(_date(year, a, b), year, source) | _date_readings(_date(year, b, a), year, source)
        return readings or _no_date(m, year, source)
    if m["dname"] or m["mname"]:
        day, month_name, year = (m["nd"], m["nm"], m["ny"]) if m["dname"] else (m["md"], m["mm"], m["my"])
        if month_name == "may":  # lower case: the verb ("up to 5 may be carried over")
            return _number_readings(day)
        name = month_name.casefold().rstrip(".")
        month = _MONTH_NAMES.get(name) or _MONTH_ABBREVIATIONS[name]
        return _date_readings(_date(year, month, int(day)), year, source, day=int(day)) or _no_date(m, day, source)
    if m["dm_only"]:
        month, day = int(m["om"]), int(m["od"])
        if 1 <= month <= 12 and 1 <= day <= 31:
            return {f"--{month:02d}-{day:02d}"} | ({str(day)} if source else set())
        return _number_readings(f"{m['od']}.{m['om']}")
    if m["time"]:
        return {f"{int(m['th'])}:{m['tm']}"}
    return _number_readings(m["num"])


# "twenty-four", "vierundzwanzig": tens and ones in one number.
_TENS_AND_ONES = {**_WORDS["en"], **_WORDS["de"], "ein": 1}
_COMPOUND = re.compile(
    r"\b(?:(?P<tens>twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[-\s](?P<ones>one|two|three|four|five|six|"
    r"seven|eight|nine)|(?P<de_ones>ein|zwei|drei|vier|fünf|sechs|sieben|acht|neun)und(?P<de_tens>zwanzig|dreißig|"
    r"vierzig|fünfzig|sechzig|siebzig|achtzig|neunzig))\b", re.IGNORECASE)


def _word_numbers(text: str, language: str, source: bool) -> list[Number]:
    words = _WORDS.get(language, _WORDS["en"])
    found, compounds = [], []
    for m in _COMPOUND.finditer(text):
        tens, ones = (m["tens"], m["ones"]) if m["tens"] else (m["de_tens"], m["de_ones"])
        value = _TENS_AND_ONES[tens.casefold()] + _TENS_AND_ONES[ones.casefold()]
        compounds.append((m.start(), m.end()))
        found.append(Number(m.group(0), frozenset({str(value)}), m.start(), m.end()))
    for m in _WORD.finditer(text):
        if any(start <= m.start() < end for start, end in compounds):
            continue
        word = m.group(0).casefold()
        if word in words and (source or word not in _NOT_NUMBERS_IN_ANSWERS):
            values = {_canon(str(words[word]))}
            if source and word in _ORDINAL_FRACTIONS:  # "one twelfth" is the fraction a German "Zwölftel" reads as
                values.add(f"1/{_ORDINAL_FRACTIONS[word]}")
            found.append(Number(m.group(0), frozenset(values), m.start(), m.end()))
        elif (denominator := _FRACTIONS.get(language, {}).get(word)) is not None:
            readings = {f"1/{denominator}"} | ({str(denominator)} if source else set())
            found.append(Number(m.group(0), frozenset(readings), m.start(), m.end()))
    return found


@lru_cache(maxsize=16_384)  # the verifiers read the same block sentences for every statement of an answer
def find_numbers(text: str, language: str = "en", *, source: bool = False) -> tuple[Number, ...]:
    """Numbers, dates, times and spelled-out numbers in `text`, in order of position."""
    text = as_read(text)  # "_0:01_": "_" is a word character to the patterns
    found = [
        Number(m.group(0), frozenset(_match_readings(m, source)), m.start(), m.end())
        for m in _TOKEN.finditer(text)
    ]
    return tuple(sorted(_range_starts(text, found) + _word_numbers(text, language, source), key=lambda n: n.start))


# "vom 3. bis 28. Februar", "9–20 March": the first day of a range of days takes the month (and year)
# of the date that ends it.
_RANGE_TO = re.compile(r"^\.?\s*(?:–|-|—|bis(?:\s+zum)?|to|until|till|through)\s*$", re.IGNORECASE)
_DATE_VALUE = re.compile(r"^(\d{4}|-|~)-(\d{2})-(\d{2})$")


def _range_starts(text: str, found: list[Number]) -> list[Number]:
    out = list(found)
    for i, (a, b) in enumerate(pairwise(found)):
        if not a.raw.isdigit() or not 1 <= int(a.raw) <= 31 or not _RANGE_TO.match(text[a.end : b.start]):
            continue
        dates = {f"{m.group(1)}-{m.group(2)}-{int(a.raw):02d}" for v in b.values if (m := _DATE_VALUE.match(v))}
        if dates:
            out[i] = Number(a.raw, a.values | dates, a.start, a.end)
    return out


def source_values(texts: list[str], language: str = "en") -> set[str]:
    """Every reading of every number the sources state."""
    values: set[str] = set()
    for text in texts:
        for number in find_numbers(text, language, source=True):
            values |= number.values
    return values


def unstated(text: str, sources: list[str], language: str = "en", *, question: str = "") -> list[str]:
    """The numbers of `text` (as written) that neither `sources` nor the asker's `question` states."""
    values = source_values(sources, language) | source_values([question], language)
    return [n.raw for n in find_numbers(text, language) if not n.values & values]
