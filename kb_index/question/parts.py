"""A message that asks two things, split into its questions: each is retrieved on its own.

Stdlib only, no I/O; the message is already chatter-stripped
(kb_index.question.chatter).
"""

from __future__ import annotations

import re

from kb_index.question.follow_up import ELLIPTICAL_START, has_anaphora
from kb_index.question.words import (
    CLAUSE_START,
    QUESTION_START,
    WH,
    WORD_END,
    alternation,
    chat_sentences,
    collapse,
    content_words,
)

MAX_PARTS = 4
# Content words a split-off part needs (one suffices for a complete question).
MIN_CONTENT_WORDS = 2

# Connectives that start a further question; dropped from a part's start.
_LEADING_CONNECTIVES = re.compile(
    "^(?:"
    + alternation(
        (
            "and also", "and", "also", "plus", "additionally", "oh and", "but", "or",
            "und außerdem", "und ausserdem", "und", "außerdem", "ausserdem", "zudem",
            "sowie", "oder", "aber",
        )
    )
    + WORD_END
    + r"[\s,:]*)+",
    re.I,
)
_TRAILING_CONNECTIVES = re.compile(
    r"(?:[\s,;:]+(?:and|und|or|oder|also|sowie|but|aber))*[\s,;:]*$", re.I
)
# Where one clause may end and another begin, most explicit first.
_CLAUSE_BREAK = re.compile(
    r"(?P<explicit>(?:,\s*|\s+)(?:and|und)\s+(?:also|außerdem|ausserdem|zudem|additionally)\b,?"
    r"|[,;]\s*(?:also|plus|additionally|außerdem|ausserdem|zudem)\b,?)"
    r"|(?P<and>,?\s+(?:and|und|sowie|as\s+well\s+as)\b)"
    r"|(?P<or>,?\s+(?:or|oder)\b)"
    r"|(?P<comma>[,;])(?=\s)",
    re.I,
)
_STARTS_CLAUSE = re.compile(CLAUSE_START, re.I)
_STARTS_QUESTION = re.compile(QUESTION_START, re.I)
_STARTS_WH = re.compile(WH, re.I)
# A question after a short lead-in: "As a part-timer, how ...", "Bei Teilzeit: wie ...".
_INNER_QUESTION = re.compile(r"[,:;]\s*" + QUESTION_START, re.I)
_LEAD_IN_QUESTION = re.compile(r"[^,:;?]{1,40}[,:]\s*" + QUESTION_START, re.I)


def _stands_alone(clause: str) -> bool:
    """Enough of a question to be retrieved on its own.

    Two content words; or one, in a complete question that doesn't lean on
    another: starts with a question word, no "what about ...", no pronoun
    pointing back ("Was ist die Kilometerpauschale?" yes, "is it paid?" no).
    """
    n = len(content_words(clause))
    if n != 1:
        return n >= MIN_CONTENT_WORDS
    clause = _LEADING_CONNECTIVES.sub("", clause.strip())
    return bool(
        _STARTS_QUESTION.match(clause)
        and not ELLIPTICAL_START.match(clause)
        and not has_anaphora(clause)
    )


def _looks_like_question(clause: str) -> bool:
    clause = _LEADING_CONNECTIVES.sub("", clause.strip())
    return bool(_STARTS_CLAUSE.match(clause) or _INNER_QUESTION.search(clause))


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or _looks_like_question(sentence)


def _split_here(left: str, right: str, kind: str) -> bool:
    """Whether a clause break between `left` and `right` separates two questions."""
    if kind == "and" and left.rstrip().endswith("-"):  # "Teilzeit- und Vollzeitkräfte"
        return False
    if not (_looks_like_question(left) and _stands_alone(left) and _stands_alone(right)):
        return False
    right = right.lstrip(" ,")
    if kind == "explicit":
        return True
    if kind == "or":  # "... or do I need to come in?" is one question
        return bool(_STARTS_WH.match(right))
    if _STARTS_QUESTION.match(right):
        return True
    n = min(len(content_words(left)), len(content_words(right)))
    return kind == "and" and n >= 3 and bool(_LEAD_IN_QUESTION.match(right))


def _split_clauses(sentence: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _CLAUSE_BREAK.finditer(sentence):
        if m.start() <= start:
            continue
        left, right = sentence[start : m.start()], sentence[m.end() :]
        if _split_here(left, right, m.lastgroup or ""):
            pieces.append(left)
            start = m.end()
    pieces.append(sentence[start:])
    if sentence.rstrip().endswith("?"):
        pieces = [p if p.rstrip()[-1:] in "?.!" else p.rstrip(" ,;:") + "?" for p in pieces]
    return pieces


def _clean_part(part: str) -> str:
    part = _LEADING_CONNECTIVES.sub("", part.strip())
    end = part[-1:] if part[-1:] in "?.!" else ""
    body = _TRAILING_CONNECTIVES.sub("", part[: len(part) - len(end)])
    return collapse(body + end)


def _merge_small(parts: list[str]) -> list[str]:
    """Parts with too few content words join their neighbour."""
    out: list[str] = []
    for part in parts:
        if out and not _stands_alone(part):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    if len(out) > 1 and not _stands_alone(out[0]):
        out[:2] = [f"{out[0]} {out[1]}"]
    return out


def split_question(text: str) -> list[str]:
    """The separate questions of a (chatter-stripped) message; [text] for one."""
    parts: list[str] = []
    context: list[str] = []
    for sentence in chat_sentences(text):
        if not _is_question(sentence):
            context.append(sentence)
            continue
        pieces = _split_clauses(sentence)
        if context:
            pieces[0] = " ".join((*context, pieces[0]))
            context = []
        parts.extend(pieces)
    if not parts:
        return [text]
    if context:
        parts[-1] = " ".join((parts[-1], *context))
    parts = _merge_small(parts)
    if len(parts) > MAX_PARTS:
        parts[MAX_PARTS - 1 :] = [" ".join(parts[MAX_PARTS - 1 :])]
    if len(parts) == 1:
        return [text]
    return [_clean_part(p) for p in parts]
