"""Align an answer's statement to the one to three sentences of its cited blocks that state it.

Checking a statement against "anything anywhere in the block" passes a wrong
one whose words all occur in the block, just not together: "bei der
Elterngeldstelle" for "beim Arbeitgeber" when the block names the
Elterngeldstelle two sentences later; "6 Wochen" for "vier Wochen" when a 6
stands elsewhere. So each statement is first aligned to the sentences that
state it, and numbers, bounds, negation and words are then checked against
those (statement.py).

How: every sentence of the cited blocks (their paragraphs, list items and
table rows, kb_index.markdown, split into sentences; the block's title and
section count as sentences too) is scored against the statement
- by words: the weighted share of the statement's content words it holds
  (support.py's matching: stems, German compound parts), in the same language;
- by meaning: the cosine of the two sentences in the multilingual embedder,
  where one is configured, so a German statement aligns to an English sentence.
The best sentence comes first; a second and third join only when each adds
words of the statement the others lack (a statement that joins two sentences),
or, across languages, when they are about as close in meaning as the best.

Pure given its `embed` function; vectors are cached per text, so the blocks
of a KB are embedded once per process, not once per answer.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from bot.answer.verify.numbers import NUMBER_WORD_TERMS, find_numbers
from bot.answer.verify.support import Weigher, content_terms, match_term
from kb_index import markdown
from kb_index.analysis import guess_language
from kb_index.sentences import sentences

MAX_ALIGNED = 3

# A further sentence joins the alignment only when it adds at least this share
# of the statement's word weight, and at least MIN_ADDED_TERMS words, that the
# sentences before it lack: two sentences a statement joins each hold a part of
# it; a sentence that adds one word ("Elterngeldstelle") is where a wrong word
# was taken from, not a second source.
MIN_ADDED_SHARE = 0.15
MIN_ADDED_TERMS = 2

# Across languages (no shared words): sentences within this cosine of the best one
# join it, up to MAX_ALIGNED.
CROSS_LANGUAGE_JOIN = 0.015
CROSS_LANGUAGE_NEAR = 0.05
CROSS_LANGUAGE_NUMBER_BONUS = 0.05

# Sentence vectors kept per process (384 float32 each: 1.5 KB).
CACHE_SIZE = 20_000

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class SourceSentence:
    text: str
    language: str
    terms: frozenset[str]
    header: bool = False  # the block's title or section, not its text
    values: frozenset[str] = frozenset()  # the readings of its numbers (numbers.py)


@dataclass(frozen=True)
class Passage:
    """One cited block as the verifiers see it."""

    text: str
    language: str
    title: str = ""
    section: str = ""
    header_extra: tuple[str, ...] = ()  # Stand, legal bases: what the header shows besides


@dataclass(frozen=True)
class Alignment:
    sentences: tuple[SourceSentence, ...]
    coverage: float  # weighted share of the statement's words the aligned sentences hold (same language)
    cosine: float | None  # the best sentence's cosine (across languages, with an embedder), else None
    cross_language: bool
    missing: tuple[str, ...] = ()  # statement words the aligned sentences lack
    # Across languages: further sentences nearly as close in meaning as the aligned ones; a
    # negation or bound that backs the statement may stand there.
    near: tuple[SourceSentence, ...] = ()

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.sentences]


def _sentence(text: str, language: str, header: bool = False) -> SourceSentence:
    values = frozenset(v for n in find_numbers(text, language, source=True) for v in n.values)
    return SourceSentence(text, language, frozenset(word_terms(text, language)), header, values)


def passage_language(p: Passage) -> str:
    """The block's language as its words show it: an entry labelled by the KB's default
    language (CITEBOT_LANGUAGE) may be written in the other one, and the checks read a
    sentence by the words of its own language."""
    guess = guess_language(p.text, default=p.language)
    if guess == p.language:
        return guess
    plain = guess_language(p.text, default="")  # no default: unclear stays with the label
    return plain or p.language


def source_sentences(passages: Sequence[Passage]) -> list[SourceSentence]:
    return [s for p in passages for s in _passage_sentences(p)]


@lru_cache(maxsize=4096)
def _passage_sentences(p: Passage) -> tuple[SourceSentence, ...]:
    # Cached per block: every statement of every answer that cites it reads the same sentences.
    lang = passage_language(p)
    out = [_sentence(head, lang, header=True) for head in (p.title, p.section, *p.header_extra) if head]
    out += [_sentence(s, lang) for line in markdown.plain_lines(p.text) for s in sentences(line, lang)]
    return tuple(out)


def word_terms(text: str, language: str) -> list[str]:
    """Content words without numbers, also those written as words ("vier", "four"): numbers are
    compared by value (numbers.py), in every language alike."""
    return [t for t in content_terms(text, language) if t not in NUMBER_WORD_TERMS]


class VectorCache:
    """Sentence vectors by text, least recently used dropped first; thread-safe (the
    pipeline verifies in a worker thread)."""

    def __init__(self, embed: Embed, size: int = CACHE_SIZE):
        self.embed = embed
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            fresh = self.embed(todo)
            with self._lock:
                for text, vector in zip(todo, fresh, strict=True):
                    self._vectors[text] = np.asarray(vector, dtype=np.float32)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        with self._lock:
            rows = []
            for t in texts:
                vector = self._vectors.get(t)
                if vector is None:  # evicted meanwhile by another thread's batch
                    vector = np.asarray(self.embed([t])[0], dtype=np.float32)
                else:
                    self._vectors.move_to_end(t)
                rows.append(vector)
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


# A clause this short says too little to stand for a claim on its own.
CLAUSE_MIN_WORDS = 4


@dataclass
class Aligner:
    """Aligns statements to source sentences; `vectors` is None without an embedder (words only)."""

    weight: Weigher
    vectors: VectorCache | None = None
    _terms_cache: dict = field(default_factory=dict, repr=False)

    def closeness(self, statement: str, sentences: Sequence[SourceSentence]) -> float | None:
        """The best cosine of the statement with `sentences`; None without an embedder."""
        cos = self.cosines(statement, sentences)
        return float(cos.max()) if cos is not None and len(cos) else None

    def closeness_to_clauses(self, statement: str, sentences: Sequence[SourceSentence]) -> float | None:
        """The best cosine of the statement with a clause of `sentences` (one of CLAUSE_MIN_WORDS words or
        more): a claim may restate one clause of a long sentence ("…, die häufig auf einem Tarifvertrag
        beruht"), which the whole sentence's vector blurs. None without an embedder."""
        parts = [c for s in sentences for c in clauses(s.text, commas=True) if len(c.split()) >= CLAUSE_MIN_WORDS]
        if self.vectors is None or not parts:
            return None
        matrix = self.vectors.vectors([statement, *parts])
        return float(np.max(matrix[1:] @ matrix[0]))

    def cosines(self, statement: str, pool: Sequence[SourceSentence]) -> np.ndarray | None:
        if self.vectors is None or not pool:
            return None
        matrix = self.vectors.vectors([statement, *(s.text for s in pool)])
        return matrix[1:] @ matrix[0]

    def align(self, statement: str, language: str, pool: Sequence[SourceSentence]) -> Alignment:
        """The sentences of `pool` that state `statement` (best first), with how well they cover it."""
        if not pool:
            return Alignment((), 0.0, None, False)
        words = list(dict.fromkeys(word_terms(statement, language)))
        # A number is a word of its own for the alignment, as rare as the rarest:
        # the sentence that states "3,6 %" is the one a statement with 3,6 % rests on.
        numbers = [f"#{v}" for n in find_numbers(statement, language) for v in sorted(n.values)[:1]]
        words += list(dict.fromkeys(numbers))
        weights = {t: self.weight(t) if not t.startswith("#") else self.weight("\x00") for t in words}
        total = sum(weights.values()) or 1.0
        covers = [self._cover(words, s, language) for s in pool]
        shares = [sum(weights[t] for t in c) / total for c in covers]
        # Across languages when the blocks are in another language: no shared words to count, so by
        # meaning (the embedder's cosine); in one language by words, which costs no embedding.
        cross = not any(s.language == language for s in pool)
        cos = self.cosines(statement, pool) if cross else None
        if cross and cos is not None:
            return self._by_meaning(pool, cos, words, covers, weights, total)
        # A block's title or section is a sentence to align to only behind its text: it names the
        # topic, the text states what is true about it.
        order = sorted(range(len(pool)), key=lambda i: (pool[i].header, -shares[i], -(cos[i] if cos is not None else 0.0), i))
        chosen = [order[0]]
        covered = set(covers[order[0]])
        while len(chosen) < MAX_ALIGNED:
            best, best_gain, best_new = None, 0.0, set()
            for i in order:
                if i in chosen:
                    continue
                new = covers[i] - covered
                gain = sum(weights[t] for t in new) / total
                if gain > best_gain:
                    best, best_gain, best_new = i, gain, new
            if best is None or best_gain < MIN_ADDED_SHARE or len(best_new) < MIN_ADDED_TERMS:
                break
            chosen.append(best)
            covered |= best_new
        coverage = sum(weights[t] for t in covered) / total
        missing = tuple(t for t in words if t not in covered)
        best_cos = float(cos[order[0]]) if cos is not None else None
        return Alignment(tuple(pool[i] for i in chosen), coverage, best_cos, False, missing)

    def _by_meaning(self, pool, cos, words, covers, weights, total) -> Alignment:
        # Numbers are written alike in both languages: of two sentences about as close in meaning,
        # the one that states the statement's numbers is the one it rests on.
        numbers = [t for t in words if t.startswith("#")]
        held = [len([t for t in numbers if t in covers[i]]) / len(numbers) if numbers else 0.0 for i in range(len(pool))]
        score = [float(cos[i]) + CROSS_LANGUAGE_NUMBER_BONUS * held[i] for i in range(len(pool))]
        order = sorted(range(len(pool)), key=lambda i: -score[i])
        top = float(cos[order[0]])
        best = score[order[0]]
        chosen = [i for i in order[:MAX_ALIGNED] if score[i] >= best - CROSS_LANGUAGE_JOIN]
        near = [i for i in order[: 2 * MAX_ALIGNED] if i not in chosen and score[i] >= best - CROSS_LANGUAGE_NEAR]
        covered = set().union(*(covers[i] for i in chosen))
        coverage = sum(weights[t] for t in covered) / total
        missing = tuple(t for t in words if t not in covered)
        return Alignment(tuple(pool[i] for i in chosen), coverage, top, True, missing, tuple(pool[i] for i in near))

    def _cover(self, words: list[str], sentence: SourceSentence, language: str) -> set[str]:
        numbers = {t for t in words if t.startswith("#") and t[1:] in sentence.values}
        if sentence.language != language:
            # Names and codes are spelled alike in both languages.
            return numbers | {t for t in words if t in sentence.terms}
        return numbers | {t for t in words if not t.startswith("#") and match_term(t, sentence.terms, language)}


# ------------------------------------------------------------------ clauses

# Where one clause of a sentence ends and another begins: a negation in one
# ("Einen Anspruch gibt es nicht: ...") says nothing about the other.
_CLAUSE_BREAK = re.compile(
    r"\s*[;:]\s+|\s+[–—]\s+|\s+-\s+|,\s+(?=(?:aber|doch|jedoch|sondern|während|wobei|denn|and|but|while|whereas|however"
    r"|so|und|oder|or)\b)|\.\s+"
)


_COMMA = re.compile(r",\s+")
_PARENTHESES = re.compile(r"\([^()]*\)")


def clauses(sentence: str, *, commas: bool = False) -> list[str]:
    """The sentence's clauses; with `commas`, every comma ends one (German sets off each
    subordinate clause with commas: "Beschäftigte, die nicht ... sind, erhalten ...")."""
    # An aside in parentheses ("(2026: 8.450 € im Monat)") is no clause of its own and ends none.
    parts = [p.strip() for p in _CLAUSE_BREAK.split(_PARENTHESES.sub(" ", sentence))]
    if commas:
        parts = [q.strip() for p in parts for q in _COMMA.split(p)]
    return [p for p in parts if p]
