"""The one sentence splitter of the project.

The verifiers split answers and the blocks they cite with it, the extractive
backend splits KB text with it (so a sentence the backend quotes is a sentence
the verifiers see), and a question is split into its sentences with it before
its parts are found (kb_index.question.parts). Here, in kb_index, because both
kb_index and bot use it and kb_index never imports bot.

Tuned for what KB entries say and models write (German ordinals and dates,
legal abbreviations, citations after the full stop), not for general prose.
Pure functions over strings.
"""

from __future__ import annotations

import re

from kb_index.analysis import stop_words

# Double-quoted passages: straight, English curly, German „…“ (closing with “ or ”),
# and guillemets both ways. Single quotes are left alone: they are apostrophes too.
QUOTED = re.compile(
    r"„(?P<de>[^“”\"\n]+)[“”]"
    r"|“(?P<en>[^“”\n]+)[”“]"
    r"|\"(?P<plain>[^\"\n]+)\""
    r"|»(?P<gr>[^«»\n]+)«"
    r"|«(?P<gl>[^«»\n]+)»"
)


# Words after which a full stop does not end a sentence. Single letters
# ("z. B.", initials) and dotted forms ("z.B.", "i.V.m.") are handled by rule.
_ABBREVIATIONS = frozenset(
    """
    abs abschn anm art bspw bzgl bzw ca dr etc evtl ff fr gem ggf ggü hr inkl jh lit lt max
    min mind mio mrd mtl nr prof sog std stk str tel tsd usw vgl ziff zzgl
    al approx cf co corp dept eq est fig inc jr ltd mr mrs ms no nos pp resp sec sr st vs
    """.split()
)
_MONTHS = frozenset(
    """
    januar februar märz maerz april mai juni juli august september oktober november dezember
    jan feb mär apr jun jul aug sep sept okt nov dez
    january february march may june july october december mar oct dec
    """.split()
)

# A candidate end: terminal punctuation, closing quotes/brackets, and citation
# brackets the model put after the full stop ("... 55 Jahre. [lb-atz-01]").
_END = re.compile(r"[.!?…]+[\"'”“»«)]*(?:[ \t]*\[[^\[\]\n]{1,200}\])*(?=\s)")
_NEXT_STARTS_SENTENCE = re.compile(r"\s+(?=[A-ZÄÖÜ0-9\"„“«»(\[*•\-])")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_DOTTED = re.compile(r"[^\W\d_](?:\.[^\W\d_])+")  # z.B, e.g, d.h, i.V.m
_NUMBER = re.compile(r"\d+(?:\.\d+)*")  # 30, 31.03 (a date before its final stop)
_FIRST_WORD = re.compile(r"\s*(\w+)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n+")


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH.split(text.strip()) if p.strip()]


# Words that open a German sentence but never follow an ordinal: after "30."
# they show the number ended the sentence ("Die Frist beträgt 30. Sie beginnt ...").
# Function words (the analyzer's stop words) are added below: capitalised, they
# start a sentence, while an ordinal is followed by a noun ("18. Lebensjahr").
_DE_SENTENCE_OPENERS = frozenset(
    {
        "der", "die", "das", "den", "dem", "des", "ein", "eine", "er", "sie", "es", "wir", "ihr",
        "ich", "du", "man", "dies", "diese", "dieser", "dieses", "danach", "dann", "damit", "dabei",
        "außerdem", "ausserdem", "zudem", "auch", "aber", "wenn", "falls", "bei", "für", "im", "in",
        "nach", "vor", "seit", "ab", "bis", "zum", "zur", "hierfür", "dafür", "deshalb", "daher",
    }
    | stop_words("de")
)

# Days, months and ages, the numbers German writes as ordinals, have at most
# two digits; a sentence that ends in a year or an amount has more.
_MAX_ORDINAL_DIGITS = 2


def _is_abbreviation(word: str) -> bool:
    if (len(word) == 1 and word.isalpha()) or _DOTTED.fullmatch(word):
        return True
    # An acronym ("für HR.") is a word of its own, not "Hr." or "Nr.".
    return not word.isupper() and word.lower() in _ABBREVIATIONS


def _is_ordinal_or_date(number: str, tail: str, language: str) -> bool:
    """ "1. Januar", "18. Lebensjahr", "bis 31.03. des Jahres": a number, not an end."""
    if not _NUMBER.fullmatch(number):
        return False
    following = _FIRST_WORD.match(tail)
    next_word = following.group(1).lower() if following else ""
    if next_word in _MONTHS:
        return True
    if language != "de" or len(number.rsplit(".", 1)[-1]) > _MAX_ORDINAL_DIGITS:
        return False
    return next_word not in _DE_SENTENCE_OPENERS


def _continues(head: str, tail: str, language: str) -> bool:
    """Does the full stop at the end of `head` belong to a word, so the sentence goes on?"""
    match = _WORD_BEFORE.search(head)
    if not match:
        return False
    word = match.group(1).rstrip(".")
    return _is_abbreviation(word) or _is_ordinal_or_date(word, tail, language)


def _quote_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in QUOTED.finditer(text)]


def _split_line(line: str, language: str, any_case: bool) -> list[str]:
    quotes = _quote_spans(line)
    pieces, start = [], 0
    for match in _END.finditer(line):
        end = match.end()
        if any(a < end < b for a, b in quotes):
            continue  # a full stop inside a quotation does not end the sentence around it
        if not any_case and not _NEXT_STARTS_SENTENCE.match(line, end):
            continue
        if match.group(0)[0] == "." and _continues(line[start : match.start()], line[end:], language):
            continue
        pieces.append(line[start:end].strip())
        start = end
    pieces.append(line[start:].strip())
    return [p for p in pieces if p]


def sentences(text: str, language: str = "en", *, any_case: bool = False) -> list[str]:
    """Sentences of a paragraph, each a substring of `text`, stripped. A line break
    ends a sentence too (list items).

    A sentence starts with a capital, a digit, a quote or a bullet: in KB text and
    answers a lower-case word after a full stop is an abbreviation the list lacks.
    `any_case`: for what people type in chat ("ok. how many days?"), where the
    next sentence may start in lower case.
    """
    out: list[str] = []
    for line in text.splitlines():
        out.extend(_split_line(line, language, any_case))
    return out
