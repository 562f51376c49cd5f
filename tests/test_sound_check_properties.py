"""Properties of the sound checks (bot/answer/verify), the findings no judge may overrule or that go to it:
what a draft restates from the block it cites, however it words and punctuates around it, is never flagged;
a draft that changes one digit or letter of it always is, by the check that owns that kind of fact.

The blocks are generated as people write them: amounts, percentages, counts, times and dates in German and
English spellings, phone numbers, URLs, e-mail addresses, Slack mentions, in brackets, in emphasis, before
any punctuation, in lists and across line wraps. The drafts go through the verifiers' entry points as the
answer pipeline calls them (verify_citations, verify_claims). Each test names the check it is about; where
a property had to be narrowed, a comment says why. Reproducible and bounded: derandomized, a fixed number of
examples, no example database.
"""

from __future__ import annotations

import calendar
import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from bot.answer.prompt import build_evidence
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.answer.verify.text import evidence_text
from kb_index import ChunkResult

# Fixed examples (derandomized: the same on every run), a deadline well above the slowest seen, no database.
PROPERTY = settings(derandomize=True, max_examples=50, deadline=5000, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

NUMBER, LINK, QUOTE = "NUMBER_NOT_IN_SOURCE", "LINK_NOT_IN_SOURCE", "QUOTE_NOT_IN_SOURCE"

# Words around the facts: no digits, no number words ("one", "acht"), no month names, no refusal, no
# "Stand": those are facts of their own, and a property about one fact must not hinge on another.
WORDS = ("the hotline desk team request form please call write office portal payment amount deadline details "
         "applies for all employees is are at on by from with via and or use see reach contact open daily "
         "der die das Antrag Betrag Frist bitte an unter per für alle Beschäftigten gilt ist sind mit über "
         "Formular Stelle Team erreichbar Zahlung").split()
MONTHS_DE = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
             "November", "Dezember"]
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]


Day = tuple[int | None, int, int]  # year (or none written), month, day


@dataclass(frozen=True)
class Fact:
    check: str  # the finding a changed one must raise
    text: str  # as the block writes it and the draft restates it
    mutable: tuple[int, ...]  # where a changed digit or letter may be: what the check compares
    days: Callable[[str], set[Day]] | None = None  # for a date: the days its text, changed or not, may mean


def fact(check: str, text: str, start: int = 0, end: int | None = None, *, digits_only: bool = False) -> Fact:
    end = len(text) if end is None else end
    where = [i for i in range(start, end) if text[i].isdigit() or (not digits_only and text[i].isascii()
                                                                     and text[i].isalpha())]
    return Fact(check, text, tuple(where))


def digits(n: int, first: str = string.digits) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(first), st.text(string.digits, min_size=n - 1, max_size=n - 1)).map("".join)


def grouped(number: int, separator: str) -> str:
    """1234567 as "1.234.567", "1,234,567" or "1 234 567"."""
    text = str(number)
    groups = [text[max(0, i - 3) : i] for i in range(len(text), 0, -3)][::-1]
    return separator.join(groups)


# ------------------------------------------------------------------ the facts a block states


@st.composite
def amounts(draw) -> Fact:
    """An amount, a percentage, a count or a time, German or English."""
    if draw(st.integers(0, 5)) == 0:
        hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
        shape = draw(st.sampled_from(["{}:{:02d}", "{}:{:02d} Uhr", "{:02d}:{:02d} h"]))
        return fact(NUMBER, shape.format(hour, minute), digits_only=True)
    german = draw(st.booleans())
    whole = grouped(draw(st.integers(0, 9_999_999)), draw(st.sampled_from([".", " ", ""] if german else [",", ""])))
    cents = draw(st.none() | st.integers(0, 99))
    number = whole if cents is None else f"{whole}{',' if german else '.'}{cents:02d}"
    shape = draw(st.sampled_from(["{} €", "{}€", "{} EUR", "EUR {}", "€{}", "€ {}", "{} Euro", "${}", "{} USD", "{} %",
                                  "{}%", "{} percent", "{} Prozent", "{} Tage", "{} days", "{} hours", "{}"]))
    return fact(NUMBER, shape.format(number), digits_only=True)  # a unit is the judge's: values are compared


# {d} day, {m} month, {y} year; {dd}, {mm} with a leading zero; {M}, {E} the German and English month name.
DATE_SHAPES = ["{d}. {M} {y}", "{d}. {M}", "{d} {E} {y}", "{E} {d}, {y}", "{E} {d}", "{d}{th} {E} {y}", "{d}{th} of {E}",
               "{y}-{mm}-{dd}", "{dd}.{mm}.{y}", "{d}.{m}.{y}", "{mm}/{dd}/{y}", "{dd}/{mm}/{y}", "{d}. {M3} {y}"]


@st.composite
def dates(draw) -> Fact:
    year, month, day = draw(st.integers(1990, 2039)), draw(st.integers(1, 12)), draw(st.integers(1, 28))
    de = MONTHS_DE[month - 1]
    words = {"M": de, "E": MONTHS_EN[month - 1], "M3": de[:3] + "." if len(de) > 4 else de,
             "th": {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd"}.get(day, "th")}
    numbers = {"y": str(year), "m": str(month), "mm": f"{month:02d}", "d": str(day), "dd": f"{day:02d}"}
    text, spans = "", {}
    for literal, field, _, _ in string.Formatter().parse(draw(st.sampled_from(DATE_SHAPES))):
        text += literal
        if field in numbers:
            spans[field[0]] = (len(text), len(text) + len(numbers[field]))
        text += numbers.get(field or "", words.get(field or "", ""))
    return replace(fact(NUMBER, text, digits_only=True), days=lambda written: days(written, spans, month))


def days(written: str, spans: dict[str, tuple[int, int]], month: int) -> set[Day]:
    """The days a date written in a shape of DATE_SHAPES means: "03/01/2026" two, "2026-13-01" none."""
    read = {k: int(written[a:b]) for k, (a, b) in spans.items()}
    year, month, day = read.get("y"), read.get("m", month), read["d"]
    both = [(month, day), (day, month)] if "/" in written else [(month, day)]
    return {(year, m, d) for m, d in both if 1 <= m <= 12 and 1 <= d <= calendar.monthrange(year or 2024, m)[1]}


@st.composite
def phones(draw) -> Fact:
    """National with a trunk 0 (DE, UK, FR), international with a country code, or North American."""
    style = draw(st.sampled_from(["trunk", "international", "nanp"]))
    if style == "nanp":
        area, exchange, line = draw(digits(3, "23456789")), draw(digits(3, "23456789")), draw(digits(4))
        shape = draw(st.sampled_from(["({}) {}-{}", "{}-{}-{}", "+1 {} {} {}", "+1 ({}) {}-{}", "{}.{}.{}"]))
        return fact(LINK, shape.format(area, exchange, line), digits_only=True)
    area = draw(digits(draw(st.integers(1, 4)), "123456789"))
    subscriber = draw(digits(draw(st.integers(3, 8)), "123456789"))
    size = draw(st.integers(2, 4))
    inner = draw(st.sampled_from([" ", "-", ""]))
    subscriber = inner.join(subscriber[i : i + size] for i in range(0, len(subscriber), size))
    if style == "trunk":
        shape = draw(st.sampled_from(["0{} {}", "0{}/{}", "0{} / {}", "0{}-{}", "(0{}) {}"]))
    else:
        code = draw(digits(draw(st.integers(1, 3)), "123456789"))
        shape = "+" + code + draw(st.sampled_from([" {} {}", " (0){} {}", "-{}-{}", " {}-{}"]))
    text = shape.format(area, subscriber)
    assume(7 <= sum(ch.isdigit() for ch in text) <= 15)
    return fact(LINK, text, digits_only=True)


LABEL = st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
TLDS = ["com", "org", "net", "de", "eu", "io", "ch", "at", "example", "test", "info", "dev", "app", "travel", "cloud"]
# A host name alone ("wiki.example.com") is a link only with a top-level domain everyone knows: "Node.js" and
# "config.yaml" are names, and Slack does not link them either.
KNOWN_TLDS = ["com", "org", "net", "de", "eu", "io"]


@st.composite
def urls(draw) -> Fact:
    host = ".".join(draw(st.lists(LABEL, min_size=1, max_size=3)))
    segment = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9._~-]{0,10}[A-Za-z0-9])?", fullmatch=True)
    path = "/".join(draw(st.lists(segment, min_size=1, max_size=3)))
    path += draw(st.sampled_from(["", "/", ".pdf", "?id=" + draw(digits(3)), "#" + draw(LABEL)]))
    port = draw(st.sampled_from(["", ":" + draw(digits(4, "123456789"))]))
    shape = draw(st.sampled_from(["https://{h}.{t}{p}/{path}", "http://{h}.{t}/{path}", "www.{h}.{t}/{path}",
                                  "{h}.{t}/{path}", "https://{h}.{t}", "{h}.{known}"]))
    url = shape.format(h=host, t=draw(st.sampled_from(TLDS)), p=port, path=path, known=draw(st.sampled_from(KNOWN_TLDS)))
    start = url.index("//") + 2 if "//" in url else 0  # the scheme is compared loosely: http and https alike
    end = url.rindex(".") if shape == "{h}.{known}" else len(url)  # "x.cxm" is a word to everyone, no link
    form = draw(st.sampled_from(["{}", "[{label}]({})", "<{}|{label}>"]))
    if form == "<{}|{label}>" and "//" not in url:
        form = "{}"  # Slack links carry a scheme
    label = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))
    head = len(form.split("{}")[0].format(label=label))
    return fact(LINK, form.format(url, label=label), head + start, head + end)  # the label is no link


@st.composite
def emails(draw) -> Fact:
    local = draw(st.from_regex(r"[a-z0-9](?:[a-z0-9._+-]{0,10}[a-z0-9])?", fullmatch=True))
    domain = ".".join(draw(st.lists(LABEL, min_size=1, max_size=2))) + "." + draw(st.sampled_from(TLDS))
    address = f"{local}@{domain}"
    return fact(LINK, address.capitalize() if draw(st.booleans()) else address)


@st.composite
def slack_mentions(draw) -> Fact:
    sigil = draw(st.sampled_from(["@U", "@W", "#C", "!subteam^S"]))
    ident = draw(st.text(string.ascii_uppercase + string.digits, min_size=8, max_size=11))
    label = draw(st.sampled_from(["", "|" + draw(LABEL)]))  # shown in its place: no part of what it links to
    if special := draw(st.sampled_from([None, "here", "channel", "everyone"])):
        return fact(LINK, f"<!{special}>", 2, 2 + len(special))
    text = f"<{sigil}{ident}{label}>"
    return fact(LINK, text, 2, len(text) - 1 - len(label))


FACTS = {"number": amounts(), "date": dates(), "phone": phones(), "url": urls(), "email": emails(),
         "slack": slack_mentions()}
# KB-IDs as kb_index.entries allows them, with a separator: a bracketed word without one ("[faq]") reads as
# an editorial note like "[sic]", so a changed one could not be told from a note.
ENTRY_ID = st.tuples(st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,5}", fullmatch=True), st.sampled_from(["-", "_", "."]),
                     st.from_regex(r"[A-Za-z0-9]{1,6}", fullmatch=True)).map("".join)


def words(n_min: int = 0, n_max: int = 4) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), min_size=n_min, max_size=n_max).map(" ".join)


# ------------------------------------------------------------------ blocks and drafts


@st.composite
def block_sentence(draw, f: Fact) -> tuple[str, str, str]:
    """One sentence of a block stating `f` (in brackets or emphasis, before punctuation, hard-wrapped or not),
    as written, as a reader sees it (without the emphasis, on one line), and the fact."""
    opening, closing = draw(st.sampled_from([("", ""), ("(", ")"), ("**", "**"), ("_", "_"), ("[", "]"), ("*", "*")]))
    after = draw(st.sampled_from(["", ".", ",", ";", ":", ")", " –", "!", "?"]))
    before, behind = draw(words()), draw(words())
    seen = " ".join(filter(None, [before, f"{opening.strip('*_')}{f.text}{closing.strip('*_')}{after}", behind])) + "."
    written = " ".join(filter(None, [before, f"{opening}{f.text}{closing}{after}", behind])) + "."
    # Hard wraps, but none before "1. " or "- ": in Markdown a line that opens so is an item of a list.
    wraps = [m.start() for m in re.finditer(" (?!(?:1[.)]|[-*+])(?: |$))", written) if not draw(st.integers(0, 5))]
    return "".join("\n" if i in wraps else ch for i, ch in enumerate(written)), seen, f.text


@st.composite
def blocks(draw, facts: list[Fact]) -> tuple[ChunkResult, list[tuple[str, str, str]]]:
    sentences = [draw(block_sentence(f)) for f in facts]
    sentences += [(s, s, "") for s in draw(st.lists(words(3, 8).map(lambda w: w + "."), max_size=2))]
    glue = draw(st.sampled_from([" ", "\n", "\n\n", "\n- "]))
    text = ("- " if glue == "\n- " else "") + glue.join(written for written, _, _ in sentences)
    entry_id = draw(ENTRY_ID)
    # With a Stand as a real block has: its date is stated too.
    chunk = ChunkResult(chunk_id=f"{entry_id}#0", entry_id=entry_id, section=draw(words(1, 3)), text=text,
                        title=draw(words(1, 3)), stand="2026-01", language=draw(st.sampled_from(["de", "en"])))
    return chunk, sentences


@st.composite
def quotations(draw, sentences: list[tuple[str, str, str]]) -> Fact:
    """A run of a block sentence's words, as written or as a reader sees it: quoted, it is verbatim. It holds
    the sentence's fact whole or not at all: "+49 421" of "+49 421 555 0199" is a number the block does not state."""
    written, seen, stated = draw(st.sampled_from(sentences))
    at = seen.find(stated) if stated else -1
    inside = {i for i, m in enumerate(re.finditer(r"\S+", seen)) if at >= 0 and m.start() < at + len(stated) and at < m.end()}
    tokens = draw(st.sampled_from([written.split(), seen.split()]))
    first = draw(st.integers(0, len(tokens) - 1))
    last = draw(st.integers(first + 1, min(len(tokens), first + 9)))
    assume(inside <= set(range(first, last)) or not inside & set(range(first, last)))
    return fact(QUOTE, " ".join(tokens[first:last]))


@dataclass(frozen=True)
class Spot:
    kind: str
    fact: Fact
    at: int  # where the draft restates it


@dataclass(frozen=True)
class Case:
    chunk: ChunkResult
    draft: str
    spots: tuple[Spot, ...]
    language: str
    stated: tuple[Fact, ...]  # every fact of the block


ANY_FACT = st.sampled_from(list(FACTS.values())).flatmap(lambda s: s)
QUOTE_MARKS = [("„", "“"), ('"', '"'), ("“", "”"), ("»", "«"), ("«", "»")]


@st.composite
def restated(draw, kind: str, f: Fact) -> tuple[str, int]:
    """`f` in a phrase of the draft's own words and punctuation, and where in it `f` starts. Round brackets
    only: "[2026-03-01]" in square ones is shaped like a citation, to the reader as to the check."""
    opening, closing = draw(st.sampled_from([("", ""), ("(", ")"), ("**", "**"), ("_", "_"), ("*", "*")]))
    if kind == "quote":
        opening, closing = draw(st.sampled_from(QUOTE_MARKS))
    after = draw(st.sampled_from(["", ",", ";", ":", ")", " –", " -", "!"]))
    # A line that opens with a bare number and a full stop ("13. 0:00") is an item of a numbered list.
    lead, tail = draw(words(1 if re.fullmatch(r"[\d.,  ]+", f.text) else 0, 3)), draw(words(0, 3))
    lead += " " if lead else ""
    return f"{lead}{opening}{f.text}{closing}{after}{' ' + tail if tail else ''}", len(lead) + len(opening)


@st.composite
def facts_of(draw, kind: str) -> tuple[ChunkResult, list[Fact], tuple[Fact, ...]]:
    """A block stating facts of `kind` among others, those the draft restates, and all of them."""
    mine = draw(st.lists(ANY_FACT if kind in ("quote", "id") else FACTS[kind], min_size=1, max_size=3))
    stated = (*mine, *draw(st.lists(ANY_FACT, max_size=2)))
    chunk, sentences = draw(blocks(list(stated)))
    if kind == "quote":
        mine = draw(st.lists(quotations(sentences), min_size=1, max_size=2))
    return chunk, mine, stated


@st.composite
def citations_cases(draw, kind: str) -> Case:
    """A draft in citations mode citing the block after every sentence, or once at the end of its paragraph."""
    chunk, mine, stated = draw(facts_of(kind))
    form = draw(st.sampled_from(["[{}]", "[Source: {}]", "[Quelle: {}]", "[KB: {}]", "[{} ]"]))
    every = draw(st.booleans())
    glue = draw(st.sampled_from([" ", "\n", "\n\n", "\n- "] if every else [" ", "\n", "\n- "]))
    draft, spots = "- " if glue == "\n- " else "", []
    for i, f in enumerate(mine):
        phrase, at = draw(restated(kind, f))
        spots.append(Spot(kind if kind != "id" else "fact", f, len(draft) + at))
        draft += phrase
        if every or i == len(mine) - 1:
            ref = form.format(chunk.entry_id)
            spots.append(Spot("id", fact("UNKNOWN_ID", chunk.entry_id), len(draft) + 1 + ref.index(chunk.entry_id)))
            draft += " " + ref
        draft += draw(st.sampled_from([".", "!"])) + (glue if i < len(mine) - 1 else "")
    return Case(chunk, draft, tuple(spots), draw(st.sampled_from(["de", "en"])), stated)


@st.composite
def claims_cases(draw, kind: str) -> Case:
    """A draft in claims mode: one claim per fact, citing the block's pointer id or its KB-ID."""
    chunk, mine, stated = draw(facts_of(kind))
    draft, spots = '{"claims": [', []
    for i, f in enumerate(mine):
        phrase, at = draw(restated(kind, f))
        cited = draw(st.sampled_from(["E1", chunk.entry_id]))
        assert json.dumps(phrase, ensure_ascii=False) == f'"{phrase}"'  # offsets count as written
        draft += ", " if i else ""
        draft += '{"text": "'
        spots.append(Spot(kind if kind != "id" else "fact", f, len(draft) + at))
        draft += phrase + '", "evidence_ids": ["'
        spots.append(Spot("id", fact("UNKNOWN_EVIDENCE_ID", cited), len(draft)))
        draft += cited + '"]}'
    return Case(chunk, draft + "]}", tuple(spots), draw(st.sampled_from(["de", "en"])), stated)


def report(block: str, draft: str, found) -> str:
    return f"block {block!r}\ndraft {draft!r}\nfound {[v.detail for v in found.violations]}"


def verdict(case: Case, mode: str, draft: str | None = None):
    """The sound checks' verdict, as the answer pipeline asks for it."""
    evidence = build_evidence([case.chunk])
    verify = verify_citations if mode == "citations" else verify_claims
    return verify(case.draft if draft is None else draft, evidence, case.language, question="")


# ------------------------------------------------------------------ one digit or letter changed


def other(draw, ch: str) -> str:
    """Another digit for a digit, another letter for a letter (in its case): a typo, not a new kind of text."""
    if ch.isdigit():
        return draw(st.sampled_from([d for d in string.digits if d != ch]))
    letter = draw(st.sampled_from([c for c in string.ascii_lowercase if c != ch.casefold()]))
    return letter.upper() if ch.isupper() else letter


def numbers_in(text: str) -> set[int]:
    """Every digit group of `text`, and every run of groups joined across one separator ("1.234" is 1234 too)."""
    runs = re.findall(r"\d+(?:[.,  ]\d+)*", text)
    return {int(g) for run in runs for g in re.findall(r"\d+", run)} | {int(re.sub(r"\D", "", r)) for r in runs}


def same_day(a: Day, b: Day) -> bool:
    return a[1:] == b[1:] and None in (a[0], b[0]) or a == b  # "1. März" is 1 March of any year


def stated_anyway(spot: Spot, changed: str, at: int, case: Case) -> bool:
    """Is the changed fact, or the number the changed digit is part of, something the block states all the
    same (another fact of it, its Stand)? Then the change makes no claim the block does not back."""
    source = " ".join(evidence_text(build_evidence([case.chunk])[0]).split())
    if re.sub(r"[*_]", "", changed).casefold() in re.sub(r"[*_]", "", source).casefold():
        return True  # emphasis is no part of what is said: a quotation "**1" is the "1" of the Stand
    if spot.fact.days:  # a date is compared as a date ("01/09/1990" and "09/01/1990" may be one)
        stated = {day for f in case.stated if f.days for day in f.days(f.text)}
        return any(same_day(a, b) for a in spot.fact.days(changed) for b in stated)
    if spot.kind != "number":
        return False  # a phone number is compared as a whole
    group = re.search(r"\d*$", changed[: at + 1]).group(0) + re.match(r"\d*", changed[at + 1 :]).group(0)
    return bool(({int(group)} | numbers_in(changed)) & numbers_in(source))


@st.composite
def changed_cases(draw, cases: st.SearchStrategy[Case], kind: str) -> tuple[Case, str, Spot]:
    case = draw(cases)
    spot = draw(st.sampled_from([s for s in case.spots if s.kind == kind]))
    assume(spot.fact.mutable)
    i = draw(st.sampled_from(spot.fact.mutable))
    text = spot.fact.text
    changed = text[:i] + other(draw, text[i]) + text[i + 1 :]
    assume(not stated_anyway(spot, changed, i, case))
    draft = case.draft[: spot.at] + changed + case.draft[spot.at + len(text) :]
    return case, draft, spot


# ------------------------------------------------------------------ the properties

KINDS = ["number", "date", "phone", "url", "email", "slack", "quote", "id"]
CLAIMS_KINDS = [k for k in KINDS if k != "quote"]  # a claim may not quote (MANUAL_QUOTE_VIOLATION)


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY
@given(data=st.data())
def test_a_citations_draft_restating_its_block_is_never_flagged(kind, data):
    case = data.draw(citations_cases(kind))
    found = verdict(case, "citations")
    assert found.ok and not found.violations, report(case.chunk.text, case.draft, found)


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY
@given(data=st.data())
def test_a_citations_draft_changing_one_digit_or_letter_is_always_flagged(kind, data):
    case, draft, spot = data.draw(changed_cases(citations_cases(kind), kind))
    found = verdict(case, "citations", draft)
    assert spot.fact.check in {v.kind for v in found.violations}, report(case.chunk.text, draft, found)


@pytest.mark.parametrize("kind", CLAIMS_KINDS)
@PROPERTY
@given(data=st.data())
def test_a_claims_draft_restating_its_block_is_never_flagged(kind, data):
    case = data.draw(claims_cases(kind))
    found = verdict(case, "claims")
    assert found.ok and not found.violations, report(case.chunk.text, case.draft, found)


@pytest.mark.parametrize("kind", CLAIMS_KINDS)
@PROPERTY
@given(data=st.data())
def test_a_claims_draft_changing_one_digit_or_letter_is_always_flagged(kind, data):
    case, draft, spot = data.draw(changed_cases(claims_cases(kind), kind))
    found = verdict(case, "claims", draft)
    assert spot.fact.check in {v.kind for v in found.violations}, report(case.chunk.text, draft, found)
