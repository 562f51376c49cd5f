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
  cross-language questions. Its scale belongs to the embedding model, so its
  threshold is kept with the model's name (CALIBRATIONS) and can be set for
  another model (`min_cosine`).
- **coverage**: the share of the question's idf mass that the best BM25 hit
  contains, with words the KB has never seen counted at the KB's median idf
  (not as the rarest word there is: an unseen word is more often chatter or
  context — "Zweitjob", "Hamburg" — than the topic).

Thresholds were chosen on the tuning half of tests/data/answerability.yaml and
reported on the other half by bench/answerability.py; see that script's
--calibrate for a team with another embedding model.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Calibration:
    """Thresholds for one embedding model (or for BM25 alone)."""

    min_cosine: float | None  # None: this model's cosines are not calibrated; ranking only
    # With a calibrated embedder, lexical coverage this high passes a question on its own:
    # an exact-term question ("§ 3 EFZG?") the embedding does not place well.
    strong_coverage: float


# Coverage a question needs when there is no calibrated embedder. Low on
# purpose: words alone cannot tell "phrased differently" (or asked in the other
# language) from "off-topic", and a wrong refusal is never corrected later.
# Tune half: 1.7 % of answerable questions below it, 12 % of off-topic ones.
BM25_MIN_COVERAGE = 0.16
# Coverage that passes a question whatever the embedding says (off-topic
# questions on the tune half reach at most 0.78).
STRONG_COVERAGE = 0.8

# Keyed by a normalised model name (see `model_key`). The value is the highest
# threshold that refuses at most 1 % of the answerable questions of the tune
# half of tests/data/answerability.yaml (bench/answerability.py --calibrate).
CALIBRATIONS: dict[str, Calibration] = {
    "multilingual-e5-small": Calibration(min_cosine=0.81, strong_coverage=STRONG_COVERAGE),
}
UNCALIBRATED = Calibration(min_cosine=None, strong_coverage=BM25_MIN_COVERAGE)


def model_key(name: str) -> str:
    """'intfloat/multilingual-e5-small', 'multilingual-e5-small-q4', 'e5:latest' -> a lookup key."""
    key = name.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return re.sub(r"[-_.](q\d.*|gguf|f16|f32|int8|fp16)$", "", key)


def calibration_for(model: str | None, min_cosine: float | None = None) -> Calibration:
    """The thresholds for `model` (None: no embedder); `min_cosine` overrides the table."""
    base = CALIBRATIONS.get(model_key(model), UNCALIBRATED) if model else UNCALIBRATED
    if min_cosine is not None:
        return Calibration(min_cosine=min_cosine, strong_coverage=STRONG_COVERAGE)
    return base


@dataclass(frozen=True)
class Answerability:
    """The decision, its deciding score and a reason a person can read."""

    answerable: bool
    score: float  # the deciding signal: a cosine, or a coverage share
    threshold: float
    signal: str  # "cosine" or "coverage"
    reason: str
    cosine: float | None = None  # best cosine over the parts (None: no embedder)
    coverage: float = 0.0  # best coverage over the parts
    part: str = ""  # the (part of the) question the decision rests on
    entry_id: str | None = None  # the closest entry

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PartSignals:
    text: str
    cosine: float | None
    cosine_entry: str | None
    coverage: float
    coverage_entry: str | None


def decide(parts: list[PartSignals], calibration: Calibration) -> Answerability:
    """Answerable when any part clears a threshold; otherwise the closest miss explains the refusal."""
    if not parts:
        return Answerability(False, 0.0, 0.0, "coverage", "the question has no words to search for")
    best_cos = max(parts, key=lambda p: -1.0 if p.cosine is None else p.cosine)
    best_cov = max(parts, key=lambda p: p.coverage)
    cosine = best_cos.cosine
    min_cosine = calibration.min_cosine
    coverage = round(best_cov.coverage, 4)

    if cosine is not None and min_cosine is not None and cosine >= min_cosine:
        return Answerability(
            True, round(cosine, 4), min_cosine, "cosine",
            f"close to [{best_cos.cosine_entry}]: cosine {cosine:.3f} >= {min_cosine:.2f}",
            part=best_cos.text, entry_id=best_cos.cosine_entry, cosine=cosine, coverage=coverage,
        )
    if best_cov.coverage >= calibration.strong_coverage:
        return Answerability(
            True, round(best_cov.coverage, 4), calibration.strong_coverage, "coverage",
            f"[{best_cov.coverage_entry}] holds {best_cov.coverage:.0%} of the question's words "
            f"(>= {calibration.strong_coverage:.0%})",
            part=best_cov.text, entry_id=best_cov.coverage_entry, cosine=cosine, coverage=coverage,
        )
    if cosine is not None and min_cosine is not None:
        return Answerability(
            False, round(cosine, 4), min_cosine, "cosine",
            f"nothing close: best cosine {cosine:.3f} < {min_cosine:.2f} "
            f"([{best_cos.cosine_entry}]), word coverage {best_cov.coverage:.0%}",
            part=best_cos.text, entry_id=best_cos.cosine_entry, cosine=cosine, coverage=coverage,
        )
    return Answerability(
        False, round(best_cov.coverage, 4), calibration.strong_coverage, "coverage",
        f"no section holds enough of the question's words: best {best_cov.coverage:.0%} "
        f"< {calibration.strong_coverage:.0%}"
        + (f" ([{best_cov.coverage_entry}])" if best_cov.coverage_entry else ""),
        part=best_cov.text, entry_id=best_cov.coverage_entry, cosine=cosine, coverage=coverage,
    )
