"""A word put in another's place: the statement repeats a source sentence's frame around it.

"für jeden angefangenen Kalendermonat" against "für jeden vollen Kalendermonat",
"Der Kinderfreibetrag beträgt" against "Der Grundfreibetrag beträgt": the words on
both sides are the source's, the word between them is not, and the source's word
between them is not in the statement. A change in one slot of an otherwise repeated
frame changes what the sentence commits to (a condition, a scope, an actor); such a
word is often stated nowhere in the blocks, so no check of "words found elsewhere"
sees it. A paraphrase rewords too, mostly its verbs and adverbs ("liegt" for
"beträgt", "oft" for "häufig"), so only two kinds of slot count (`_commits`): a
modifier of the same noun, and a German compound with another first part. An alternative
put into such a frame ("private car or motorbike") counts as well.

Same language only: across languages no frame is repeated word for word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from dataclasses import dataclass
from functools import lru_cache

from bot.answer.verify.support import content_terms, match_term

# A run of this many new words at most is one slot; a longer one is a rewording.
MAX_SLOT = 2
# The words on either side of the slot that must repeat the source's: the next one on each
# side, and this many in all, one of them a content word.
MIN_FRAME = 3

_TOKEN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*|[.,;:!?()]")
_ARTICLES = frozenset({"der", "die", "das", "des", "dem", "den", "ein", "eine", "einer", "eines", "einem", "einen",
                       "the", "a", "an"})
_BOUNDARY = "|"


@dataclass(frozen=True)
class _Token:
    text: str  # casefolded; punctuation and the sentence's ends are _BOUNDARY
    terms: tuple[str, ...]  # its content words (none for a stopword)
    capital: bool = False  # written with a capital (a German noun)


@lru_cache(maxsize=8192)
def _tokens(text: str, language: str) -> tuple[_Token, ...]:
    # Cached: every statement aligned to a sentence reads the same tokens of it.
    out = [_Token(_BOUNDARY, ())]
    for m in _TOKEN.finditer(text):
        word = m.group(0).casefold()
        if not word[0].isalnum():
            out.append(_Token(_BOUNDARY, ()))
        else:
            out.append(_Token(word, tuple(content_terms(word, language)), m.group(0)[0].isupper()))
    out.append(_Token(_BOUNDARY, ()))
    return tuple(out)


def _same(a: _Token, b: _Token, language: str) -> bool:
    if a.text == b.text or (a.text in _ARTICLES and b.text in _ARTICLES):
        return True
    return bool(a.terms and b.terms and all(match_term(t, set(b.terms), language) for t in a.terms))


def _new(token: _Token, terms: set[str], language: str) -> bool:
    """A content word the other side does not hold (numbers are compared by value elsewhere)."""
    return bool(token.terms) and not any(ch.isdigit() for ch in token.text) and \
        not any(match_term(t, terms, language) for t in token.terms)


def _frame(said: Sequence[_Token], start: int, end: int, source: Sequence[_Token], j: int, k: int, language: str) -> bool:
    """Do the words around said[start:end] repeat those around source[j+1:k], the next ones
    on both sides and MIN_FRAME in all, one of them a content word?"""
    matched, content = 0, False
    for step in range(MIN_FRAME):
        a, b = start - 1 - step, j - step
        if a < 0 or b < 0 or not _same(said[a], source[b], language):
            if step == 0:
                return False
            break
        matched, content = matched + 1, content or bool(said[a].terms)
    for step in range(MIN_FRAME):
        a, b = end + step, k + step
        if a >= len(said) or b >= len(source) or not _same(said[a], source[b], language):
            if step == 0:
                return False
            break
        matched, content = matched + 1, content or bool(said[a].terms)
    return matched >= MIN_FRAME and content


# The shortest head two compounds share when one of their other parts is changed
# ("Kinderfreibetrag" for "Grundfreibetrag").
MIN_HEAD = 4


def _changed_part(a: str, b: str) -> bool:
    """Two compounds with the same head and another first part, neither holding the other."""
    if a in b or b in a:
        return False  # "Satz" in "Leistungssatz": the same thing, named shorter
    head = 0
    while head < min(len(a), len(b)) and a[-1 - head] == b[-1 - head]:
        head += 1
    first_a, first_b = a[: len(a) - head], b[: len(b) - head]
    if first_a.startswith(first_b) or first_b.startswith(first_a):
        return False  # "Bruttoentgelt" for "Bruttoarbeitsentgelt": a part left out
    return head >= MIN_HEAD


def _commits(slot: Sequence[_Token], stated: Sequence[_Token], after: _Token, after_stated: _Token, language: str,
             elsewhere: Set[str]) -> bool:
    """Is the slot one that changes what the sentence commits to: a modifier of the same noun
    ("jeden angefangenen Kalendermonat", "each started month"), or a compound with another first
    part ("Kinderfreibetrag", "Grundfreibetrag")? A verb or adverb said otherwise ("liegt" for
    "beträgt", "oft" for "häufig") is how a paraphrase rewords."""
    if len(slot) != 1 or len(stated) != 1:
        return False
    said, source = slot[0], stated[0]
    if language == "de" and _changed_part(said.text, source.text):
        # (German writes compounds as one word; English shares endings, "deficiency" / "insufficiency")
        return True  # even when the block names it elsewhere: that is where a swapped name comes from
    if not after.terms or not after_stated.terms:
        return False  # the next word is the noun modified
    if any(match_term(t, elsewhere, language) for t in said.terms):
        return False  # the blocks use the word too ("regelmäßigen Bruttoarbeitsentgelts"): aligned elsewhere
    if said.capital or source.capital:
        return False  # a name ("Munich holiday", "Boxing Day"), or in German a noun, not its modifier
    return language != "de" or (after.capital and after_stated.capital)


_OR = frozenset({"or", "oder", "bzw"})


def _added_alternative(said: Sequence[_Token], start: int, end: int, source: Sequence[_Token], language: str,
                       elsewhere: Set[str]) -> str | None:
    """ "or motorbike" in "your private car or motorbike for" against "your private car for": an
    alternative put into a frame the statement repeats widens what the rule covers."""
    if start < 2 or said[start - 1].text not in _OR:
        return None
    if any(match_term(t, elsewhere, language) for tok in said[start:end] for t in tok.terms):
        return None  # the blocks name it: a statement that joins two of their rules
    for j in range(len(source) - 1):
        if _frame(said, start - 1, end, source, j, j + 1, language):
            return " ".join(t.text for t in said[start - 1:end])
    return None


def swapped_words(text: str, sentences: Sequence[str], language: str, elsewhere: Set[str] = frozenset()
                  ) -> tuple[str, str, str] | None:
    """(the statement's word, the source's word, the source sentence) of a slot the statement
    changed in a frame it repeats, or None; `elsewhere`: the words of the cited blocks."""
    said = _tokens(text, language)
    said_terms = {t for tok in said for t in tok.terms}
    for sentence in sentences:
        source = _tokens(sentence, language)
        source_terms = {t for tok in source for t in tok.terms}
        unsaid = [_new(tok, said_terms, language) for tok in source]  # the source's words the statement lacks
        i = 0
        while i < len(said):
            if not _new(said[i], source_terms, language):
                i += 1
                continue
            end = i
            while end < len(said) and _new(said[end], source_terms, language):
                end += 1
            if end - i <= MAX_SLOT and (added := _added_alternative(said, i, end, source, language, elsewhere)):
                return added, "", sentence
            if end - i <= MAX_SLOT:
                for j in range(len(source)):
                    for k in range(j + 2, min(j + 2 + MAX_SLOT, len(source))):
                        between = source[j + 1:k]
                        if any(unsaid[j + 1:k]) and \
                                _frame(said, i, end, source, j, k, language) and \
                                _commits(said[i:end], between, said[end], source[k], language, elsewhere):
                            return (" ".join(t.text for t in said[i:end]), " ".join(t.text for t in between), sentence)
            i = end
    return None
