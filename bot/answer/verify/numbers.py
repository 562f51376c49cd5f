"""Numbers, dates and amounts: find them, and compare them across spellings and languages.

A number in an answer must be one the cited source states. The comparison is on
values, not strings: "1.538,50" (German) and "1538.50" are one amount, "13,90 €"
and "13.90" too, "15.01.2026", "15. Januar 2026" and "2026-01-15" one date,
"vier", "four" and "4" one number. It is on whole tokens, never substrings, so
"24" does not hide inside "2024".

Each number also has the unit written after it ("vier Wochen", "14 characters",
"603 €"), in a form both languages share where it is a common one (week, day,
eur, pct ...): a statement's "6 Wochen" against a matching source sentence that
says "vier Wochen" is a changed number even when a 6 stands elsewhere in the
block (statement.py).

A number the asker gave may be repeated ("bei 50.000 Euro Listenpreis"), and
one worked out from it with a number of the source (1 % of it: 500 Euro) is
recomputed (`WorkedOut`); anything else must be in the source.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import pairwise, permutations, product

_MONTH_NAMES = {
    "januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "april": 4, "mai": 5, "juni": 6, "juli": 7,
    "august": 8, "september": 9, "oktober": 10, "november": 11, "dezember": 12,
    "january": 1, "february": 2, "march": 3, "may": 5, "june": 6, "july": 7, "october": 10, "december": 12,
}
_MONTH_ABBREVIATIONS = {
    "jan": 1, "feb": 2, "mar": 3, "mär": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "okt": 10, "nov": 11, "dec": 12, "dez": 12,
}
_MONTH = "|".join(sorted(_MONTH_NAMES, key=len, reverse=True)) + "|(?:" + "|".join(
    sorted(_MONTH_ABBREVIATIONS, key=len, reverse=True)) + r")\.?"

_TOKEN = re.compile(
    # Not glued to a word or another number: "CD4" and "p53" are names, not numbers.
    r"(?<![\w.,])(?:"
    r"(?P<iso>(?P<iy>\d{4})-(?P<im>\d{2})(?:-(?P<id>\d{2}))?)(?![\d-])"
    r"|(?P<dmy>(?P<dd>\d{1,2})\.(?P<dm>\d{1,2})\.(?P<dy>\d{4}))(?!\d)"
    rf"|(?P<dname>(?P<nd>\d{{1,2}})(?:\.|st|nd|rd|th)?\s+(?:of\s+)?(?P<nm>{_MONTH})(?:,?\s+(?P<ny>\d{{4}}))?)(?!\w)"
    # ("im November 1.500 € Weihnachtsgeld" is no 1 November)
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
        "triple": 3, "threefold": 3, "fourfold": 4, "tenfold": 10,
    },
    "de": {
        "null": 0, "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8,
        "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12, "zwanzig": 20, "dreißig": 30, "vierzig": 40,
        "fünfzig": 50, "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90, "hundert": 100,
        "ersten": 1, "erste": 1, "erster": 1, "zweiten": 2, "zweite": 2, "dritten": 3, "dritte": 3,
        "vierten": 4, "vierte": 4, "fünften": 5, "sechsten": 6, "siebten": 7, "achten": 8, "zehnten": 10,
        "zwölften": 12, "einmal": 1, "zweimal": 2, "doppelt": 2, "doppelte": 2, "doppelten": 2, "halbe": 0.5,
        "hälfte": 0.5, "dreifach": 3, "dreifache": 3, "dreifachen": 3, "vierfach": 4, "vierfache": 4,
        "vierfachen": 4, "fünffache": 5, "fünffachen": 5, "zehnfache": 10, "zehnfachen": 10,
    },
}
# Multiples ("das Dreifache", "threefold") count times: their 3 is no "drei Monate".
_MULTIPLES = frozenset({"triple", "threefold", "fourfold", "tenfold", "dreifach", "dreifache", "dreifachen", "vierfach",
                        "vierfache", "vierfachen", "fünffache", "fünffachen", "zehnfache", "zehnfachen"})
# Ordinals are numbers in a source ("the third birthday" states 3), not in an answer,
# which uses them to count its own steps ("in der vierten Woche" of a period).
_ORDINALS = {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "twelfth",
             "ersten", "erste", "erster", "zweiten", "zweite", "dritten", "dritte", "vierten", "vierte", "fünften",
             "sechsten", "siebten", "achten", "zehnten", "zwölften"}


def is_word_ordinal(number: Number) -> bool:
    """ "the first week", "im dritten Monat": a place in an order, written as a word."""
    return number.raw.casefold() in _ORDINALS


# "several hundred hours" is no number either.
_NOT_NUMBERS_IN_ANSWERS = _ORDINALS | {"hundred", "hundert"} | {
    "one", "eins", "first", "second", "once", "half", "ersten", "erste", "erster", "einmal", "halbe", "hälfte",
    "double", "doppelt", "doppelte", "doppelten",
}
_WORD = re.compile(r"\b[^\W\d_]+\b")

# Fractions as words: "ein Drittel" is no "Hälfte". Read as "1/3" on both sides; a source's also
# offers its denominator, so an answer may divide by the 12 of "ein Zwölftel". (English singular
# "third", "quarter" are ordinals and periods far more often; their plurals are fractions.)
_FRACTIONS = {
    "en": {"thirds": 3, "fifths": 5, "sixths": 6, "eighths": 8, "tenths": 10, "twelfths": 12},
    "de": {"drittel": 3, "viertel": 4, "fünftel": 5, "sechstel": 6, "achtel": 8, "zehntel": 10, "zwölftel": 12},
}
# An English source's ordinal may be a fraction ("one third of the pay").
_ORDINAL_FRACTIONS = {"third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "eighth": 8, "tenth": 10, "twelfth": 12}


def _number_word_terms() -> frozenset[str]:
    from kb_index.analysis import terms

    return frozenset(t for lang, words in _WORDS.items() for w in words for t in terms(w, lang))


# The analyzed forms of number words ("vier", "four", "dritt"): not content words.
NUMBER_WORD_TERMS = _number_word_terms()

# Units in one form for both languages, so "vier Wochen" and "four weeks" share one.
_UNITS = {
    "week": "woche wochen week weeks wk wks",
    "day": "tag tage tagen tages day days",
    "calendarday": "kalendertag kalendertage kalendertagen calendar-days",
    "workday": "arbeitstag arbeitstage arbeitstagen working-days workdays business-days werktag werktage werktagen",
    "month": "monat monate monaten monats month months kalendermonat kalendermonate kalendermonaten calendar-month "
             "calendar-months",
    "year": "jahr jahre jahren jahres year years kalenderjahr yr yrs",
    "hour": "stunde stunden std hour hours h hr hrs",
    "minute": "minute minuten min minutes mins",
    "second": "sekunde sekunden seconds",
    "eur": "€ eur euro euros",
    "pct": "% prozent percent per-cent",
    "char": "zeichen characters character",
    "times": "times mal",
    # A time of day written as a number: "7 am", "6pm", "um 14 Uhr".
    "am": "am a.m.",
    "pm": "pm p.m.",
    "oclock": "uhr o'clock",
}
_UNIT_OF = {word: unit for unit, words in _UNITS.items() for word in words.split()}
# "six-month probation", "a 30-day deadline": a unit joined by a hyphen too.
_UNIT_AFTER = re.compile(r"\s*(?:(%|€|\$)|((?:calendar|working|business|per)\s+\w+)|-?([^\W\d_][\w-]*))")


# Units that count the same thing: "12 Arbeitstage" the asker gives are the answer's "12 Tagen".
# "um 11" is "11 Uhr": the hour of a clock either way.
_UNIT_FAMILY = {"calendarday": "day", "workday": "day", "at": "oclock"}


def unit_family(unit: str) -> str:
    return _UNIT_FAMILY.get(unit, unit)


# Time units in days, so that "1 Monat" and "zwei Wochen" compare as durations.
DAYS_PER_UNIT = {"day": 1, "calendarday": 1, "workday": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True)
class Number:
    raw: str  # as written
    values: frozenset[str]  # its possible canonical readings
    start: int = -1
    end: int = -1
    unit: str = ""  # the unit written right after it, in its shared form where it has one


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


def _date_readings(full: str | None, year: str | None, source: bool, *, day: int | None = None) -> set[str] | None:
    """A date's readings; a source also offers its parts, so an answer may say "2026"
    or "15.01." about a source's "2026-01-15", and "am 15." about its "15. Januar"."""
    if full is None:
        return None
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


def _match_readings(m: re.Match[str], source: bool) -> set[str]:
    if m["iso"] or m["dmy"]:
        year, month, day = (m["iy"], m["im"], m["id"]) if m["iso"] else (m["dy"], m["dm"], m["dd"])
        readings = _date_readings(_date(year, int(month), int(day) if day else None), year, source)
        return readings if readings is not None else _number_readings(year)
    if m["dname"] or m["mname"]:
        day, month_name, year = (m["nd"], m["nm"], m["ny"]) if m["dname"] else (m["md"], m["mm"], m["my"])
        if month_name == "may":  # lower case: the verb ("up to 5 may be carried over")
            return _number_readings(day)
        name = month_name.casefold().rstrip(".")
        month = _MONTH_NAMES.get(name) or _MONTH_ABBREVIATIONS[name]
        readings = _date_readings(_date(year, month, int(day)), year, source, day=int(day))
        return readings if readings is not None else _number_readings(day)
    if m["dm_only"]:
        month, day = int(m["om"]), int(m["od"])
        if 1 <= month <= 12 and 1 <= day <= 31:
            return {f"--{month:02d}-{day:02d}"} | ({str(day)} if source else set())
        return _number_readings(f"{m['od']}.{m['om']}")
    if m["time"]:
        return {f"{int(m['th'])}:{m['tm']}"}
    return _number_readings(m["num"])


# "bis zum 15. des Vormonats", "by the 10th of the month before": a day of the month.
_DAY_OF_MONTH = re.compile(r"\.?\s*(?:des|eines|jedes)\s+(?:vor|folge)?monats\b|(?:st|nd|rd|th)?\s+(?:day\s+)?of\s+(?:the|each"
                           r"|every|a)\s+(?:previous\s+|following\s+)?month\b", re.IGNORECASE)


# "leaving home at 7 and back around 6pm", "um 7 los": an hour of the day.
_AT_HOUR = re.compile(r"(?:\bat|\bum|\bby|\bgegen|\baround)\s+$", re.IGNORECASE)


def unit_at(text: str, position: int, language: str) -> str:
    """The unit written right after a number ending at `position`, or "" if none is known."""
    if _DAY_OF_MONTH.match(text, position):
        return "dom"
    m = _UNIT_AFTER.match(text, position)
    if not m:
        return ""
    word = (m.group(1) or m.group(2) or m.group(3) or "").casefold().replace(" ", "-")
    return _UNIT_OF.get(word, "")


# "innerhalb eines Monats", "a week before": one of a unit of time, as a number.
_ONE_UNIT = re.compile(r"\b(?:innerhalb|binnen|within|nach|after|vor|before|für|for|bis zu|up to|mindestens|höchstens|least"
                       r"|most|spätestens|frühestens|ab) (?P<one>(?:eine[nmrs]?|ein|one|a|an))\s+(?=(?:woche|monat|jahr|tag|kalendertag"
                       r"|arbeitstag|werktag|week|month|year|day|calendar day|working day)(?:e|en|es|s|n)?\b)", re.IGNORECASE)


def _unit(text: str, m: re.Match[str], language: str) -> str:
    unit = unit_at(text, m.end(), language)
    if not unit and m["num"] and m["num"].isdigit() and int(m["num"]) <= 24 and _AT_HOUR.search(text[: m.start()]):
        return "at"  # a bare hour of the day ("at 7"): a time only where the question gives it (WorkedOut)
    return unit


# "twenty-four", "vierundzwanzig": tens and ones in one number.
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
         "zwanzig": 20, "dreißig": 30, "vierzig": 40, "fünfzig": 50, "sechzig": 60, "siebzig": 70, "achtzig": 80,
         "neunzig": 90}
_ONES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ein": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9}
_COMPOUND = re.compile(
    r"\b(?:(?P<tens>twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[-\s](?P<ones>one|two|three|four|five|six|"
    r"seven|eight|nine)|(?P<de_ones>ein|zwei|drei|vier|fünf|sechs|sieben|acht|neun)und(?P<de_tens>zwanzig|dreißig|"
    r"vierzig|fünfzig|sechzig|siebzig|achtzig|neunzig))\b",
    re.IGNORECASE,
)


def _word_numbers(text: str, language: str, source: bool) -> list[Number]:
    words = _WORDS.get(language, _WORDS["en"])
    found = [Number(m.group("one"), frozenset({"1"}), m.start("one"), m.end("one"), unit_at(text, m.end(), language))
             for m in _ONE_UNIT.finditer(text)]
    compounds = []
    for m in _COMPOUND.finditer(text):
        tens, ones = (m["tens"], m["ones"]) if m["tens"] else (m["de_tens"], m["de_ones"])
        value = _TENS[tens.casefold()] + _ONES[ones.casefold()]
        compounds.append((m.start(), m.end()))
        found.append(Number(m.group(0), frozenset({str(value)}), m.start(), m.end(), unit_at(text, m.end(), language)))
    for m in _WORD.finditer(text):
        if any(start <= m.start() < end for start, end in compounds):
            continue
        word = m.group(0).casefold()
        if word in words and (source or word not in _NOT_NUMBERS_IN_ANSWERS):
            values = {_canon(str(words[word]))}
            if source and word in _ORDINAL_FRACTIONS:  # "one twelfth" is the fraction a German "Zwölftel" reads as
                values.add(f"1/{_ORDINAL_FRACTIONS[word]}")
            unit = "times" if word in _MULTIPLES else unit_at(text, m.end(), language)
            found.append(Number(m.group(0), frozenset(values), m.start(), m.end(), unit))
        elif (denominator := _FRACTIONS.get(language, {}).get(word)) is not None:
            readings = {f"1/{denominator}"} | ({str(denominator)} if source else set())
            found.append(Number(m.group(0), frozenset(readings), m.start(), m.end(), ""))
    return found


def find_numbers(text: str, language: str = "en", *, source: bool = False) -> list[Number]:
    """Numbers, dates, times and spelled-out numbers in `text`, in order of position."""
    return list(_find_numbers(text, language, source))


@lru_cache(maxsize=16_384)
def _find_numbers(text: str, language: str, source: bool) -> tuple[Number, ...]:
    # Cached: the verifiers read the same block sentences for every statement of an answer.
    found = [
        Number(m.group(0), frozenset(_match_readings(m, source)), m.start(), m.end(), _unit(text, m, language))
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
        if a.unit or not a.raw.isdigit() or not 1 <= int(a.raw) <= 31 or not _RANGE_TO.match(text[a.end : b.start]):
            continue
        dates = {f"{m.group(1)}-{m.group(2)}-{int(a.raw):02d}" for v in b.values if (m := _DATE_VALUE.match(v))}
        if dates:
            out[i] = Number(a.raw, a.values | dates, a.start, a.end, a.unit)
    return out


def source_values(texts: list[str], language: str = "en") -> set[str]:
    """Every reading of every number the sources state."""
    values: set[str] = set()
    for text in texts:
        for number in find_numbers(text, language, source=True):
            values |= number.values
    return values


def missing_numbers(text: str, sources: list[str], language: str = "en") -> list[str]:
    """The numbers of `text` (as written) that none of `sources` states."""
    values = source_values(sources, language)
    return [n.raw for n in find_numbers(text, language) if not n.values & values]


# ------------------------------------------------------------------ worked out from the question

# A result this small is a count ("2 Minijobs", "drei Tage") that arithmetic on
# two numbers hits by chance far too often to vouch for (not an amount of money).
MIN_DERIVED = 13
# A result of two steps on the sentence's own numbers is accepted from this size on (an amount, not a count).
TWO_STEP_MIN = 100
# A recomputed value must be the result as far as the answer spells it ("84,00 €": to the
# cent); a whole number only when exact, unless the answer says it rounds ("rund 43 Stunden",
# "about 43 hours"), which allows this relative tolerance.
ROUNDED_TOLERANCE = 0.02
_ROUNDED = re.compile(r"(?:\b(?:rund|ca|etwa|ungefähr|circa|knapp|gut|about|around|approximately|approx|roughly|some)\.?|~|≈)\s*$",
                      re.IGNORECASE)
# Factors an answer may use without a source stating them: half, double, a month's twelfth of a year.
MONTHS_PER_YEAR = Decimal(12)
CONSTANTS = (Decimal(2), MONTHS_PER_YEAR)
# Units a date can be moved by ("sechs Wochen vor dem 3. September": 23. Juli), in days.
_DAYS = {"day": 1, "calendarday": 1, "week": 7}
_DATE = re.compile(r"^(?:(\d{4})|-)-(\d{2})-(\d{2})$")
_YEAR_FOR_DAY_MONTH = 2026  # a date given without a year is counted in a common year


def is_constant(number: Number) -> bool:
    """Is it one of the factors an answer may use without a source (CONSTANTS)?"""
    return bool(_plain_values([number]) & set(CONSTANTS))


def _plain_values(numbers: list[Number]) -> set[Decimal]:
    out = set()
    for n in numbers:
        for v in n.values:
            try:
                out.add(Decimal(v))
            except InvalidOperation:
                continue  # a date or a time
    return out


def _one_step(a: Decimal, b: Decimal, b_percent: bool) -> list[Decimal]:
    """What one step of arithmetic makes of a number the asker gave (a) and another (b): a
    percentage of it only when b is one ("20 %"), else a product, sum, difference or ratio."""
    if b_percent:
        return [a * b / 100, a * (1 + b / 100), a * (1 - b / 100)]
    out = [a * b, a + b, a - b, b - a]
    if b:
        out.append(a / b)
    if a:
        out.append(b / a)
    # A share per month of a year ("ein Zwölftel für jeden vollen Monat": 30 Tage × 5 ÷ 12 = 12,5).
    # (Not halved: half of a product is a chance hit far more often than a rule's step.)
    if MONTHS_PER_YEAR not in (a, b):
        out.append(a * b / MONTHS_PER_YEAR)
    return out


# What a rule rounds to: half days, whole units, tens, hundreds, thousands.
_ROUNDING_STEPS = (Decimal("0.5"), Decimal(1), Decimal(10), Decimal(100), Decimal(1000))


def _rounded(value: Decimal) -> set[Decimal]:
    """`value` rounded down, to the nearest and up, to each step of _ROUNDING_STEPS."""
    out = set()
    for step in _ROUNDING_STEPS:
        q = value / step
        out |= {q.to_integral_value(rounding=r) * step for r in ("ROUND_FLOOR", "ROUND_HALF_UP", "ROUND_CEILING")}
    return out


def _matches_result(written: Decimal, raw: str, result: Decimal, rounded: bool) -> bool:
    """Is `written` (spelled `raw`) the `result` of a computation, to the precision it is written?"""
    if rounded:
        return abs(written - result) <= abs(result) * Decimal(ROUNDED_TOLERANCE)
    decimals = _decimals(raw)
    if decimals == 0:
        return abs(written - result) < Decimal("0.005")
    return abs(written - result) <= Decimal(1).scaleb(-decimals) / 2


def _units_of(numbers: list[Number]) -> dict[Decimal, set[str]]:
    out: dict[Decimal, set[str]] = {}
    for n in numbers:
        for v in _plain_values([n]):
            out.setdefault(v, set()).add(n.unit)
    return out


def _clock_times(numbers: Sequence[Number]) -> list[Number]:
    out = []
    for n in numbers:
        if n.unit not in ("am", "pm", "oclock", "at"):
            continue
        for v in _plain_values([n]):
            hour = int(v) + (12 if n.unit == "pm" and int(v) < 12 else 0)
            if v == int(v) and 0 <= hour <= 24:
                out.append(Number(f"{hour}:00", frozenset({f"{hour}:00"}), unit="time"))
    return out


def _hours_between(numbers: list[Number]) -> set[Decimal]:
    times = []
    for n in numbers:
        for v in n.values:
            if re.fullmatch(r"\d{1,2}:\d{2}", v):
                h, m = v.split(":")
                times.append(Decimal(h) + Decimal(m) / 60)
    return {abs(a - b) for a in times for b in times if a != b}


# "9 hours 10 minutes", "9 Stunden und 10 Minuten": at most this many words between the parts.
_SPAN_GAP_WORDS = 2
_HALF_MINUTE = Decimal(1) / 120
# "12, 13 and 15 May", "12., 13. und 15. Mai": days of one month, listed.
_DAY_LIST = re.compile(rf"\d{{1,2}}\.?(?:\s*(?:,|and|und|&)\s*\d{{1,2}}\.?)+\s+(?P<month>{'|'.join(sorted(_MONTH_NAMES, key=len, reverse=True))})\b",
                       re.IGNORECASE)


def _decimals(raw: str) -> int:
    tail = re.split(r"[.,]", raw)[-1] if re.search(r"[.,]\d{1,2}$", raw) else ""
    return len(tail)


def _dates(numbers: list[Number]) -> list[tuple[int, str]]:
    out = []
    for n in numbers:
        for v in n.values:
            m = _DATE.match(v)
            if m:
                year = int(m.group(1) or _YEAR_FOR_DAY_MONTH)
                try:
                    out.append((dt.date(year, int(m.group(2)), int(m.group(3))).toordinal(), "full" if m.group(1) else "dm"))
                except ValueError:
                    continue
    return out


_MONTH_WORD = re.compile(rf"\b(?:{'|'.join(sorted(_MONTH_NAMES, key=len, reverse=True))})\b", re.IGNORECASE)


def months_named(text: str) -> list[int]:
    """The months a text names ("für Juni", "in March"), not "may" in lower case, the verb."""
    return [_MONTH_NAMES[m.group(0).casefold()] for m in _MONTH_WORD.finditer(text) if m.group(0) != "may"]


def _months_later(day: int, months: int) -> set[int]:
    """A date (an ordinal) moved by `months` calendar months: the same day of that month (its last day,
    where the month is shorter), the day before it (a period of months from 1 March ends on 31 August),
    and that month's last day ("drei Kalendermonate nach Ablauf des Monats")."""
    start = dt.date.fromordinal(day)
    year, month = divmod(start.month - 1 + months, 12)
    year, month = start.year + year, month + 1
    last = calendar.monthrange(year, month)[1]
    same_day = dt.date(year, month, min(start.day, last)).toordinal()
    return {same_day, same_day - 1, dt.date(year, month, last).toordinal()}


def _month_end(month: int) -> int:
    """The last day of a month the asker names without a year, counted in _YEAR_FOR_DAY_MONTH."""
    return dt.date(_YEAR_FOR_DAY_MONTH, month, calendar.monthrange(_YEAR_FOR_DAY_MONTH, month)[1]).toordinal()


def _days_between(dates: list[tuple[int, str]]) -> set[int]:
    """The days from one date to another, the first day left out and counted in."""
    days = {day for day, _ in dates}
    return {d for a in days for b in days if b > a for d in (b - a, b - a + 1)}


class WorkedOut:
    """The numbers an answer may work out from what the asker gave.

    A value the question states may be repeated. A value one step of arithmetic
    makes of a question's number (or of one the answer already worked out) and
    a number the same sentence writes, is recomputed and accepted: a product, a
    sum, a difference, a ratio ("2.400 € ÷ 30 = 80 €"), or a percentage by a
    rate the sentence or the blocks state ("davon 70 % = 84 €"); so is the result
    of arithmetic the sentence writes out in full ("5.200 € × 3 ÷ 65 = 240 €"),
    and a date the question gives moved by days or weeks a block states, or by the
    days between two of its dates (and moved again, a step later). Steps
    the answer shows chain; a result reached in unshown steps is flagged. Only
    operands the sentence shows count: with every number of the blocks as an
    operand, some step hits nearly any value by chance. Results under
    MIN_DERIVED are never accepted by one step: small counts match too easily.
    Small counts of the asker's timeline and case are, each by a rule of its own
    that asks more than a value: the full months from a month of theirs, a day of
    the month they name moved by a block's weeks, what a limit leaves of a count
    of theirs in the same unit, the asker with their guests.
    """

    def __init__(self, asked: list[Number], stated: list[Number], shown: Sequence[Number] = (),
                 asked_months: Sequence[int] = (), question: str = "", formulas: Sequence[Formula] = ()):
        # "7 am", "6 pm", "14 Uhr" are times too ("7:00", "18:00"); and the hours between two times the
        # asker gives ("from 10:00 to 16:00": 6) are theirs.
        asked = [*asked, *_clock_times(asked)]
        self.asked_hours = _hours_between(asked)
        self.roots = _plain_values(asked) | self.asked_hours
        # A value of the question is the asker's only in its own unit: their "6 hours" is no "6 months".
        self.root_units = _units_of([*asked, *(Number(format(h, "f"), frozenset({format(h.normalize(), "f")}), unit="hour")
                                              for h in self.asked_hours)])
        # Numbers the whole answer writes: an operand shown in one sentence serves the next.
        self.shown = _plain_values(list(shown))
        self.shown_numbers = list(shown)
        self.stated = _plain_values(stated)
        self.operands = self.stated | self.roots | set(CONSTANTS)  # for arithmetic written out
        # Rates a percentage step may use: those the answer writes (a rate of the blocks it does not
        # name is one it did not use), and the asker's.
        self.rates = _plain_values([n for n in [*shown, *asked] if n.unit == "pct"])
        self.accepted: set[Decimal] = set(self.roots)
        self.asked_dates = _dates(asked)
        # The days between two dates the asker gives ("due on 23 May, born on 2 May": 21 days), counted
        # both ways a rule may count them (the first day left out, or in), are theirs, as durations.
        spans = _days_between(self.asked_dates)
        self.roots |= {Decimal(d) for d in spans}
        for d in spans:
            self.root_units.setdefault(Decimal(d), set()).add("day")
        self.shifts = {int(v) * _DAYS[n.unit] for n in [*stated, *asked] if n.unit in _DAYS
                       for v in _plain_values([n]) if v == int(v)} | spans
        # Dates the answer reached by moving one of the asker's: a later step may move them again
        # ("8 Wochen ab dem 2. Mai: 27. Juni; dazu 21 Tage: 18. Juli").
        self.reached_dates: list[int] = []
        # Months a date may be moved by ("vier Monate nach dem 2. Mai": 2. September), and the months the
        # asker names alone, which end on their last day ("für Juni, drei Kalendermonate nach Ablauf": 30. September).
        self.month_shifts = {int(v) for n in [*stated, *asked] if n.unit == "month"
                             for v in _plain_values([n]) if v == int(v) and 0 < v <= 24}
        # Working days a date may be moved by ("within the first 5 working days" of a start on 1 June: 5 June).
        self.workday_shifts = {int(v) for n in [*stated, *asked] if n.unit == "workday"
                               for v in _plain_values([n]) if v == int(v) and 0 < v <= 60}
        self.month_ends = [_month_end(m) for m in asked_months]
        # The months of the asker's timeline ("ab 1. April", "für Juni"): the full months from one to
        # the year's end, or between two, are theirs to count ("April–December: 9 full months").
        self.asked_months = set(asked_months) | {dt.date.fromordinal(d).month for d, _ in self.asked_dates}
        # Days of a month the asker names without a month ("einer am 5. und einer am 12."): moved by
        # days or weeks a block states, still a day of the month ("zwei Wochen: bis zum 19.").
        self.asked_days_of_month = {int(v) for n in asked if _day_of_month(question, n) for v in _plain_values([n])}
        # Weeks the asker works ("2 Wochen von Italien aus") are working days too, five a week.
        for n in asked:
            if n.unit == "week":
                for v in _plain_values([n]):
                    self.roots.add(v * WORKDAYS_PER_WEEK)
                    self.root_units.setdefault(v * WORKDAYS_PER_WEEK, set()).add("workday")
        # The length of a word the asker quotes ("als Passwort 'Nordwind2026!'": 13 characters) is theirs.
        for word in _QUOTED_WORD.findall(question):
            self.roots.add(Decimal(len(word)))
            self.root_units.setdefault(Decimal(len(word)), set()).add("char")
        # Counts in a unit, for the small differences of a count of the asker's and a rule's limit.
        self.counted = {(v, unit_family(n.unit)) for n in [*stated, *shown, *asked] if n.unit
                        for v in _plain_values([n])}
        self.asked_other = {v for n in asked for v in n.values if not _plain_values([Number(v, frozenset({v}))])}
        self.formulas = list(formulas)

    def known(self, number: Number) -> bool:
        """Is it the asker's (in a unit of theirs), or worked out from theirs already?"""
        if number.values & self.asked_other:  # a date or a time the question gives
            return True
        for value in _plain_values([number]):
            if value in self.roots:
                units = {unit_family(u) for u in self.root_units.get(value, set())}
                if not number.unit or not units or unit_family(number.unit) in units:
                    return True
                if "" in units and abs(value) >= MIN_DERIVED:
                    return True  # a small count of theirs without a unit ("2 x 185 EUR") is no "two weeks"
            elif value in self.accepted:
                return True
        return False

    def asked_date(self, number: Number) -> bool:
        """Is it a date or a time the question gives?"""
        return bool(number.values & self.asked_other)

    def accepts(self, number: Number, sentence: str = "", language: str = "en") -> bool:
        if self.known(number) or self._date(number):
            return True
        if not sentence:
            return False
        if self._shown(number, sentence, language):
            return True
        if self._months_counted(number, sentence, language) or self._day_of_month_moved(number, sentence) \
                or self._day_of_asked_week(number, sentence) \
                or self._with_the_asker(number, sentence, language) \
                or self._left_of_limit(number, sentence, language) or _work_week(number, sentence):
            self.accepted |= _plain_values([number])  # an operand of the next step ("9 Monate: 17 × 9 ÷ 12")
            return True
        if self.asked_days_of_month and _day_of_month(sentence, number):
            return False  # a day of the month is a date: no amount of other steps makes it
        listed = self._day_in_asked_span(number, sentence)
        if listed is not None:
            return listed  # a day of the month, which no step of arithmetic makes
        if self._asker_step(number, sentence, language) or self._written_step(number, sentence, language) \
                or self._two_written_steps(number, sentence, language) \
                or self._formula_applied(number, sentence) \
                or self._clock_span(number, sentence, language):
            self.accepted |= _plain_values([number])
            return True
        rounded = bool(_ROUNDED.search(sentence[: number.start])) if number.start >= 0 else False
        written = [n for n in find_numbers(sentence, language) if n.start != number.start]
        shown = _plain_values(written) | self.shown | set(CONSTANTS) | self.accepted
        shown_rates = self.rates
        for value in _plain_values([number]):
            if value == int(value) and abs(value) < MIN_DERIVED and number.unit != "eur":
                continue  # a count; an amount of money ("zusammen 12 €") is none
            if any(value in _rounded(a) for a in self.accepted if a != value):
                self.accepted.add(value)  # "abgerundet auf volle 100 €": 38.750 € -> 38.700 €
                return True
            # The number itself is no operand of its own step ("2 × 150 ÷ 2").
            steps = [(b, False) for b in shown if b != value] + [(b, True) for b in shown_rates]
            operands = self.accepted
            if number.unit == "pct":
                # A rate is worked out from rates ("25 % + 50 %"); 55 years less 30 years is no 25 %.
                steps = [(b, False) for b in shown_rates if b != value]
                operands = self.accepted & shown_rates
            for a in operands:
                for b, percent in steps:
                    if any(_matches_result(value, number.raw, d, rounded) for d in _one_step(a, b, percent)):
                        self.accepted.add(value)
                        return True
        return False

    def _asker_step(self, number: Number, sentence: str, language: str) -> bool:
        """Is `number` one step from a number of the asker's and another number, both written in the same
        sentence ("With 17 days taken, 11 of the 28 days are left")? Small counts too: with both operands
        in the sentence, and one of them the asker's, a chance hit is rare."""
        written = [n for n in find_numbers(sentence, language) if n.start != number.start]
        theirs = _plain_values([n for n in written if self.known(n)])
        others = _plain_values(written)
        for value in _plain_values([number]):
            for a in theirs:
                for b in others - {a, value}:
                    if any(_matches_result(value, number.raw, d, False) for d in (a + b, a - b, b - a, a * b)
                           + ((a / b,) if b else ()) + ((b / a,) if a else ())):
                        return True
        return False

    def _written_step(self, number: Number, sentence: str, language: str) -> bool:
        """Is `number` one step from numbers the answer writes, one of them in this sentence: to the cent
        ("14 € less 11,20 € for the lunch: 2,80 €", "15 % of 338 €: 50,70 €"), which a chance hit
        hardly ever is; or a month's amount made a year's, or a year's a month's ("556 € a month,
        6.672 € a year")?"""
        # Operands in the number's own unit: 11,20 € less 8 hours is no 3,20 €.
        family = unit_family(number.unit)
        numbers = [n for n in find_numbers(sentence, language) if n.start != number.start]
        written = _plain_values([n for n in numbers if unit_family(n.unit) == family])
        shown = _plain_values([n for n in self.shown_numbers if unit_family(n.unit) == family])
        # The operand in the sentence must be stated or the asker's: two numbers of the answer's own
        # must not vouch for each other ("8.112 € a year (676 € a month)", neither of them cited).
        grounded = written & (self.operands | self.accepted)
        for value in _plain_values([number]) - self.stated:
            # (A value a block of the prompt states is that block's fact, cited wrongly: no result.)
            if value != int(value) and _decimals(number.raw) == 2:
                others = (written | shown | set(CONSTANTS)) - {value}
                steps = [(b, False) for b in others] + [(r, True) for r in self.rates]
                if any(_matches_result(value, number.raw, d, False)
                       for a in grounded - {value} for b, percent in steps if b != a for d in _one_step(a, b, percent)):
                    return True
            if abs(value) >= MIN_DERIVED and any(value in (a * MONTHS_PER_YEAR, a / MONTHS_PER_YEAR) for a in grounded):
                return True
        return False

    def _two_written_steps(self, number: Number, sentence: str, language: str) -> bool:
        """Is `number` two steps of arithmetic on three numbers the sentence writes, each stated, the asker's
        or a constant ("Mit 12 × 1.900 € und 1.500 € Weihnachtsgeld ergeben sich 24.300 €")? Only for a
        result of TWO_STEP_MIN or more: with all three operands in the sentence, such a hit is rarely chance."""
        values = {v for v in _plain_values([number]) if abs(v) >= TWO_STEP_MIN}
        if not values:
            return False
        written = [v for v in _plain_values([n for n in find_numbers(sentence, language) if n.start != number.start])
                   if v in self.operands or v in self.accepted]
        for a, b, c in permutations(written, 3):
            for first in (a * b, a + b, a - b):  # a product, sum or difference of two, then a step with the third
                if any(_matches_result(v, number.raw, d, False) for v in values for d in _one_step(first, c, False)):
                    return True
        return False

    def _formula_applied(self, number: Number, sentence: str) -> bool:
        """Is `number` a formula the answer or a block writes ("Bruttomonatsgehalt × 3 ÷ 65") applied to
        a number of the asker's, or to one worked out from theirs (4.550 € × 3 ÷ 65 = 210 €)?"""
        rounded = bool(_ROUNDED.search(sentence[: number.start])) if number.start >= 0 else False
        for value in _plain_values([number]):
            for a in self.accepted:
                for steps in self.formulas:
                    result = _apply(a, steps)
                    if result is not None and result != a and _matches_result(value, number.raw, result, rounded):
                        return True
        return False

    def _months_counted(self, number: Number, sentence: str, language: str) -> bool:
        """Is `number` a count of months of the asker's timeline, in a sentence that names its months:
        from one to the year's end ("ab 1. April: 9 volle Monate"), or between two ("September bis
        Dezember: vier"), both with and without the first month?"""
        if number.unit not in ("", "month"):
            return False
        named = set(months_named(sentence)) | {dt.date.fromordinal(d).month
                                               for d, _ in _dates(find_numbers(sentence, language))}
        if not named:
            return False
        months = self.asked_months | named
        counts = {c for m in self.asked_months for c in (13 - m, 12 - m)}
        counts |= {c for a in months for b in months if b > a for c in (b - a, b - a + 1)}
        return any(v in counts for v in _plain_values([number]) if v == int(v))

    def _with_the_asker(self, number: Number, sentence: str, language: str) -> bool:
        """Is `number` the people of the asker's count and the asker ("you and 3 clients": 4)?"""
        counts = {v + 1 for n in find_numbers(sentence, language) if n.start >= 0 and self.known(n)
                  and _AND_THE_ASKER.search(sentence[: n.start]) for v in _plain_values([n])}
        return bool(_plain_values([number]) & counts)

    def _day_of_asked_week(self, number: Number, sentence: str) -> bool:
        """Is `number` a date the sentence names with its weekday ("Friday 6 March", "the Wednesday of your
        first week, 4 March"), the right one, within a week of a date of the asker's ("starting on Monday
        2 March")? A day of their first week, say, which a rule names by its weekday ("Wednesday the
        security training")."""
        named = {_WEEKDAYS[w.casefold()] for w in _WEEKDAY.findall(sentence)}
        starts = [asked for asked, _kind in self.asked_dates] + self.reached_dates
        return any(dt.date.fromordinal(day).weekday() in named and abs(day - start) <= WEEK_DAYS
                   for day, _kind in _dates([number]) for start in starts)

    def _day_of_month_moved(self, number: Number, sentence: str) -> bool:
        """Is `number` a day of the month the asker names, moved by days or weeks the blocks state?"""
        if not self.asked_days_of_month or not _day_of_month(sentence, number):
            return False
        return any(int(v) - day in self.shifts for v in _plain_values([number]) if v == int(v)
                   for day in self.asked_days_of_month)

    def _clock_span(self, number: Number, sentence: str, language: str) -> bool:
        """Is it part of a span written in hours and minutes ("9 hours 10 minutes", "9 Std. 10 Min.") that
        is the hours between two times of the asker's, less or plus minutes of theirs (a 20-minute lunch)?"""
        written = [n for n in find_numbers(sentence, language) if n.start >= 0]
        for hours, minutes in pairwise(written):
            if number not in (hours, minutes) or hours.unit != "hour" or minutes.unit != "minute" \
                    or len(sentence[hours.end : minutes.start].split()) > _SPAN_GAP_WORDS:
                continue
            spans = {h + m / 60 for h in _plain_values([hours]) for m in _plain_values([minutes])}
            theirs = {v / 60 for v in self.roots if "minute" in self.root_units.get(v, set())} | {Decimal(0)}
            return any(abs(span - (h + sign * m)) < _HALF_MINUTE
                       for span in spans for h in self.asked_hours for m in theirs for sign in (-1, 1))
        return False

    def _day_in_asked_span(self, number: Number, sentence: str) -> bool | None:
        """For a day of a list that ends in a month ("12, 13 and 15 May"): are the days within the asker's
        own dates ("from 12 May to 15 May")? None for any other number."""
        m = _DAY_LIST.match(sentence, number.start) if number.start >= 0 and not number.unit else None
        if m is None:
            return None
        if len(self.asked_dates) < 2:
            return False
        # By month and day: the asker's dates may carry a year, the list does not.
        month = _MONTH_NAMES[m.group("month").casefold()]
        listed = [(month, int(d)) for d in re.findall(r"\d{1,2}", m.group(0))]
        theirs = [(day.month, day.day) for day in (dt.date.fromordinal(d) for d, _ in self.asked_dates)]
        return all(min(theirs) <= d <= max(theirs) for d in listed)

    def _left_of_limit(self, number: Number, sentence: str, language: str) -> bool:
        """Is a small count the difference or the sum of a count of the asker's this sentence writes and
        one in the same unit ("höchstens 20 Arbeitstage; mit 12 Tagen bleiben noch 8 Arbeitstage")? The
        units must agree, since without them small counts meet by chance."""
        family = unit_family(number.unit)
        if not family:
            return False
        theirs = [v for n in find_numbers(sentence, language) if n.start != number.start and self.known(n)
                  and unit_family(n.unit) in ("", family) for v in _plain_values([n])]
        limits = [v for v, unit in self.counted if unit == family]
        return any(value in (abs(a - b), a + b) for value in _plain_values([number]) for a in theirs for b in limits
                   if value not in (a, b))

    def _shown(self, number: Number, sentence: str, language: str) -> bool:
        """Is `number` the result of arithmetic the sentence writes out ("125 % × 25 EUR × 6 h =
        187,50 EUR"), with operands the question, the blocks or earlier steps give? Recomputed."""
        for expression in arithmetic(sentence, language):
            operands, result = expression
            if result.end != number.end or not all(self._known(o) for o in operands[::2]):
                continue
            rounded = bool(_ROUNDED.search(sentence[: number.start]))
            if any(_matches_result(v, number.raw, value, rounded)
                   for value in _evaluate(operands) for v in _plain_values([number])):
                self.accepted |= _plain_values([number])
                return True
        return False

    def _known(self, operand) -> bool:
        number, _ = operand
        return bool(_plain_values([number]) & (self.operands | self.accepted))

    def _date(self, number: Number) -> bool:
        mine = _dates([number])
        starts = [asked for asked, _kind in self.asked_dates] + self.reached_dates
        month_starts = starts + self.month_ends
        for day, kind in mine:
            # A day and month without a year may fall in the next year ("12 November + 8 weeks: 7 January").
            readings = (day, day + 365) if kind == "dm" else (day,)
            moved = any(abs(d - start) in self.shifts for d in readings for start in starts) \
                or any(d in _workdays_from(start, n) for d in readings for start in starts for n in self.workday_shifts)
            if moved or any(d in _months_later(start, n) for d in readings for start in month_starts
                            for n in self.month_shifts):
                self.reached_dates.append(day)
                return True
        return bool(mine) and any(d.isoformat()[5:] in v for v in number.values
                                  for d in [dt.date.fromordinal(a) for a, _ in self.asked_dates])


# A word set off by quotes or backticks, without spaces: a password, a name the asker spells out.
_QUOTED_WORD = re.compile(r"""(?:(?<=\s)|^)['"`„“‚‘»«]([^\s'"`„“”‚‘’»«]{4,64})['"`“”‘’«»](?=[\s.,;:!?)]|$)""")


@lru_cache(maxsize=4096)
def _workdays_from(start: int, n: int) -> frozenset[int]:
    """A date (an ordinal) moved by `n` working days, Monday to Friday, forward and back: the day the
    n-th working day ends on with the start day counted in, and with it left out."""
    out = set()
    for step in (1, -1):
        day, counted = start, 1 if dt.date.fromordinal(start).weekday() < 5 else 0
        while counted < n + 1:
            day += step
            if dt.date.fromordinal(day).weekday() < 5:
                counted += 1
                if counted == n:
                    out.add(day)
        out.add(day)
    return frozenset(out)


_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
             "montag": 0, "dienstag": 1, "mittwoch": 2, "donnerstag": 3, "freitag": 4, "samstag": 5, "sonntag": 6}
_WEEKDAY = re.compile(rf"\b({'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)
# A weekday named with a date of the asker's week: at most this many days from a date of theirs.
WEEK_DAYS = 6


# "bis zum 19.", "am 5. und am 12.", "by the 19th": a day of the month without its month.
_DAY_OF_MONTH_BEFORE = re.compile(r"\b(?:am|zum|vom|dem|den|on the|by the|from the|until the|the)\s+$", re.IGNORECASE)


def _day_of_month(text: str, number: Number) -> bool:
    if number.unit == "dom":
        return True
    if number.start < 0 or not any(v.isdigit() and 1 <= int(v) <= 31 for v in number.values):
        return False
    return bool(_DAY_OF_MONTH_BEFORE.search(text[: number.start])) and bool(
        re.match(r"(?:\.(?!\d)|st\b|nd\b|rd\b|th\b)", text[number.end:]))


# "you and 3 clients", "du und 2 Kolleg:innen": the asker counts too.
_AND_THE_ASKER = re.compile(r"\b(?:you|I|me|myself|du|dich|dir|Sie|ich|mich|mir)\s+(?:and|und|plus|\+)\s+$", re.IGNORECASE)


# A full-time week of work: "bei einer 5-Tage-Woche", "a five-day week".
WORKDAYS_PER_WEEK = Decimal(5)
_WORK_WEEK = re.compile(r"-?\s*(?:tage-?woche|day(?:s)?(?:\s+working)?[\s-]+week)", re.IGNORECASE)


def _work_week(number: Number, sentence: str) -> bool:
    return Decimal(5) in _plain_values([number]) and bool(_WORK_WEEK.match(sentence, number.end))


# ------------------------------------------------------------------ arithmetic written out

# "70 % von 5.812,50 €", "70 % of 5,812.50 EUR": a share of, a product.
_OPERATOR = re.compile(r"\s*(×|x|\*|·|÷|/|:|\+|−|–|-|von\b|of\b|plus\b|minus\b|mal\b|times\b|geteilt durch\b"
                       r"|divided by\b)\s*", re.IGNORECASE)
# Operators written as words ("2 x 185 EUR plus 18 EUR is 388 EUR"), as their signs.
_OPERATOR_WORDS = {"plus": "+", "minus": "−", "mal": "×", "times": "×", "geteilt durch": "÷", "divided by": "÷"}
# "= 240 €", "ergibt 240 €", and a result after the bracketed working: "(27 × 5 ÷ 6), that's 22.5 days".
# (A result set in bold stays one: "≈ **11,67 Tage**".)
_EQUALS = re.compile(r"\s*\)?,?\s*(?:=|≈|ergibt|ergeben|makes|gives|is|sind|macht|that's|that is|das sind|also)\s*"
                     r"(?:\*\*|__)?", re.IGNORECASE)
_UNIT_WORDS = re.compile(r"\s*(?:%|€|eur\b|euro\b|h\b|std\.?|stunden\b|hours?\b|tage?\b|days?\b|km\b|"
                         r"kilometres?\b|kilometers?\b|wochen\b|weeks?\b|monate?\b|months?\b|arbeitstage\b|"
                         r"working days\b|per hour\b|pro stunde\b|brutto\b|gross\b|netto\b|net\b)", re.IGNORECASE)


def arithmetic(sentence: str, language: str) -> list[tuple[list, Number]]:
    """The chains of arithmetic a sentence writes out, "a × b ÷ c = d": operands (numbers with
    whether a % follows them) and operators alternating, and the result."""
    numbers = [n for n in find_numbers(sentence, language) if n.start >= 0]
    out = []
    for i in range(len(numbers)):
        chain: list = []
        position = numbers[i].end
        chain.append((numbers[i], _percent_after(sentence, position)))
        j = i
        while j + 1 < len(numbers):
            tail = _skip_units(sentence, position)
            op = _OPERATOR.match(sentence, tail)
            if op and op.end() == numbers[j + 1].start:
                word = op.group(1).casefold()
                sign = _OPERATOR_WORDS.get(word, word)
                chain += [sign, (numbers[j + 1], _percent_after(sentence, numbers[j + 1].end))]
                j += 1
                position = numbers[j].end
                continue
            equals = _EQUALS.match(sentence, tail)
            if equals and equals.end() == numbers[j + 1].start and len(chain) >= 3:
                out.append((chain, numbers[j + 1]))
            break
    return out


# A rule's formula over a quantity it names in words: "Bruttomonatsgehalt × 3 ÷ 65", "monthly gross × 3 / 65".
Formula = tuple[tuple[str, Decimal], ...]
# ("x" and "/" only between spaces: "max 3", "km/30" are no formula)
_STEP = r"(?:[×*÷]|(?<=\s)[x/](?=\s))\s*\d+(?:[.,]\d+)?"
_FORMULA = re.compile(rf"(?<=[^\W\d])\s*((?:{_STEP}\s*)+)(?![\d.,]*\s*(?:=|≈))", re.IGNORECASE)
_FORMULA_STEP = re.compile(r"([×*÷x/])\s*(\d+(?:[.,]\d+)?)", re.IGNORECASE)


def formulas(text: str) -> list[Formula]:
    """The formulas a text writes over a quantity named in words, each as its steps (operator, operand)."""
    out = []
    for m in _FORMULA.finditer(text):
        steps = tuple((op.lower(), Decimal(num.replace(",", "."))) for op, num in _FORMULA_STEP.findall(m.group(1)))
        if steps and any(v != 0 for _op, v in steps):
            out.append(steps)
    return out


def _apply(value: Decimal, steps: Formula) -> Decimal | None:
    for op, operand in steps:
        if op in "÷/":
            if not operand:
                return None
            value = value / operand
        else:
            value = value * operand
    return value


def _skip_units(sentence: str, position: int) -> int:
    while m := _UNIT_WORDS.match(sentence, position):
        if m.end() == position:
            break
        position = m.end()
    return position


def _percent_after(sentence: str, position: int) -> bool:
    return bool(re.match(r"\s*(?:%|prozent\b|percent\b)", sentence[position:], re.IGNORECASE))


def _evaluate(chain: list) -> list[Decimal]:
    """Every value of the chain, one per reading of its ambiguous numbers ("5,200": 5200 or 5.2);
    left to right, × and ÷ before + and −, a percentage as its share."""
    choices = []
    for operand in chain[::2]:
        number, percent = operand
        values = sorted(_plain_values([number]))
        if not values:
            return []
        choices.append([v / 100 if percent else v for v in values])
    out = []
    for picked in product(*choices):
        value = _evaluate_one(picked, chain[1::2])
        if value is not None:
            out.append(value)
    return out


def _evaluate_one(values: tuple[Decimal, ...], operators: list[str]) -> Decimal | None:
    terms_: list[Decimal] = []
    signs: list[int] = []
    current, sign = values[0], 1
    for op, operand in zip(operators, values[1:], strict=True):
        if op in "×x*·" or op in ("von", "of"):
            current *= operand
        elif op in "÷/:":
            if operand == 0:
                return None
            current /= operand
        else:
            terms_.append(current)
            signs.append(sign)
            sign = 1 if op == "+" else -1
            current = operand
    terms_.append(current)
    signs.append(sign)
    return sum((s * t for s, t in zip(signs, terms_, strict=True)), Decimal(0))
