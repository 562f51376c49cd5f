"""Links, e-mail addresses and phone numbers in an answer: each must be in a block it cites.

A made-up link is worse than a made-up number: it may send employees to a phishing page with the
KB's authority. Found: URLs (with a scheme, "www." hosts, bare host names followed by a path,
Markdown link targets), Slack's own syntax ("<https://x|label>", "<mailto:...>", "<tel:...>",
"<!channel>", "<@U123>", "<#C123>": the renderer escapes it, but a verified answer must not hold
it), e-mail addresses, and phone numbers (7 to 15 digits in groups, compared as digits, with or
without a country code). Comparison ignores case, the scheme and "www."; a URL may be shortened
to a prefix that ends at a path boundary, never lengthened or changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.answer.verify.text import as_read

URL, EMAIL, PHONE, SLACK = "url", "email", "phone", "slack"

_SLACK = re.compile(r"<((?:[a-z][a-z0-9+.-]*:|[!@#])[^<>|\s]*)(?:\|[^<>]*)?>", re.I)
_MARKDOWN = re.compile(r"\[[^\[\]\n]*\]\(\s*<?([^()<>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EMAIL = re.compile(r"(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
_SCHEME_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`|\[\]{}]+", re.I)
_WWW = re.compile(r"(?<![\w.@/-])www\.[^\s<>\"'`|\[\]{}]+", re.I)
# Lower-case host names only: "ASP.NET" or "Node.JS" are names, not hosts.
_HOST = r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+"
_HOST_WITH_PATH = re.compile(rf"(?<![\w.@/-]){_HOST}[a-z]{{2,}}(?::\d+)?/[^\s<>\"'`|\[\]{{}}]*")
_COMMON_TLDS = "com|org|net|de|io|info|biz|eu|at|ch|uk|us|co|app|dev|gov|edu|example|test|invalid|local"
_BARE_HOST = re.compile(rf"(?<![\w.@/-]){_HOST}(?:{_COMMON_TLDS})(?![\w.-]*\w)")
# Digit groups, "." only between digits, that may end before "," ("0199, staffed"); _phone() decides what is one.
_PHONE = re.compile(r"(?<![\w.,/+-])(?:\+|\(\+?)?\d(?:[\d \t()/-]|\.(?=\d))*\d\)?(?!\w|[.,/-]\d)")
_TRAILING = ".,;:!?'\")]}>*_“”„«»‘’"
_YEAR = re.compile(r"^(?:19|20)\d\d$")

_DATE_OR_RANGE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}|\d{1,2}([./])\d{1,2}\1\d{2,4}|\d{1,2}:\d{2}"
                            r"|(?:19|20)\d\d\s*[-/]\s*(?:19|20)\d\d)$")  # "2023/2024", not "0421/5550"
_THOUSANDS = re.compile(r"^[1-9]\d{0,2}(?:([. ])\d{3})(?:\1\d{3})*$")  # but "030 555 019" is no amount


@dataclass(frozen=True)
class Link:
    raw: str  # as written
    kind: str
    key: str  # what is compared: a normalised URL or address, or the digits


def _mask(text: str, span: tuple[int, int]) -> str:
    """Blank out a found link so the next pattern does not find part of it again."""
    return text[: span[0]] + " " * (span[1] - span[0]) + text[span[1] :]


def _url_key(url: str) -> str:
    url = re.sub(r"^[a-z][a-z0-9+.-]*://", "", url.strip().rstrip(_TRAILING).casefold())
    return url.removeprefix("www.").rstrip("/")


def _phone(raw: str) -> Link | None:
    raw = raw.strip().rstrip(".-/")
    if raw.endswith(")") and raw.count(")") > raw.count("("):
        raw = raw[:-1]  # "(Tel. 030 1234567)": the bracket around it
    digits = re.sub(r"\D", "", raw)
    if not 7 <= len(digits) <= 15 or _DATE_OR_RANGE.match(raw) or _THOUSANDS.match(raw):
        return None  # a date, a range of years, an amount ("1.000.000", "10 000 000")
    if not re.search(r"[ \t()./-]", raw) and not raw.startswith("+"):
        return None  # one run of digits is a number; the number rule checks it
    if raw.count("(") != raw.count(")") or all(_YEAR.match(g) for g in re.findall(r"\d+", raw)):
        return None  # "seit 2024 (2023: 9,50 €)", "2023 2024": years beside each other
    return Link(raw, PHONE, _phone_key(raw))


def _phone_key(raw: str) -> str:
    """Its digits; "+" and the country code first where it has one ("+49 (0)30 …", "0049 30 …")."""
    digits = re.sub(r"\D", "", raw.replace("(0)", ""))
    return "+" + digits.removeprefix("00") if raw.lstrip("(")[:1] == "+" or digits[:2] == "00" else digits


def _slack(target: str, raw: str) -> Link:
    lowered = target.casefold()
    if lowered.startswith("mailto:"):
        return Link(raw, EMAIL, lowered.removeprefix("mailto:"))
    if lowered.startswith("tel:"):
        return Link(raw, PHONE, _phone_key(target[4:]))
    if lowered[:1] in ("!", "@", "#"):
        return Link(raw, SLACK, raw.casefold())
    return Link(raw, URL, _url_key(target))


def find_links(text: str, *, phones: bool = True) -> list[Link]:
    """Every link, address and phone number in `text`, in the order the patterns find them."""
    found: list[Link] = []
    text = as_read(text)
    for m in _SLACK.finditer(text):
        found.append(_slack(m.group(1), m.group(0)))
        text = _mask(text, m.span())
    for m in _MARKDOWN.finditer(text):
        found.append(Link(m.group(1), URL, _url_key(m.group(1))))
        text = _mask(text, m.span())
    for pattern in (_SCHEME_URL, _WWW, _EMAIL, _HOST_WITH_PATH, _BARE_HOST):
        for m in pattern.finditer(text):
            raw = m.group(0).rstrip(_TRAILING)
            found.append(Link(raw, EMAIL, raw.casefold()) if pattern is _EMAIL else Link(raw, URL, _url_key(raw)))
            text = _mask(text, m.span())
    if phones:
        found.extend(link for m in _PHONE.finditer(text) if (link := _phone(m.group(0))))
    return found


def _phone_matches(key: str, stated: set[str]) -> bool:
    """The same number, or the same with and without its country code ("+49 30 …" / "030 …")."""
    return any(key == other or _national(key, other) or _national(other, key) for other in stated)


def _national(international: str, national: str) -> bool:
    """Is `national` ("030 …" with a trunk 0, "(555) …" without) the number `international` is?"""
    rest = national.removeprefix("0")
    return international[:1] == "+" != national[:1] and 1 <= len(international) - 1 - len(rest) <= 3 \
        and international.endswith(rest)


def _url_in(key: str, haystack: str) -> bool:
    """Is `key` in the normalised source text, starting and ending at a boundary?"""
    if not key:
        return False
    for m in re.finditer(re.escape(key), haystack):
        before = haystack[m.start() - 1] if m.start() else " "
        after = haystack[m.end() : m.end() + 2]
        # "wiki.example.com" may end before "/a/form", not before "x" or ".other.org".
        ends_word = not after or not (after[0].isalnum() or after[0] in "-_@" or re.match(r"\.\w", after))
        if not (before.isalnum() or before in ".-_@") and ends_word:
            return True
    return False


def _source_haystack(sources: list[str]) -> str:
    """The sources as one text in which URLs read like their keys."""
    text = re.sub(r"\b[a-z][a-z0-9+.-]*://", " ", "\n".join(sources).casefold())
    return re.sub(r"(?<![\w.])www\.", " ", text)


def missing_links(text: str, sources: list[str]) -> list[str]:
    """The links, addresses and phone numbers of `text` (as written) that no source states."""
    sources = [as_read(s) for s in sources]
    haystack = _source_haystack(sources)
    stated_phones = {_phone_key(m.group(0)) for s in sources for m in _PHONE.finditer(s)}
    stated_phones |= {link.key for s in sources for link in find_links(s, phones=False) if link.kind == PHONE}
    missing = []
    for link in find_links(text):
        if link.kind == PHONE:
            ok = _phone_matches(link.key, stated_phones)
        elif link.kind == SLACK:
            ok = link.key in "\n".join(sources).casefold()
        else:
            ok = _url_in(link.key, haystack)
        if not ok and link.raw not in missing:
            missing.append(link.raw)
    return missing
