"""Plain-text helpers the verifiers share: reasoning blocks, sentences, quotes, refusals.

Pure functions over strings. The sentence splitter is tuned for what models
write in answers and what KB entries say (German ordinals and dates, legal
abbreviations, citations after the full stop), not for general prose.
"""

from __future__ import annotations

import re
import string
import unicodedata

from bot.i18n import Key, all_translations
from kb_index.analysis import stop_words

# --------------------------------------------------------------------- reasoning

# Tags as models really write them: any case, spaces inside the brackets,
# attributes ("<think effort='high'>"). The name must end there: "<thinker>"
# is not a reasoning tag.
_NAME = r"(think|thinking|reasoning)(?![\w-])"
_OPEN_TAG = rf"<\s*{_NAME}[^<>]*?(?<!/)>"
_THINK_EMPTY = re.compile(rf"<\s*{_NAME}[^<>]*/\s*>", re.I)
_THINK_CLOSED = re.compile(rf"{_OPEN_TAG}.*?<\s*/\s*\1\s*>", re.S | re.I)
_THINK_CLOSE = re.compile(rf"<\s*/\s*{_NAME}\s*>", re.I)
_THINK_OPEN = re.compile(_OPEN_TAG, re.I)


def strip_think(text: str) -> str:
    """Remove reasoning blocks before anything is checked or shown.

    Three shapes occur: a closed block; a lone closing tag (chat templates that
    put the opening tag into the prompt, so the output starts mid-reasoning);
    and an opening tag that never closes (the model ran out of tokens while
    reasoning: everything after it is reasoning, there is no answer).
    """
    text = _THINK_EMPTY.sub("", text)
    text = _THINK_CLOSED.sub("", text)
    close = _THINK_CLOSE.search(text)
    if close and not _THINK_OPEN.search(text, 0, close.start()):
        text = text[close.end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


# --------------------------------------------------------------------- quotes

# Double-quoted passages: straight, English curly, German „…“ (closing with “ or ”),
# and guillemets both ways. Single quotes are left alone: they are apostrophes too.
QUOTED = re.compile(
    r"„(?P<de>[^“”\"\n]+)[“”]"
    r"|“(?P<en>[^“”\n]+)[”“]"
    r"|\"(?P<plain>[^\"\n]+)\""
    r"|»(?P<gr>[^«»\n]+)«"
    r"|«(?P<gl>[^«»\n]+)»"
)

DOUBLE_QUOTE_CHARS = "\"“”„‟«»"


def quoted_passages(text: str) -> list[str]:
    """The inner text of each double-quoted passage, in order."""
    return [next(g for g in m.groups() if g is not None).strip() for m in QUOTED.finditer(text)]


def squash(text: str) -> str:
    """Whitespace runs to one space, typographic apostrophes and dashes to plain ones:
    a model that copies a passage "verbatim" still re-flows lines and types ' for ’."""
    text = text.replace("’", "'").replace("‘", "'").replace("–", "-").replace("—", "-")
    text = text.replace("\u00a0", " ").replace("\u202f", " ")
    return " ".join(text.split())


_ELLIPSIS = re.compile(r"\s*(?:\[\s*(?:\.\.\.|…)\s*\]|\(\s*(?:\.\.\.|…)\s*\)|\.\.\.|…)\s*")


def quote_in(passage: str, source: str) -> bool:
    """Is `passage` verbatim in `source`? An ellipsis in the quote stands for an omission:
    each fragment must then appear, in order."""
    haystack = squash(source)
    position = 0
    fragments = [f for f in (squash(p) for p in _ELLIPSIS.split(passage)) if f]
    if not fragments:
        return False
    for fragment in fragments:
        found = haystack.find(fragment, position)
        if found < 0:
            return False
        position = found + len(fragment)
    return True


# --------------------------------------------------------------------- sentences

# The one sentence splitter of the project: the verifiers split answers and
# the blocks they cite with it, and the extractive backend splits KB text with
# it, so a sentence the backend quotes is a sentence the verifiers see.

# Words after which a full stop does not end a sentence. Single letters
# ("z. B.", initials) and dotted forms ("z.B.", "i.V.m.") are handled by rule.
_ABBREVIATIONS = frozenset(
    """
    abs abschn anm art bspw bzgl bzw ca dr etc evtl ff fr gem ggf ggü hr inkl jh lit lt max
    min mind mio mrd nr prof sog str tel tsd usw vgl ziff zzgl
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


def _split_line(line: str, language: str) -> list[str]:
    quotes = _quote_spans(line)
    pieces, start = [], 0
    for match in _END.finditer(line):
        end = match.end()
        if any(a < end < b for a, b in quotes):
            continue  # a full stop inside a quotation does not end the sentence around it
        if not _NEXT_STARTS_SENTENCE.match(line, end):
            continue
        if match.group(0)[0] == "." and _continues(line[start : match.start()], line[end:], language):
            continue
        pieces.append(line[start:end].strip())
        start = end
    pieces.append(line[start:].strip())
    return [p for p in pieces if p]


def sentences(text: str, language: str = "en") -> list[str]:
    """Sentences of a paragraph, each a substring of `text`, stripped. A line break
    ends a sentence too (list items)."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(_split_line(line, language))
    return out


# --------------------------------------------------------------------- refusals

_PUNCT = str.maketrans({ch: " " for ch in string.punctuation + "„“”‚‘’«»…–—"})


def fold(text: str) -> str:
    """Lower case, no accents, no punctuation, single spaces: for phrase comparison."""
    text = unicodedata.normalize("NFKD", text.replace("ß", "ss").replace("’", "'").casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = text.replace("n't", " not")
    return " ".join(text.translate(_PUNCT).split())


_REFUSAL_PHRASES = tuple(fold(p) for p in all_translations(Key.REFUSAL))


def contains_refusal(text: str) -> bool:
    """Does the text say the refusal sentence (any language, any punctuation or case),
    alone or inside a longer reply ("Zu dieser Frage: Dazu enthält ...")?"""
    folded = f" {fold(text)} "
    return any(f" {phrase} " in folded for phrase in _REFUSAL_PHRASES)


# Words a refusal may come with and still be nothing but a refusal: a lead-in
# ("Zu dieser Frage:", "I'm sorry, but"). Anything longer says something else,
# and that has to be checked like any answer.
MAX_REFUSAL_LEAD_IN_WORDS = 5


def is_refusal(text: str) -> bool:
    """Is the text the refusal sentence and nothing else (a short lead-in aside)?

    "The knowledge base does not cover this question. However, you get 30 days
    [hb-pto-01]." contains the refusal but is an answer: its statement must be
    verified, not waved through with the refusal.
    """
    folded = f" {fold(text)} "
    rest = folded
    for phrase in _REFUSAL_PHRASES:
        rest = rest.replace(f" {phrase} ", " ")
    if rest == folded:
        return False
    words = rest.split()
    return len(words) <= MAX_REFUSAL_LEAD_IN_WORDS and not any(ch.isdigit() for ch in rest)
