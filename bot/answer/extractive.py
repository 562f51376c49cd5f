"""The extractive backend: answers without a model.

It picks the sentences of the top evidence blocks that best match the question
and cites each one. Sentences are copied verbatim (only line breaks inside a
sentence become spaces), so every number and quotation in the answer is in the
block it cites and the verifiers pass them as they would a model's draft. In
claims mode sentences with a quotation are left out, because the claims rules
reject quoting claims. Nothing matches the question: the refusal sentence.
Deterministic: the same request gives the same draft.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from bot.answer.verify.claims import DEFAULT_ALLOWED_ROLES
from bot.answer.verify.text import DOUBLE_QUOTE_CHARS
from bot.i18n import Key, message
from bot.models import AnswerMode, Draft, Evidence, GenerationRequest
from kb_index import markdown
from kb_index.analysis import terms
from kb_index.question.chatter import strip_chatter
from kb_index.question.parts import split_question
from kb_index.sentences import sentences

MAX_BLOCKS = 5  # beyond the top few blocks retrieval is mostly noise
MAX_SENTENCES = 4  # a Slack answer, not a report
# A further sentence must score at least this share of the best one, and at
# least MIN_SCORE absolute: past that it answers a different question.
RELATIVE_CUTOFF = 0.5
MIN_SCORE = 0.2
# The best sentence must cover this share of the question, or the backend
# refuses: without a model to judge, a sentence that shares one word with the
# question ("Berlin" in "weather in Berlin tomorrow?") is not an answer.
# Tune half of tests/data/answerability.yaml, after retrieval's gate: at 0.25
# the backend answers 37 % of answerable questions from a right entry and 16 %
# of off-topic ones; with no floor, 68 % and 52 %.
MIN_ANSWER_SCORE = 0.25
RANK_DECAY = 0.1  # each lower-ranked block counts 10 % less
# German compounds: a question stem inside a longer sentence stem
# ("teilzeit" in "altersteilzeit") is a match, but a weaker one.
COMPOUND_WEIGHT = 0.5
MIN_COMPOUND_STEM = 4
MIN_WORDS = 3  # shorter lines are labels ("Details", "Ja."), not statements

# ----------------------------------------------------------------- markdown

# "Stand: 2026-01", "Zuständig: Personalabteilung": a label with its value, not a statement.
_META = re.compile(r"[^\W\d][\w ./()&-]{0,30}:\s*\S")
_BOLD_LABEL = re.compile(r"(?:\*\*[^*]+\*\*|__[^_]+__):?$")


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


# ----------------------------------------------------------------- scoring


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    evidence: Evidence
    rank: int  # position of its block among those considered, 0 = best
    position: int  # order within the block
    terms: frozenset[str]
    score: float = 0.0


def candidates(evidence: Iterable[Evidence], language: str) -> list[Candidate]:
    found: list[Candidate] = []
    seen: set[str] = set()
    # Background material may not back an answer (the claims verifier blocks
    # its role), so it is never quoted.
    usable = [e for e in evidence if e.source_role in DEFAULT_ALLOWED_ROLES][:MAX_BLOCKS]
    for rank, ev in enumerate(usable):
        position = 0
        for unit in prose_units(ev.text):
            for sentence in sentences(unit, language):
                # Cross-ref expansions repeat text; quote it once, from the better block.
                if len(sentence.split()) < MIN_WORDS or sentence in seen:
                    continue
                seen.add(sentence)
                found.append(Candidate(sentence, ev, rank, position, frozenset(terms(sentence, language))))
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


def score(question_terms: set[str], pool: list[Candidate], language: str) -> list[Candidate]:
    """`pool` with scores: the weighted share of the question each sentence covers.

    A term that few sentences contain says more about which one answers
    (idf within the evidence), and sentences from better-ranked blocks win ties.
    """
    matches = [{t: _match(t, c.terms, language) for t in question_terms} for c in pool]
    weight = {}
    for t in question_terms:
        df = sum(1 for m in matches if m[t] > 0)
        weight[t] = math.log(1 + (len(pool) + 1) / (df + 1))
    total = sum(weight.values())
    return [
        replace(c, score=sum(weight[t] * v for t, v in m.items()) / total * (1 - RANK_DECAY * c.rank))
        for c, m in zip(pool, matches, strict=True)
    ]


def select(scored: list[Candidate]) -> list[Candidate]:
    """The best sentences, in reading order; empty when nothing overlaps."""
    ranked = sorted(scored, key=lambda c: (-c.score, c.rank, c.position))
    if not ranked or ranked[0].score < MIN_ANSWER_SCORE:
        return []
    floor = max(MIN_SCORE, RELATIVE_CUTOFF * ranked[0].score)
    chosen = [ranked[0]]
    for c in ranked[1:MAX_SENTENCES]:
        if c.score < floor:
            break
        chosen.append(c)
    return sorted(chosen, key=lambda c: (c.rank, c.position))


def best_sentences(
    question: str, evidence: list[Evidence], language: str, *, quotes: bool = True
) -> list[Candidate]:
    """The sentences to answer with; `quotes=False` leaves out any with a double quote."""
    # Greetings, sign-offs and links are no part of what the answer must cover.
    question_terms = set(terms(strip_chatter(question), language))
    pool = candidates(evidence, language)
    if not quotes:
        pool = [c for c in pool if not any(ch in c.text for ch in DOUBLE_QUOTE_CHARS)]
    if not question_terms or not pool:
        return []
    return select(score(question_terms, pool, language))


def _per_part(question: str, evidence: list[Evidence], language: str, *, quotes: bool) -> list[Candidate]:
    """The sentences for each part of a question that asks two things, each sentence once, in reading order.

    Scored against the whole message, the second question's words dilute the
    first's: each part gets its own sentences, or none when nothing covers it.
    """
    parts = split_question(strip_chatter(question)) or [question]
    chosen: dict[str, Candidate] = {}
    for part in parts:
        for c in best_sentences(part, evidence, language, quotes=quotes):
            chosen.setdefault(c.text, c)
    return sorted(chosen.values(), key=lambda c: (c.rank, c.position))


# ----------------------------------------------------------------- rendering


def render_citations(chosen: list[Candidate]) -> str:
    return " ".join(f"{c.text} [{c.evidence.entry_id}]" for c in chosen)


def render_claims(chosen: list[Candidate]) -> str:
    claims = [{"text": c.text, "evidence_ids": [c.evidence.pointer_id]} for c in chosen]
    return json.dumps({"claims": claims}, ensure_ascii=False)


class ExtractiveBackend:
    """A `bot.answer.backends.Backend` that quotes the knowledge base instead of asking a model."""

    name = "extractive"

    async def generate(self, request: GenerationRequest) -> Draft:
        text = self.answer(request)
        return Draft(text=text, model=self.name, raw=text)

    def answer(self, request: GenerationRequest) -> str:
        claims = request.mode == AnswerMode.CLAIMS
        # The claims rules reject a claim that quotes (MANUAL_QUOTE_VIOLATION):
        # a claim states a fact in its own words, so quoting sentences are skipped.
        chosen = _per_part(request.question, request.evidence, request.language, quotes=not claims)
        if not chosen:
            return message(Key.REFUSAL, request.language)
        if claims:
            return render_claims(chosen)
        return render_citations(chosen)

    async def aclose(self) -> None:
        pass
