"""Numbers, dates and amounts: find them, and compare them across spellings.

A number in an answer must be one the cited source states. The comparison is on
values, not strings: "1.538,50" (German) and "1538.50" are one amount, "13,90 €"
and "13.90" too, "15.01.2026" and "2026-01-15" one date. It is on whole tokens,
never substrings, so "24" does not hide inside "2024".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_TOKEN = re.compile(
    # Not glued to a word or another number: "CD4" and "p53" are names, not numbers.
    r"(?<![\w.,])(?:"
    r"(?P<iso>(?P<iy>\d{4})-(?P<im>\d{2})(?:-(?P<id>\d{2}))?)(?![\d-])"
    r"|(?P<dmy>(?P<dd>\d{1,2})\.(?P<dm>\d{1,2})\.(?P<dy>\d{4}))(?!\d)"
    r"|(?P<dm_only>(?P<od>\d{1,2})\.(?P<om>\d{1,2})\.)(?![\d\w])"
    r"|(?P<time>(?P<th>\d{1,2}):(?P<tm>\d{2}))(?!\d)"
    r"|(?P<num>\d+(?:[.,]\d+)*)"
    r")"
)

# Small numbers are often spelled out ("sechs Wochen"). "one"/"ein" are left out
# on the answer side: they are pronouns and articles far more often than numbers.
_WORDS = {
    "en": ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
           "ten", "eleven", "twelve"],
    "de": ["null", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun",
           "zehn", "elf", "zwölf"],
}
_NOT_NUMBERS_IN_ANSWERS = {"one", "eins"}
_WORD = re.compile(r"\b[^\W\d_]+\b")


@dataclass(frozen=True)
class Number:
    raw: str  # as written
    values: frozenset[str]  # its possible canonical readings


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


def _date(year: str, month: str, day: str | None) -> str | None:
    if not 1 <= int(month) <= 12 or (day is not None and not 1 <= int(day) <= 31):
        return None
    return f"{year}-{int(month):02d}" + (f"-{int(day):02d}" if day else "")


def _match_readings(m: re.Match[str], source: bool) -> set[str]:
    """Readings of one match; a source also offers the parts of its dates, so an
    answer may say "2026" or "15.01." about a source's "2026-01-15"."""
    if m["iso"] or m["dmy"]:
        year, month, day = (m["iy"], m["im"], m["id"]) if m["iso"] else (m["dy"], m["dm"], m["dd"])
        full = _date(year, month, day)
        if full is None:
            return _number_readings(year)
        if not source:
            return {full}
        parts = {full, _canon(year), full[:7]}
        return parts | ({f"--{full[5:]}"} if day else set())
    if m["dm_only"]:
        month, day = int(m["om"]), int(m["od"])
        if 1 <= month <= 12 and 1 <= day <= 31:
            return {f"--{month:02d}-{day:02d}"}
        return _number_readings(f"{m['od']}.{m['om']}")
    if m["time"]:
        return {f"{int(m['th'])}:{m['tm']}"}
    return _number_readings(m["num"])


def _word_numbers(text: str, language: str, source: bool) -> list[Number]:
    words = _WORDS.get(language, _WORDS["en"])
    found = []
    for m in _WORD.finditer(text):
        word = m.group(0).lower()
        if word in words and (source or word not in _NOT_NUMBERS_IN_ANSWERS):
            found.append(Number(m.group(0), frozenset({str(words.index(word))})))
    return found


def find_numbers(text: str, language: str = "en", *, source: bool = False) -> list[Number]:
    """Numbers, dates, times and spelled-out small numbers in `text`, in order."""
    found = [Number(m.group(0), frozenset(_match_readings(m, source))) for m in _TOKEN.finditer(text)]
    return found + _word_numbers(text, language, source)


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
