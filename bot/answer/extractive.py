"""The extractive backend: answers without a model, in the knowledge base's own words.

Retrieval has already decided that the knowledge base covers the question, or
refused it, or found it only near (`GenerationRequest.nearest_only`: then the
passages come under the line that the knowledge base may not answer the question as asked; section 3.7). This
backend picks, from the top evidence blocks, the passages that answer it best (sentences, list items, table rows),
and gives them in reading order, each with its citation, under a line that says what they are: the knowledge
base's passages closest to the question, its own words, not a composed answer (`Draft.lead`).

Passages are chosen by the question's meaning and its words together: the
cosine between the question and each passage (the retriever's embedder, which
carries paraphrase and other languages; vectors cached per text for the
backend's lifetime) plus the idf-weighted share of the question's words the passage
holds, less a little for each lower-ranked block. Without an embedder, words
alone.

When the best passage is not close enough to the question, or the question
names a thing of its own that the best passage's entry does not mention while
sharing its topic (a missing word close in meaning to the entry's title:
`sibling_word`; or the near-topic model says so, which reads question and
passage together: bot/answer/near_topic.py), the knowledge base covers
something nearby, not what was asked: the question counts as not covered (`Draft.not_covered`: the gaps report),
never as an answer. The passages keep the same neutral lead: on sealed sets this reading marked two in three right
answers to catch the near-topic ones (bench/extractive/README.md), so a hedge on it would mostly hedge right
answers. What is close enough is the embedder's record (kb_index.calibration); with an embedder that has none,
every question counts as not covered.

Passages are copied verbatim (only line breaks inside a sentence become spaces;
a table row is its cells joined by " · "), so every number and quotation is in
the block it cites and the verifiers pass them as they would a model's draft.
In claims mode passages with a quotation are left out, because the claims rules
reject quoting claims. No usable block: the refusal sentence. Deterministic: the
same request gives the same draft.

The weights and thresholds were chosen on the tune halves of bench/extractive/
(knowledge bases of other companies, Slack-style questions in both languages
and across them; tune.py), the near-topic model fitted on its spent sets
(near_model.py), and bench/extractive/run.py reports them on sets sealed until
measured: why, in docs/DESIGN.md (section 3.6); the figures, in docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from bot.answer import near_topic
from bot.answer.vector_cache import VectorCache
from bot.answer.verify.claims import DEFAULT_ALLOWED_ROLES
from bot.answer.verify.text import DOUBLE_QUOTE_CHARS
from bot.i18n import Key, message
from bot.models import AnswerMode, Draft, Evidence, GenerationRequest
from kb_index import markdown
from kb_index.analysis import SUBWORD_GRAM, subword_terms, terms
from kb_index.calibration import UNCALIBRATED, Calibration, for_embedder
from kb_index.embedding import Embedder
from kb_index.question.chatter import strip_chatter
from kb_index.question.parts import split_question
from kb_index.sentences import sentences

MAX_BLOCKS = 3  # a right entry's passage is best as often as with five, at 3/5 of the embedding (docs/benchmarks.md)
MAX_PASSAGES = 4  # a Slack answer, not a report
SHORTLIST = 8  # passages embedded both ways (see `score`)
MIN_WORDS = 3  # shorter lines are labels ("Details", "Ja."), not statements

# A passage's score: its cosine with the question, plus LEXICAL_WEIGHT times the share of the question's word
# weight it holds, less RANK_PENALTY for each block ranked above its own.
LEXICAL_WEIGHT = 0.1  # tune halves of bench/extractive (docs/benchmarks.md, "Extractive backend")
RANK_PENALTY = 0.0  # the block's rank adds nothing the cosine does not know (docs/benchmarks.md, "Extractive backend")
FOLLOW_MARGIN = 0.03  # a further passage joins the best while its score is within this of the best's
# The best passage's confidence: its closeness in meaning, plus STANDOUT_WEIGHT times how far it stands out from
# the STANDOUT_RANK-th closest passage (an answer stands out from its blocks; a nearby topic is as close to all).
# What confidence answers is the embedder's (kb_index.calibration: min_meaning, min_meaning_other).
STANDOUT_WEIGHT = 0.5  # marks fewer answerable questions than meaning alone (docs/benchmarks.md, "Extractive backend")
STANDOUT_RANK = 5
# The word rule (`sibling_word`): a near-topic question names a thing of its own that the best entry lacks; the
# closeness to the entry's title that marks it is the embedder's (kb_index.calibration: min_sibling).
MIN_SIBLING_LETTERS = 3  # shorter words are particles and typos, not things

# Without an embedder, words alone (tune half of tests/data/answerability.yaml): the share of the question's word
# weight the best passage must hold to answer, and a further passage's, relative to the best one's and absolute.
MIN_LEXICAL = 0.25
WORDS_RELATIVE_FOLLOW = 0.5
WORDS_MIN_FOLLOW = 0.2

# German compounds: a question stem inside a longer passage stem
# ("teilzeit" in "altersteilzeit") is a match, but a weaker one.
COMPOUND_WEIGHT = 0.5
MIN_COMPOUND_STEM = 4

Embed = Callable[[list[str]], np.ndarray]

# ----------------------------------------------------------------- markdown

# "Stand: 2026-01", "Zuständig: Personalabteilung": a label with its value, not a statement.
_META = re.compile(r"[^\W\d][\w ./()&-]{0,30}:\s*\S")
_BOLD_LABEL = re.compile(r"(?:\*\*[^*]+\*\*|__[^_]+__):?$")
_ROW_SEPARATOR = " · "


def prose_units(text: str) -> list[str]:
    """The paragraphs and list items of a Markdown block, each on one line
    (kb_index.markdown: a hard-wrapped paragraph is one unit).

    Headings, tables, code, raw HTML and metadata lines ("Stand: 2026-01") are
    left out: they are labels, not statements anyone could cite as an answer.
    """
    return [u.text for u in markdown.units(text) if u.kind in ("paragraph", "item") and not _is_label(u.text)]


def _is_label(line: str) -> bool:
    if _BOLD_LABEL.match(line):
        return True
    plain = line.replace("**", "").replace("__", "")
    return bool(_META.match(plain)) and not plain.endswith((".", "!", "?"))


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|") if c.strip()]


@dataclass(frozen=True, slots=True)
class Unit:
    """A statement of a block: a sentence of a paragraph or list item, or a table row."""

    text: str  # as quoted
    meaning_text: str  # as embedded: a table row with its header, a list item with its heading
    kind: str  # "sentence" or "row"


def statement_units(ev: Evidence, language: str) -> list[Unit]:
    """The statements of a block, in reading order."""
    found: list[Unit] = []
    header: list[str] = []
    for u in markdown.units(ev.text):
        if u.kind == "row":
            cells = _cells(u.text)
            if u.level == 1:
                header = cells
                continue
            quoted = _ROW_SEPARATOR.join(cells)
            labelled = "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=False)) if header else quoted
            found.append(Unit(quoted, labelled, "row"))
        elif u.kind in ("paragraph", "item") and not _is_label(u.text):
            for sentence in sentences(u.text, language):
                found.append(Unit(sentence, sentence, "sentence"))
    return found


# ----------------------------------------------------------------- scoring


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    evidence: Evidence
    rank: int  # position of its block among those considered, 0 = best
    position: int  # order within the block
    terms: frozenset[str]
    score: float = 0.0  # what the choice is made on
    lexical: float = 0.0  # share of the question's word weight it holds
    meaning: float | None = None  # cosine with the question; None without an embedder
    meaning_text: str = ""


def candidates(evidence: Iterable[Evidence], language: str) -> list[Candidate]:
    found: list[Candidate] = []
    seen: set[str] = set()
    # Background material may not back an answer (the claims verifier blocks
    # its role), so it is never quoted.
    usable = [e for e in evidence if e.source_role in DEFAULT_ALLOWED_ROLES][:MAX_BLOCKS]
    for rank, ev in enumerate(usable):
        position = 0
        for unit in statement_units(ev, ev.chunk.language or language):
            # Cross-ref expansions repeat text; quote it once, from the better block.
            if len(unit.text.split()) < MIN_WORDS or unit.text in seen:
                continue
            seen.add(unit.text)
            found.append(Candidate(unit.text, ev, rank, position, frozenset(terms(unit.text, language)),
                                   meaning_text=unit.meaning_text))
            position += 1
    return found


def _match(term: str, sentence_terms: frozenset[str], language: str) -> float:
    if term in sentence_terms:
        return 1.0
    if (
        language == "de"
        and len(term) >= MIN_COMPOUND_STEM
        and any(term in s for s in sentence_terms if len(s) > len(term))
    ):
        return COMPOUND_WEIGHT
    return 0.0


def lexical_scores(question_terms: set[str], pool: Sequence[Candidate], language: str) -> list[float]:
    """The weighted share of the question each passage covers: a term that few
    passages contain says more about which one answers (idf within the evidence)."""
    if not question_terms or not pool:
        return [0.0] * len(pool)
    matches = [{t: _match(t, c.terms, language) for t in question_terms} for c in pool]
    weight = {}
    for t in question_terms:
        df = sum(1 for m in matches if m[t] > 0)
        weight[t] = math.log(1 + (len(pool) + 1) / (df + 1))
    total = sum(weight.values())
    return [sum(weight[t] * v for t, v in m.items()) / total for m in matches]


@dataclass(frozen=True)
class Vectors:
    """The embedder as the backend uses it: the question as a query, the passages as passages (the pair
    the retrieval model was trained to score: does this passage answer this question), and the thresholds
    its cosines are read with."""

    queries: Embed
    passages: Embed
    name: str = ""  # the embedder's: the near-topic model reads only the vectors it was fitted on
    calibration: Calibration = UNCALIBRATED  # vectors of an embedder nobody measured: every selection marked

    @classmethod
    def cached(cls, embedder: Embedder) -> Vectors:
        """`embedder`'s vectors, each side cached by text for as long as these live, read with its record."""
        return cls(VectorCache(embedder.embed_queries).vectors, VectorCache(embedder.embed_passages).vectors,
                   embedder.name, for_embedder(embedder.name))


def score(question: str, pool: list[Candidate], language: str, vectors: Vectors | None) -> list[Candidate]:
    """`pool` with its lexical share, its closeness in meaning to the question (with an
    embedder) and the score.

    Meaning is the mean of two cosines: the passage embedded as a passage (does it
    answer the question: what the retrieval model was trained on) and as a query (does
    it say the same thing). Tune half: the mean tells answerable from near-topic
    questions better than either alone. Embedding costs: every passage is embedded as
    a passage, and only the SHORTLIST closest of them as a query too; the others get
    the shortlist's mean difference between the two.
    """
    lexical = lexical_scores(set(terms(question, language)), pool, language)
    meaning: list[float | None] = [None] * len(pool)
    if vectors is not None and pool:
        texts = [c.meaning_text or c.text for c in pool]
        asked = vectors.queries([question])[0]
        as_passage = vectors.passages(texts) @ asked
        short = np.argsort(-as_passage, kind="stable")[:SHORTLIST]
        as_query = vectors.queries([texts[i] for i in short]) @ asked
        both = as_passage + float(np.mean(as_query - as_passage[short])) / 2
        both[short] = (as_passage[short] + as_query) / 2
        meaning = [float(x) for x in both]
    scored = []
    for c, lex, cos in zip(pool, lexical, meaning, strict=True):
        base = cos + LEXICAL_WEIGHT * lex if cos is not None else lex
        scored.append(replace(c, lexical=lex, meaning=cos, score=base - RANK_PENALTY * c.rank))
    return scored


@dataclass(frozen=True)
class Selection:
    """The passages to quote, in reading order, and whether they answer the question as asked."""

    passages: list[Candidate]
    answers: bool  # False: the nearest passages to a near-topic question
    best: Candidate | None = None
    confidence: float | None = None  # what `answers` was decided on (None: words alone)
    sibling: str = ""  # the question's word that the best entry does not mention (see `sibling_word`)


def confidence(best: Candidate, scored: Sequence[Candidate]) -> float | None:
    """How surely the best passage answers: its closeness in meaning, plus STANDOUT_WEIGHT
    times how far it stands out from the STANDOUT_RANK-th closest passage. An answer
    stands out from the rest of its blocks; a near-topic question is about as close to
    all of them."""
    if best.meaning is None:
        return None
    closeness = sorted((c.meaning for c in scored if c.meaning is not None), reverse=True)
    reference = closeness[min(STANDOUT_RANK, len(closeness)) - 1]
    return best.meaning + STANDOUT_WEIGHT * (best.meaning - reference)


def answers_question(best: Candidate, sure: float | None, language: str, calibration: Calibration) -> bool:
    """Does the best passage answer the question, or only come near it? By words alone without an embedder,
    by the embedder's thresholds with one; never with an embedder that has none (kb_index.calibration)."""
    if sure is None:
        return best.lexical >= MIN_LEXICAL
    if calibration.min_meaning is None:
        return False
    other = (best.evidence.chunk.language or language) != language
    if other and calibration.min_meaning_other is not None:
        return sure >= calibration.min_meaning_other
    return sure >= calibration.min_meaning


def select(scored: list[Candidate], language: str, calibration: Calibration) -> Selection:
    """The best passage and those close to it (at most MAX_PASSAGES), in reading order."""
    ranked = sorted(scored, key=lambda c: (-c.score, c.rank, c.position))
    if not ranked:
        return Selection([], False)
    best = ranked[0]
    if best.meaning is None:  # words alone: a share of the question, compared as a share
        floor = max(WORDS_MIN_FOLLOW, WORDS_RELATIVE_FOLLOW * best.score)
    else:
        floor = best.score - FOLLOW_MARGIN
    chosen = [best, *(c for c in ranked[1:MAX_PASSAGES] if c.score >= floor)]
    sure = confidence(best, scored)
    return Selection(sorted(chosen, key=lambda c: (c.rank, c.position)),
                     answers_question(best, sure, language, calibration), best, sure)


_LETTERS = re.compile(r"[^\W\d_]+")


def entry_words(best: Candidate, evidence: Iterable[Evidence], language: str) -> tuple[set[str], set[str]]:
    """The terms (and, in German, the compound word-pieces) of the best passage's entry:
    its title and every block of it among the evidence."""
    text = " ".join([best.evidence.chunk.title, *(e.text for e in evidence if e.entry_id == best.evidence.entry_id)])
    pieces = set(subword_terms(text, language)) if language == "de" else set()
    return set(terms(text, language)), pieces


def _mentioned(term: str, words: set[str], pieces: set[str], language: str) -> bool:
    if term in words:
        return True
    # A German word the entry holds inside a compound ("Zuschuss" in "Essenszuschuss"): the word-pieces
    # of kb_index's compound analyzer, all of them in the entry's.
    grams = [term[i:i + SUBWORD_GRAM] for i in range(len(term) - SUBWORD_GRAM + 1)]
    return language == "de" and len(term) > SUBWORD_GRAM and all(g in pieces for g in grams)


def sibling_word(question: str, best: Candidate, evidence: Sequence[Evidence], language: str,
                 vectors: Vectors) -> tuple[str, float]:
    """The question's word that the best entry does not mention and that is closest in meaning to
    the entry's title, and that closeness ("", 0.0: the entry mentions every word). Only where the
    question and the entry share a language: across languages no word is spelled the same."""
    if (best.evidence.chunk.language or language) != language:
        return "", 0.0
    words, pieces = entry_words(best, evidence, language)
    missing = []
    for word in dict.fromkeys(_LETTERS.findall(question)):
        found = terms(word, language)
        if len(word) >= MIN_SIBLING_LETTERS and found and not _mentioned(found[0], words, pieces, language):
            missing.append(word)
    if not missing:
        return "", 0.0
    closeness = vectors.queries(missing) @ vectors.queries([best.evidence.chunk.title])[0]
    i = int(np.argmax(closeness))
    return missing[i], float(closeness[i])


def choose(question: str, evidence: list[Evidence], language: str, vectors: Vectors | None = None,
           *, quotes: bool = True) -> Selection:
    """The passages for a question; a question that asks two things gets the best for each part.
    `quotes=False` leaves out any passage with a double quote."""
    # Greetings, sign-offs and links are no part of what the answer must cover.
    plain = strip_chatter(question) or question
    pool = candidates(evidence, language)
    if not quotes:
        pool = [c for c in pool if not any(ch in c.text for ch in DOUBLE_QUOTE_CHARS)]
    if not pool:
        return Selection([], False)
    parts = split_question(plain) or [plain]
    calibration = vectors.calibration if vectors is not None else UNCALIBRATED
    selections = [select(score(part, pool, language, vectors), language, calibration) for part in parts]
    if vectors is not None:
        selections = [_near_checked(s, part, evidence, language, vectors) for s, part in zip(selections, parts,
                                                                                              strict=True)]
    chosen: dict[str, Candidate] = {}
    for s in selections:
        for c in s.passages:
            chosen.setdefault(c.text, c)
    passages = sorted(chosen.values(), key=lambda c: (c.rank, c.position))[: MAX_PASSAGES * len(parts)]
    top = max(selections, key=lambda s: s.best.score if s.best is not None else -math.inf)
    return Selection(passages, any(s.answers for s in selections), top.best, top.confidence)


def near_row(s: Selection, part: str, vectors: Vectors, closeness: float) -> np.ndarray:
    """The near-topic model's input (near_topic.features) for a selection that answers by meaning, with
    the closeness of the question's word its best entry lacks (`sibling_word`)."""
    assert s.best is not None and s.confidence is not None
    return near_topic.features(vectors.queries([part])[0], vectors.passages([s.best.meaning_text or s.best.text])[0],
                               vectors.queries([s.best.evidence.chunk.title])[0], s.confidence, closeness)


def _near_checked(s: Selection, part: str, evidence: Sequence[Evidence], language: str,
                  vectors: Vectors) -> Selection:
    """A selection that answers by meaning, unless the question names a thing of its own near the entry's
    topic: the word rule says so (at the embedder's `min_sibling`), or the near-topic model where it was
    fitted on this embedder (each catches near-topic questions the other misses). The model is asked only
    where the rule lets it pass."""
    if not s.answers or s.best is None:
        return s
    word, closeness = sibling_word(part, s.best, evidence, language, vectors)
    rule = vectors.calibration.min_sibling
    by_rule = rule is not None and closeness >= rule
    model = near_topic.for_embedder(vectors.name)
    near = by_rule or (model is not None and model.near(near_row(s, part, vectors, closeness)))
    return replace(s, answers=False, sibling=word) if near else s


# ----------------------------------------------------------------- rendering


def render_citations(chosen: list[Candidate]) -> str:
    """One passage per line, each with the KB-ID of its block."""
    return "\n".join(f"- {c.text} [{c.evidence.entry_id}]" for c in chosen)


def render_claims(chosen: list[Candidate]) -> str:
    claims = [{"text": c.text, "evidence_ids": [c.evidence.pointer_id]} for c in chosen]
    return json.dumps({"claims": claims}, ensure_ascii=False)


class ExtractiveBackend:
    """A `bot.answer.backends.Backend` that quotes the knowledge base instead of asking a model.

    `vectors` embeds the question and the passages (normalised rows, cached); without them the
    pipeline hands it the retriever's embedder (`use_embedder`). None: words alone."""

    name = "extractive"
    quotes_kb = True  # its drafts are the KB's own words, verbatim: nothing in them for a judge to check
    quotes_nearest = True  # a question retrieval refused as near gets the nearest passages, marked as such
    reads_vectors = True  # chooses passages by meaning

    def __init__(self, vectors: Vectors | None = None):
        self.vectors = vectors

    def use_embedder(self, embedder: Embedder) -> None:
        """Chooses by meaning with `embedder`, cached for the backend's lifetime; vectors it was given stay."""
        if self.vectors is None:
            self.vectors = Vectors.cached(embedder)

    async def generate(self, request: GenerationRequest) -> Draft:
        # In a thread: embedding the passages takes CPU that would stall a worker's event loop.
        return await asyncio.to_thread(self.draft, request)

    def draft(self, request: GenerationRequest) -> Draft:
        claims = request.mode == AnswerMode.CLAIMS
        # The claims rules reject a claim that quotes (MANUAL_QUOTE_VIOLATION):
        # a claim states a fact in its own words, so quoting passages are skipped.
        selection = choose(request.question, request.evidence, request.language, self.vectors, quotes=not claims)
        if not selection.passages:
            refusal = message(Key.REFUSAL, request.language)
            return Draft(text=refusal, model=self.name, raw=refusal)
        text = render_claims(selection.passages) if claims else render_citations(selection.passages)
        if request.nearest_only:  # retrieval judged the question near, not answerable: said so
            return Draft(text=text, model=self.name, raw=text, lead=message(Key.EXTRACTIVE_NEAR, request.language),
                         not_covered=[request.question])
        # The lead says what the passages are, not that they answer: this backend's own near-topic reading
        # cannot tell a right answer from a near one well enough to say so (docs/DESIGN.md 3.6), so it goes to
        # the gaps report (`not_covered`) and not into a hedge over most right answers.
        near = [] if selection.answers else [request.question]
        return Draft(text=text, model=self.name, raw=text, lead=message(Key.EXTRACTIVE_LEAD, request.language),
                     not_covered=near)

    async def aclose(self) -> None:
        pass
