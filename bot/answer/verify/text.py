"""Plain-text helpers the verifiers share: reasoning blocks, quotes, refusals, a block's text.
Sentences come from kb_index.sentences, the one splitter."""

from __future__ import annotations

import re
import string
import unicodedata

from bot.i18n import Key, all_translations
from bot.models import Evidence
from kb_index.sentences import QUOTED

# Tags as models really write them: any case, spaces inside the brackets, attributes
# ("<think effort='high'>"). The name must end there: "<thinker>" is not a reasoning tag.
_NAME = r"(think|thinking|reasoning)(?![\w-])"
_OPEN_TAG = rf"<\s*{_NAME}[^<>]*?(?<!/)>"
_THINK_EMPTY = re.compile(rf"<\s*{_NAME}[^<>]*/\s*>", re.I)
_THINK_CLOSED = re.compile(rf"{_OPEN_TAG}.*?<\s*/\s*\1\s*>", re.S | re.I)
_THINK_CLOSE = re.compile(rf"<\s*/\s*{_NAME}\s*>", re.I)
_THINK_OPEN = re.compile(_OPEN_TAG, re.I)


def strip_think(text: str) -> str:
    """Remove reasoning blocks before anything is checked or shown. Besides a closed block: a lone
    closing tag (a chat template put the opening one into the prompt) and an opening tag that never
    closes (the model ran out of tokens while reasoning: there is no answer)."""
    text = _THINK_EMPTY.sub("", text)
    text = _THINK_CLOSED.sub("", text)
    close = _THINK_CLOSE.search(text)
    if close and not _THINK_OPEN.search(text, 0, close.start()):
        text = text[close.end() :]
    if opened := _THINK_OPEN.search(text):
        text = text[: opened.start()]
    return text.strip()


def evidence_text(ev: Evidence) -> str:
    """A block as the model saw it. The header counts (an answer may repeat its Stand); it is a paragraph of its
    own, so that the Stand does not run into a phone number on the text's first line."""
    c = ev.chunk
    return " ".join(filter(None, [c.title, c.section, c.stand or "", *c.legal_bases])) + "\n\n" + c.text


DOUBLE_QUOTE_CHARS = "\"“”„‟«»"


def quoted_passages(text: str) -> list[str]:
    """The inner text of each double-quoted passage, in order."""
    return [next(g for g in m.groups() if g is not None).strip() for m in QUOTED.finditer(text)]


def squash(text: str) -> str:
    """Whitespace runs to one space, typographic apostrophes and dashes to plain ones: a model
    that copies a passage "verbatim" still re-flows lines and types ' for ’."""
    text = text.replace("’", "'").replace("‘", "'").replace("–", "-").replace("—", "-")
    text = text.replace("\u00a0", " ").replace("\u202f", " ")
    return " ".join(text.split())


# As a text reads: a hard-wrapped line ("+49 421\n555 0199") is one, a list item or a paragraph is not; Markdown
# emphasis around words ("_0:01_", "**1.000 €**") is no part of them, unlike "_" inside one ("pto_2026").
_WRAP = re.compile(r"[ \t]*\n[ \t]*(?!\n|[-*+] |1[.)] )")
_EMPHASIS = re.compile(r"(?<![^\s(\[„“\"'«»])[*_]+(?=[^\s*_])|(?<=[^\s*_])[*_]+(?=[.,;:!?)\]“”\"'«»]*(?:\s|$))")


def as_read(text: str, fill: str = " ") -> str:
    """`text` as a reader sees it: wrapped lines joined, each character of an emphasis marker made `fill`."""
    return _EMPHASIS.sub(lambda m: fill * len(m.group()), _WRAP.sub(" ", text))


_ELLIPSIS = re.compile(r"\s*(?:\[\s*(?:\.\.\.|…)\s*\]|\(\s*(?:\.\.\.|…)\s*\)|\.\.\.|…)\s*")


def quote_in(passage: str, source: str) -> bool:
    """Is `passage` verbatim in `source`? An ellipsis in the quote stands for an omission:
    each fragment must then appear, in order."""
    haystack, position = squash(as_read(source, "")), 0
    fragments = [f for f in (squash(as_read(p, "")) for p in _ELLIPSIS.split(passage)) if f]
    for fragment in fragments:
        position = haystack.find(fragment, position)
        if position < 0:
            return False
        position += len(fragment)
    return bool(fragments)


_PUNCT = str.maketrans({ch: " " for ch in string.punctuation + "„“”‚‘’«»…–—"})


def fold(text: str) -> str:
    """Lower case, no accents, no punctuation, single spaces: for phrase comparison."""
    text = unicodedata.normalize("NFKD", text.replace("ß", "ss").replace("’", "'").casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(text.replace("n't", " not").translate(_PUNCT).split())


_REFUSAL_PHRASES = tuple(fold(p) for p in all_translations(Key.REFUSAL))


# Words a refusal may come with and still be nothing but a refusal: a lead-in ("I'm sorry, but").
# Anything longer says something else, and that has to be checked like any answer.
MAX_REFUSAL_LEAD_IN_WORDS = 5


def is_refusal(text: str) -> bool:
    """Is the text the refusal sentence (any language, punctuation or case) and nothing else, a short
    lead-in aside? A refusal followed by a statement is an answer, whose statement must be checked."""
    folded = f" {fold(text)} "
    rest = folded
    for phrase in _REFUSAL_PHRASES:
        rest = rest.replace(f" {phrase} ", " ")
    if rest == folded:
        return False
    return len(rest.split()) <= MAX_REFUSAL_LEAD_IN_WORDS and not any(ch.isdigit() for ch in rest)
