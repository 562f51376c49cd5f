"""Is a question answerable from what retrieval found? A question-level decision, apart from ranking.

Ranking never drops a hit; this decides whether the question goes to the
model at all. Refusing before the model is for questions plainly outside the
knowledge base ("weather in Berlin?", "who is the CEO?" when no page says).
Anything in between goes to the model, whose prompt tells it to say when the
blocks do not answer, and whose refusal the verifier recognises: a wrong
refusal here is never corrected later, a doubtful pass is.

Two signals, each measured on the question without chatter and per part of a
two-topic question (the question is answerable when any part is):

- **cosine**: the best cosine between the question's embedding and any chunk
  the caller may search. Meaning, not wording: it carries paraphrase and
  cross-language questions. A small multilingual model rates a question lower
  against a page in another language than against one in its own, whatever
  the topic, so chunks in the question's language and in other languages have
  a threshold each. Their scale belongs to the embedding model, so they are
  kept in its record (kb_index.calibration, which the extractive backend
  reads too) and can be set for another model (`min_cosine`, then one
  threshold for both).
- **coverage**: the share of the question's idf mass that the best BM25 hit
  contains, with words the KB has never seen counted at the KB's median idf
  (not as the rarest word there is: an unseen word is more often chatter or
  context — "Zweitjob", "Hamburg" — than the topic).

Thresholds were chosen on the tuning half of tests/data/answerability.yaml and
reported on the other half by bench/answerability.py; see that script's
--calibrate for a team with another embedding model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

# CALIBRATIONS and model_key are imported from here by bench/answerability.py.
from kb_index.calibration import (
    CALIBRATIONS as CALIBRATIONS,
    STRONG_COVERAGE,
    Calibration,
    for_embedder,
    model_key as model_key,
)

# A refused question whose closest chunk comes within this of its threshold is `near`: the extractive backend
# quotes the nearest passages under the line that the knowledge base may not answer the question as asked.
NEAR_MARGIN = 0.04  # answerable questions refused came 0.029 under at most (docs/benchmarks.md, "Answerability")


def calibration_for(model: str | None, min_cosine: float | None = None) -> Calibration:
    """The record of `model` (None: no embedder; kb_index.calibration); `min_cosine` (CITEBOT_MIN_COSINE)
    overrides its cosine thresholds, one for both language pairs."""
    base = for_embedder(model)
    if min_cosine is not None:
        return replace(base, min_cosine=min_cosine, min_cosine_other=min_cosine, strong_coverage=STRONG_COVERAGE)
    return base


@dataclass(frozen=True)
class Answerability:
    """The decision, its deciding score and a reason a person can read."""

    answerable: bool
    score: float  # the deciding signal: a cosine, or a coverage share
    threshold: float
    signal: str  # "cosine" or "coverage"
    reason: str
    cosine: float | None = None  # best cosine with a chunk in the question's language, over the parts
    cosine_other: float | None = None  # best cosine with a chunk in another language
    coverage: float = 0.0  # best coverage over the parts
    part: str = ""  # the (part of the) question the decision rests on
    entry_id: str | None = None  # the closest entry
    near: bool = False  # refused, but within NEAR_MARGIN of the threshold (see there)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PartSignals:
    text: str
    cosine: float | None  # best over chunks in the question's language (None: no embedder, or none there)
    cosine_entry: str | None
    coverage: float
    coverage_entry: str | None
    cosine_other: float | None = None  # best over chunks in other languages
    cosine_other_entry: str | None = None


@dataclass(frozen=True)
class _Closest:
    """A part's closest chunk, measured against the threshold of its language pair."""

    part: str
    cosine: float
    entry: str | None
    threshold: float
    other_language: bool

    @property
    def margin(self) -> float:
        return self.cosine - self.threshold


def _closest(parts: list[PartSignals], calibration: Calibration) -> _Closest | None:
    """The chunk that comes nearest to (or furthest past) its threshold, over all parts."""
    if calibration.min_cosine is None:
        return None
    other = calibration.min_cosine_other if calibration.min_cosine_other is not None else calibration.min_cosine
    found = [
        _Closest(p.text, c, e, t, o)
        for p in parts
        for c, e, t, o in ((p.cosine, p.cosine_entry, calibration.min_cosine, False),
                           (p.cosine_other, p.cosine_other_entry, other, True))
        if c is not None
    ]
    return max(found, key=lambda c: c.margin) if found else None


def decide(parts: list[PartSignals], calibration: Calibration) -> Answerability:
    """Answerable when any part clears a threshold; otherwise the closest miss explains the refusal."""
    if not parts:
        return Answerability(False, 0.0, 0.0, "coverage", "the question has no words to search for")
    closest = _closest(parts, calibration)
    best_cov = max(parts, key=lambda p: p.coverage)
    cosine = _best(p.cosine for p in parts)
    cosine_other = _best(p.cosine_other for p in parts)
    coverage = round(best_cov.coverage, 4)

    if closest is not None and closest.margin >= 0:
        where = " (a page in another language)" if closest.other_language else ""
        return Answerability(
            True, round(closest.cosine, 4), closest.threshold, "cosine",
            f"close to [{closest.entry}]{where}: cosine {closest.cosine:.3f} >= {closest.threshold:.2f}",
            part=closest.part, entry_id=closest.entry, cosine=cosine, cosine_other=cosine_other, coverage=coverage,
        )
    if best_cov.coverage >= calibration.strong_coverage:
        return Answerability(
            True, round(best_cov.coverage, 4), calibration.strong_coverage, "coverage",
            f"[{best_cov.coverage_entry}] holds {best_cov.coverage:.0%} of the question's words "
            f"(>= {calibration.strong_coverage:.0%})",
            part=best_cov.text, entry_id=best_cov.coverage_entry, cosine=cosine, cosine_other=cosine_other, coverage=coverage,
        )
    if closest is not None:
        where = ", a page in another language" if closest.other_language else ""
        near = closest.margin >= -NEAR_MARGIN
        return Answerability(
            False, round(closest.cosine, 4), closest.threshold, "cosine",
            f"nothing close{' enough' if near else ''}: nearest cosine {closest.cosine:.3f} < {closest.threshold:.2f} "
            f"([{closest.entry}]{where}), word coverage {best_cov.coverage:.0%}",
            part=closest.part, entry_id=closest.entry, cosine=cosine, cosine_other=cosine_other, coverage=coverage,
            near=near,
        )
    return Answerability(
        False, round(best_cov.coverage, 4), calibration.strong_coverage, "coverage",
        f"no section holds enough of the question's words: best {best_cov.coverage:.0%} "
        f"< {calibration.strong_coverage:.0%}"
        + (f" ([{best_cov.coverage_entry}])" if best_cov.coverage_entry else ""),
        part=best_cov.text, entry_id=best_cov.coverage_entry, cosine=cosine, cosine_other=cosine_other, coverage=coverage,
    )


def _best(values) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None
