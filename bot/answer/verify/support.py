"""Does a cited passage support a claim? A lexical test, sentence by sentence.

A claim is supported when
- one sentence of its cited evidence, or two together, hold most of the weight
  of its content words (kb_index.analysis.terms: stemmed, stop words removed);
- the words found also stand close together there (word pairs);
- its names and codes ("PTEN", "CD28", "ATZ") occur in the evidence, written
  as they are or spelled out ("VSMCs" - "vascular smooth muscle cells").
Scoring whole blocks instead would accept a claim whose words are scattered
over a long passage about the same topic. Numbers are a separate, exact rule
(numbers.py): a claim with a number its evidence does not state always fails.

Word weights. Without a table every word weighs the same. With an IDF table
of the knowledge base (`weigher`), rare words count for more: a claim about
"pyridostatin" and "double-strand breaks" is about pyridostatin first, and a
passage on double-strand breaks that never names it is not its source. A word
the table does not know weighs as much as the rarest one it does. The table is
the caller's: the pipeline passes the KB index's (kb_index Retriever.idf, the
formula impacts.idf_table); this module stays pure.

Calibration (bench/verifier_scifact.py --tune, SciFact train split only): each
SUPPORT claim against its gold abstract, the best-ranked non-gold abstract (the
hard negative: related, same vocabulary) and a random one. The thresholds below
maximise F1 of gold vs hard negative on train (0.717; gold 74 % accepted, hard
negatives 36 %, random 0 %). Dev, with the corpus IDF table: F1 0.68 against
hard negatives, 0.80 against random ones; every changed number caught; about
half of the CONTRADICT claims accepted. The F1 surface is flat (0.70-0.72 on
train for any single-sentence bar from 0.2 to 0.5): lower bars accept more gold
(train 84 % at 0.2/0.3, F1 vs random 0.91) and more related abstracts (60 %).
No lexical score tried tells a source from a closely related abstract well
(train AUC 0.70-0.78, with IDF, sentence pairs, bigrams, term frequency, title
overlap): SciFact claims paraphrase their source, and the related abstract
shares most of their words by construction. Claims a model writes while told
to keep to the block's wording should share more of its words (not measured here).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from kb_index.analysis import fold_accents, stop_words, terms
from kb_index.sentences import paragraphs, sentences

# Share of the claim's word weight one sentence must hold.
SINGLE_SENTENCE_COVERAGE = 0.45

# Share two sentences together must hold: higher than for one sentence, because
# two sentences offer more words to match by chance.
TWO_SENTENCE_COVERAGE = 0.55

# Share of the claim's adjacent word pairs (of the words found) that must stand
# within PAIR_WINDOW content words of each other in the supporting sentences:
# words that belong together in the claim belong together in the source.
PAIR_COVERAGE = 0.3
PAIR_WINDOW = 4

# Claims with fewer content words than this have no pairs worth testing
# ("Velociraptor is featured").
MIN_TERMS_FOR_PAIRS = 3

# Shortest stem that may match inside a longer one ("teilzeit" in
# "altersteilzeit"); shorter ones match inside unrelated words.
MIN_PARTIAL_STEM = 5

_NUMERIC = re.compile(r"^[\d.,]+$")

# Names and codes: an acronym ("PTEN", "ATZ") or letters mixed with digits
# ("CD28", "H3K9me3", "Kir7.1"). They name what a claim is about; a passage that
# lacks them is about something else, however many other words it shares.
# A number with its unit ("40mg") is not a name: the number rule covers it.
_ANCHOR = re.compile(r"\b(?:[A-ZÄÖÜ]{2,}[A-Za-z]*|[A-Za-z]+\d\w*(?:[.,]\d+)*)\b")

# "break-induced DNA replication (BIR)": an abbreviation the claim defines itself.
_DEFINED = re.compile(r"\(\s*([A-Za-z][\w-]*)\s*\)")

_WORD = re.compile(r"\w+")
_CODE = re.compile(r"\w+(?:-\w+)*")  # "Ly-6C", "SREBP-2": compared without hyphens

# Negation cues (stop words, so the analyzer drops them). A claim that negates
# needs a supporting sentence that negates too: "X does not affect Y" is not
# stated by "X reduced Y", though every content word is there.
_NEGATION = {
    "en": re.compile(
        r"\b(?:not|no|never|neither|nor|none|nothing|nobody|nowhere|without|cannot|\w+n't)\b", re.IGNORECASE
    ),
    "de": re.compile(r"\b(?:nicht|kein\w*|nie|niemals|niemand\w*|nirgends|nirgendwo|ohne|weder|nichts)\b", re.IGNORECASE),
}
# A negation that only bounds an amount or a date states no negative: "no
# later than 31 March", "cannot carry over more than 5 days", "must not
# exceed", "nicht mehr als", and "not only" affirms. Matched right after the cue.
_BOUND = {
    "en": re.compile(
        r"\W+only\b|(?:\W+[\w']+){0,3}?\W+(?:(?:more|less|fewer|later|earlier|longer|sooner|greater|higher|lower)"
        r"\W+than|exceed\w*|beyond)\b",
        re.IGNORECASE,
    ),
    "de": re.compile(
        r"\W+nur\b|(?:\W+\w+){0,4}?\W+(?:(?:mehr|weniger|später|früher|länger|kürzer|höher|größer)\W+als"
        r"|überschreit\w*|hinaus)\b",
        re.IGNORECASE,
    ),
}
# Costs SciFact train 2.4 % of gold abstracts (negations paraphrased as "had
# no effect" in a sentence other than the best-covering one) and rejects 9 % of
# the CONTRADICT claims it would otherwise accept.
NEGATION_CHECK = True

# A statement's negation (statement.check_negation): besides the aligned
# sentences, every sentence holding at least this share of the best sentence's
# words may carry it. A source often states a negative result in another sentence
# than the one that best matches the claim's words ("did not do better than").
# SciFact train, claims as cited sentences: at 1.0 the check rejects 8 more
# of 370 gold pairs (2.2 %) and catches 18 of 185 accepted CONTRADICT pairs;
# at 0.6, 4 gold (1.1 %) and 13 contradictions. Dev at 0.6: 2 of 138 gold,
# 7 of 68 contradictions.
NEGATION_NEAR_SHARE = 0.6

# What states a negative result in a source besides plain negation: "similar",
# "did not differ", "failed to", "unchanged", "independent of".
_NEGATIVE_RESULT = {
    "en": re.compile(
        r"\b(?:similar\w*|comparable|unchanged|unaffected|unrelated|independent\w*|fail\w*|lack\w*|absen\w+"
        r"|insignificant\w*|nonsignificant\w*|non-significant\w*|neutral)\b",
        re.IGNORECASE,
    ),
    "de": re.compile(r"\b(?:ähnlich\w*|vergleichbar\w*|unverändert\w*|unabhängig\w*|fehl(?:t|en|end\w*|te\w*))\b", re.IGNORECASE),
}

Weigher = Callable[[str], float]


def _uniform(_term: str) -> float:
    return 1.0


def weigher(idf: Mapping[str, float] | Weigher | None) -> Weigher:
    """A term -> weight function from an IDF table (or a function, or nothing:
    uniform). Terms the table lacks weigh as much as its rarest term."""
    if idf is None:
        return _uniform
    if callable(idf):
        return idf
    table = dict(idf)
    unknown = max(table.values(), default=1.0)
    return lambda term: table.get(term, unknown)


@dataclass(frozen=True)
class Support:
    supported: bool
    coverage: float  # best weighted share of claim words found in one or two sentences
    pair_coverage: float
    missing: tuple[str, ...]  # claim terms the best sentences lack
    # The words, pairs and names are there: only the negation (if any) may be missing.
    lexical: bool = False
    negation_kept: bool = True


def content_terms(text: str, language: str) -> list[str]:
    """Analyzed words, numbers left out (numbers have their own exact rule)."""
    return list(_content_terms(text, language))


@lru_cache(maxsize=16_384)
def _content_terms(text: str, language: str) -> tuple[str, ...]:
    return tuple(t for t in terms(text, language) if not _NUMERIC.match(t))


def anchors(text: str, language: str) -> list[str]:
    """The claim's names and codes as written, except those the claim spells out itself."""
    defined = {part.casefold() for m in _DEFINED.finditer(text) for part in [m.group(1), *m.group(1).split("-")]}
    found = [m.group(0) for m in _ANCHOR.finditer(text)]
    return _unique([a for a in found if a.casefold() not in defined])


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def match_term(term: str, words: Set[str], language: str) -> bool:
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
    return [words for _, words in _sentences(passages, language)]


def _sentences(passages: list[str], language: str) -> list[tuple[str, list[str]]]:
    out = []
    for passage in passages:
        for paragraph in paragraphs(passage):
            for sentence in sentences(paragraph, language):
                words = content_terms(sentence, language)
                if words:
                    out.append((sentence, words))
    return out


def negates(text: str, language: str) -> bool:
    """Does the text negate? "NO" in capitals is a name (nitric oxide), "No." an
    abbreviation or a bare interjection, and a bound ("no later than") no negation."""
    text = text.replace("’", "'")
    bound = _BOUND.get(language, _BOUND["en"])
    for m in _NEGATION.get(language, _NEGATION["en"]).finditer(text):
        word = m.group(0)
        if word.isupper() and len(word) > 1:
            continue
        if word.casefold() == "no" and text[m.end() : m.end() + 1] == ".":
            continue
        if bound.match(text, m.end()):
            continue
        return True
    return False


def _states_negative(text: str, language: str) -> bool:
    """Does a source sentence state something negative? Read generously (bounds
    count too): this side decides whether a correct answer is rejected."""
    cues = _NEGATION.get(language, _NEGATION["en"]).finditer(text.replace("’", "'"))
    if any(not (m.group(0).isupper() and len(m.group(0)) > 1) for m in cues):
        return True
    return bool(_NEGATIVE_RESULT.get(language, _NEGATIVE_RESULT["en"]).search(text))


def _spelled_out(acronym: str, words: list[str], skip: frozenset[str]) -> bool:
    """Do consecutive words start with the acronym's letters ("vsmc": "vascular
    smooth muscle cells")? Stop words in between may be skipped ("tumor necrosis
    factor", "body mass index", "Bacillus Calmette-Guerin")."""
    letters = acronym.casefold()
    if len(letters) < 2 or not letters.isalpha():
        return False
    for start, word in enumerate(words):
        if word[0] != letters[0]:
            continue
        k, pos = 1, start + 1
        while k < len(letters) and pos < len(words):
            if words[pos][0] == letters[k]:
                k += 1
            elif words[pos] not in skip:
                break
            pos += 1
        if k == len(letters):
            return True
    return False


def _squash_code(text: str) -> str:
    return fold_accents(text.replace("-", "").casefold())


def _anchor_found(
    anchor: str, evidence_terms: set[str], evidence_words: list[str], codes: set[str], language: str
) -> bool:
    parts = content_terms(anchor, language)
    if parts and all(match_term(p, evidence_terms, language) for p in parts):
        return True
    if _squash_code(anchor) in codes:  # "Ly6C" / "Ly-6C", "SREBP2" / "SREBP-2"
        return True
    # The name as the start of a longer word, continued by letters: "GABA" in
    # "GABAergic"; not by digits: "CD4" is not "CD40".
    lowered = anchor.casefold()
    if len(lowered) >= 3 and any(
        w.startswith(lowered) and len(w) > len(lowered) and w[len(lowered)].isalpha() for w in evidence_words
    ):
        return True
    letters = anchor[:-1] if len(anchor) > 2 and anchor.endswith("s") else anchor  # "VSMCs", "EVs"
    return _spelled_out(letters, evidence_words, stop_words(language))


def anchor_found(anchor: str, passages: list[str], language: str) -> bool:
    """Is the name or code `anchor` in one of the passages, as written or spelled out?"""
    evidence_terms = {w for p in passages for w in content_terms(p, language)}
    raw_words = [fold_accents(w) for p in passages for w in _WORD.findall(p.casefold())]
    codes = {_squash_code(m.group(0)) for p in passages for m in _CODE.finditer(p)}
    return _anchor_found(anchor, evidence_terms, raw_words, codes, language)


def _best_cover(
    claim: list[str], sents: list[list[str]], language: str, weight: Weigher
) -> tuple[float, float, list[int], set[str]]:
    """Best cover by one sentence or two (held to the higher bar): the score
    normalised to the bar (>= 1 passes), the weighted share, the sentences, the words."""
    covers = [{t for t in claim if match_term(t, set(s), language)} for s in sents]
    weights = {t: weight(t) for t in claim}
    total = sum(weights.values()) or 1.0

    def share(cover: set[str]) -> float:
        return sum(weights[t] for t in cover) / total

    shares = [share(c) for c in covers]
    best: tuple[float, float, list[int], set[str]] = (-1.0, 0.0, [], set())
    for i, cover in enumerate(covers):
        score = shares[i] / SINGLE_SENTENCE_COVERAGE
        if score > best[0]:
            best = (score, shares[i], [i], cover)
    # Two sentences: only those that add something to each other can beat one.
    order = sorted(range(len(covers)), key=lambda k: -shares[k])
    for a, i in enumerate(order):
        if shares[i] / TWO_SENTENCE_COVERAGE * 2 <= best[0]:
            break  # the best partner cannot add more than this sentence holds
        for j in order[a + 1 :]:
            cover = covers[i] | covers[j]
            s = share(cover)
            score = s / TWO_SENTENCE_COVERAGE
            if score > best[0] + 1e-9:
                best = (score, s, sorted([i, j]), cover)
    return best


def _pairs_near(claim: list[str], sents: list[list[str]], language: str) -> float:
    """Share of the claim's adjacent word pairs that stand within PAIR_WINDOW of
    each other in a sentence holding both. A pair split over the two supporting
    sentences is left out: a claim may join what two sentences say."""
    tested = found = 0
    for a, b in pairwise(claim):
        near = together = False
        for words in sents:
            pos_a = [k for k, w in enumerate(words) if match_term(a, {w}, language)]
            pos_b = [k for k, w in enumerate(words) if match_term(b, {w}, language)]
            if pos_a and pos_b:
                together = True
                if any(abs(x - y) <= PAIR_WINDOW for x in pos_a for y in pos_b):
                    near = True
                    break
        tested += together
        found += near
    return found / tested if tested else 1.0


def assess(
    claim: str,
    passages: list[str],
    language: str = "en",
    idf: Mapping[str, float] | Weigher | None = None,
) -> Support:
    """Score `claim` against the passages it cites; `idf` weighs words (see `weigher`)."""
    weight = weigher(idf)
    words = _unique(content_terms(claim, language))
    raw_sents = _sentences(passages, language)
    sents = [terms_ for _, terms_ in raw_sents]
    if not words or not sents:
        return Support(False, 0.0, 0.0, tuple(words))
    score, coverage, chosen, cover = _best_cover(words, sents, language, weight)
    chosen_sents = [sents[i] for i in chosen]
    # Pairs of the words found, in claim order: a missing word already costs
    # coverage and must not also break the two pairs around it.
    found = [t for t in words if t in cover]
    pairs = _pairs_near(found, chosen_sents, language) if len(found) >= MIN_TERMS_FOR_PAIRS else 1.0
    everywhere = {w for s in sents for w in s}
    raw_words = [fold_accents(w) for p in passages for w in _WORD.findall(p.casefold())]
    codes = {_squash_code(m.group(0)) for p in passages for m in _CODE.finditer(p)}
    names_found = all(
        _anchor_found(a, everywhere, raw_words, codes, language) for a in anchors(claim, language)
    )
    negation_kept = not (NEGATION_CHECK and negates(claim, language)) or any(
        _states_negative(raw_sents[i][0], language) for i in chosen
    )
    lexical = score >= 1.0 and pairs >= PAIR_COVERAGE and names_found
    missing = tuple(t for t in words if t not in cover)
    return Support(lexical and negation_kept, coverage, pairs, missing, lexical, negation_kept)
