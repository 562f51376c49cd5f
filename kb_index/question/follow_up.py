"""Thread follow-ups: the text to retrieve with for a question that leans on an earlier one.

"und bei Teilzeit?" or "Can I carry them over?" mean nothing alone; in a
thread they are retrieved together with the previous question. Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb_index.question.chatter import strip_chatter, strip_phrases
from kb_index.question.markup import strip_markup
from kb_index.question.words import TOKEN, WORD_END, alternation, content_words, has_letters

# How much of the previous question a follow-up may carry along.
HISTORY_CHARS = 300

# Openings that lean on an earlier question: "what about interns?", "und bei
# Teilzeit?". Such a clause is not split off, and in a thread it is retrieved
# together with the previous question.
_ELLIPTICAL_OPENINGS = (
    "what about", "how about", "what if", "and if", "and for", "same for",
    "same goes for", "also for", "even for", "what's with", "was ist mit",
    "was ist bei", "wie ist es mit", "wie ist es bei", "wie sieht es mit",
    "wie sieht es bei", "wie sieht es aus", "was wenn", "und wenn", "und bei",
    "und für", "gilt das", "gilt dies", "auch für", "auch bei",
)
ELLIPTICAL_START = re.compile("^" + alternation(_ELLIPTICAL_OPENINGS) + WORD_END, re.I)
_FOLLOW_UP_START = re.compile(
    "^" + alternation(_ELLIPTICAL_OPENINGS, ("and", "und", "or", "oder", "but", "aber", "for", "bei", "für"))
    + WORD_END,
    re.I,
)
# Pronouns that point back at an earlier question. German "das"/"dies(e)" only
# when no capitalised noun follows: "ist das bezahlt?" points back, "ist das
# Weihnachtsgeld ..." doesn't.
_ANAPHORA = frozenset("it that this them they those these dafür davon dazu darauf daran dabei".split())
_DEMONSTRATIVES = frozenset("das dies diese dieses".split())
# Content words a thread follow-up may have, by kind of hint (see _is_follow_up).
_SHORT_MAX, _ANAPHORA_MAX, _FOLLOW_UP_MAX = 1, 2, 3


def has_anaphora(text: str) -> bool:
    tokens = TOKEN.findall(text)
    for i, token in enumerate(tokens):
        word = token.lower()
        if word in _ANAPHORA:
            return True
        if word in _DEMONSTRATIVES and (i + 1 == len(tokens) or not tokens[i + 1][0].isupper()):
            return True
    return False


def _is_follow_up(question: str) -> bool:
    """Short or elliptical: it needs the previous question to mean anything.

    At most one content word ("und bei Teilzeit?", "what if I'm sick?"); or a
    follow-up opening ("what about", "and for", "was ist mit") with at most
    three; or a pronoun pointing back ("Can I carry them over?") with at most two.
    """
    n = len(content_words(question))
    if n <= _SHORT_MAX:
        return True
    if _FOLLOW_UP_START.match(question) and n <= _FOLLOW_UP_MAX:
        return True
    return n <= _ANAPHORA_MAX and has_anaphora(question)


def _clip(text: str, limit: int = HISTORY_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut.rsplit(None, 1)[0] if " " in cut else cut


def retrieval_text(question: str, history: Iterable[str] = ()) -> str:
    """What to retrieve with for `question`, asked after `history` (oldest first)."""
    current = strip_chatter(question)
    if not has_letters(strip_phrases(strip_markup(question))) or not _is_follow_up(current):
        return current
    for earlier in reversed(list(history)):
        previous = strip_phrases(strip_markup(earlier))
        if has_letters(previous):
            return f"{_clip(previous)} {current}"
    return current
