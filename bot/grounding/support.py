"""Does a cited passage support a claim? A lexical test, sentence by sentence.

A claim is supported when
- one sentence of its cited evidence, or two together, contain most of its
  content words (kb_index.analysis.terms: stemmed, stop words removed);
- the words found also stand close together there (word pairs);
- its names and codes ("PTEN", "CD28", "ATZ") occur in the evidence at all.
Scoring whole blocks instead would accept a claim whose words are scattered
over a long passage about the same topic: sentence level, pairs and names are
what tell the passage a claim came from apart from a related one. Numbers are
a separate, exact rule (numbers.py).

Calibration (SciFact train claims with SUPPORT labels; the negative for each
claim is the most similar non-gold abstract by BM25, the hardest kind): with
the thresholds below, claim + number rule accept 29% of gold abstracts and 5%
of the related ones (dev: 34% / 6.5%). SciFact claims are written by people who
paraphrase freely, so acceptance of gold is low for any lexical test; claims a
model writes from blocks it is told to follow closely score far higher. The
operating point favours rejecting: a rejected true claim costs a regeneration
or a review, an accepted unsupported one misinforms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from kb_index.analysis import terms

from bot.grounding.text import paragraphs, sentences

# Share of the claim's content words one sentence must hold. Lower values
# (0.6) let in twice as many related-but-wrong passages for 1.3x the gold.
SINGLE_SENTENCE_COVERAGE = 0.7

# Share two sentences together must hold: higher than for one sentence, because
# two sentences offer more words to match by chance.
TWO_SENTENCE_COVERAGE = 0.8

# Share of the claim's adjacent word pairs that must stand within PAIR_WINDOW
# content words of each other in the supporting sentences: words that belong
# together in the claim belong together in the source.
PAIR_COVERAGE = 0.34
PAIR_WINDOW = 4

# Claims with fewer content words than this have no pairs worth testing
# ("Velociraptor is featured").
MIN_TERMS_FOR_PAIRS = 3

# Shortest stem that may match inside a longer one ("teilzeit" in
# "altersteilzeit"); shorter ones match inside unrelated words.
MIN_PARTIAL_STEM = 5

_NUMERIC = re.compile(r"^[\d.,]+$")

# Names and codes: an acronym ("PTEN", "ATZ") or letters mixed with digits
# ("CD28", "H3K9me3"). They name what a claim is about; a passage that lacks them
# is about something else, however many other words it shares.
_ANCHOR = re.compile(r"\b(?:[A-ZÄÖÜ]{2,}[A-Za-z]*|[A-Za-z]+\d[\w]*|\d+[A-Za-z]+\w*)\b")


@dataclass(frozen=True)
class Support:
    supported: bool
    coverage: float  # best share of claim words found in one or two sentences
    pair_coverage: float
    missing: tuple[str, ...]  # claim terms the best sentences lack


def content_terms(text: str, language: str) -> list[str]:
    """Analyzed words, numbers left out (numbers have their own exact rule)."""
    return [t for t in terms(text, language) if not _NUMERIC.match(t)]


def anchors(text: str, language: str) -> list[str]:
    """Analyzed terms of the claim's names and codes."""
    return _unique([t for m in _ANCHOR.finditer(text) for t in content_terms(m.group(0), language)])


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _matches(term: str, words: set[str], language: str) -> bool:
    if term in words or len(term) < MIN_PARTIAL_STEM:
        return term in words
    for word in words:
        if len(word) < MIN_PARTIAL_STEM:
            continue
        if language == "de":
            # German compounds: "teilzeit" is in "altersteilzeit", and the other way round.
            if term in word or word in term:
                return True
        elif word.startswith(term) or term.startswith(word):
            return True  # stems the stemmer left apart: "immun" / "immunolog"
    return False


def evidence_sentences(passages: list[str], language: str) -> list[list[str]]:
    """Each sentence of the passages as its list of content terms."""
    out = []
    for passage in passages:
        for paragraph in paragraphs(passage):
            for sentence in sentences(paragraph, language):
                words = content_terms(sentence, language)
                if words:
                    out.append(words)
    return out


def _covered(claim: list[str], words: set[str], language: str) -> set[str]:
    return {t for t in claim if _matches(t, words, language)}


def _best_cover(claim: list[str], sents: list[list[str]], language: str) -> tuple[float, list[int], set[str]]:
    """Best coverage by one sentence (or two, held to the higher bar), as a share
    normalised to the one-sentence threshold so both can be compared."""
    covers = [_covered(claim, set(s), language) for s in sents]
    n = len(claim)
    best = (-1.0, [], set())
    for i, cover in enumerate(covers):
        score = len(cover) / n / SINGLE_SENTENCE_COVERAGE
        if score > best[0]:
            best = (score, [i], cover)
    for i, j in combinations(range(len(sents)), 2):
        cover = covers[i] | covers[j]
        score = len(cover) / n / TWO_SENTENCE_COVERAGE
        if score > best[0] + 1e-9:
            best = (score, [i, j], cover)
    return best


def _pairs_near(claim: list[str], sents: list[list[str]], language: str) -> float:
    pairs = list(zip(claim, claim[1:]))
    if not pairs:
        return 1.0
    found = 0
    for a, b in pairs:
        for words in sents:
            pos_a = [k for k, w in enumerate(words) if _matches(a, {w}, language)]
            pos_b = [k for k, w in enumerate(words) if _matches(b, {w}, language)]
            if any(abs(x - y) <= PAIR_WINDOW for x in pos_a for y in pos_b):
                found += 1
                break
    return found / len(pairs)


def assess(claim: str, passages: list[str], language: str = "en", idf=None) -> Support:
    """Score `claim` against the passages it cites."""
    words = _unique(content_terms(claim, language))
    sents = evidence_sentences(passages, language)
    if not words or not sents:
        return Support(False, 0.0, 0.0, tuple(words))
    score, chosen, cover = _best_cover(words, sents, language)
    coverage = len(cover) / len(words)
    chosen_sents = [sents[i] for i in chosen]
    # Pairs of the words found, in claim order: a missing word already costs
    # coverage and must not also break the two pairs around it.
    found = [t for t in words if t in cover]
    pairs = _pairs_near(found, chosen_sents, language) if len(found) >= MIN_TERMS_FOR_PAIRS else 1.0
    everywhere = {w for s in sents for w in s}
    names_found = all(_matches(a, everywhere, language) for a in anchors(claim, language))
    supported = score >= 1.0 and pairs >= PAIR_COVERAGE and names_found
    missing = tuple(t for t in words if t not in cover)
    return Support(supported, coverage, pairs, missing)
