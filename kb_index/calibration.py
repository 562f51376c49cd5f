"""The thresholds that read one embedder's cosines: one record per embedder, read by every decision that uses them.

A cosine's scale belongs to the model that made the vectors: what is close for multilingual-e5-small is not
what is close for another model. Two decisions compare cosines with thresholds, and both take them from the
embedder's record here:

- answerability (kb_index/answerability.py): does the knowledge base cover the question at all
  (`min_cosine`, `min_cosine_other`; `strong_coverage`, the word coverage that passes a question whatever
  the embedding says);
- the extractive backend (bot/answer/extractive.py): does the best passage answer the question as asked
  (`min_meaning`, `min_meaning_other`), or does the question name a thing of its own that the best entry lacks
  (`min_sibling`).

Records are keyed by `model_key` of the embedder's name (`Embedder.name`, which the index stores with its
vectors): the quantised and served forms of one model share its record.

An embedder without a record gets `UNCALIBRATED`, and a threshold on a scale nobody measured decides nothing:

- answerability: the cosine ranks but does not refuse; word coverage decides, leniently, until
  CITEBOT_MIN_COSINE sets a threshold for the model;
- the extractive backend: the passages are still chosen by meaning and words (an order, which needs no scale),
  but always come under the line that the knowledge base may not answer the question as asked. A threshold
  on an unknown scale errs one of two ways: too high, and everything is hedged anyway; too low, and a
  neighbouring topic's passages are posted as the answer. Hedging keeps the passages (never a refusal, so no
  false "does not cover") and never presents them as the answer; its price is that each such question also
  goes to the gaps report. The word rule is off (`min_sibling` None), and the near-topic model reads only the
  embedder it was fitted on (bot/answer/near_topic.py).

The decisions behind the values: docs/DESIGN.md (sections 3.6 and 3.7); their measurements: docs/benchmarks.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    """The thresholds fitted on one embedder's cosines (none: `UNCALIBRATED`)."""

    # Answerability.
    min_cosine: float | None  # None: this model's cosines are not calibrated; ranking only
    min_cosine_other: float | None  # for chunks in another language than the question's
    # With a calibrated embedder, lexical coverage this high passes a question on its own:
    # an exact-term question ("§ 3 EFZG?") the embedding does not place well.
    strong_coverage: float
    # The extractive backend.
    min_meaning: float | None = None  # the best passage's confidence that answers; None: no confidence does
    min_meaning_other: float | None = None  # for a passage in another language (None: min_meaning)
    min_sibling: float | None = None  # the lacking word's closeness to the entry's title that marks; None: no rule


# Coverage a question needs with no calibrated embedder: words alone cannot tell "phrased differently" from
# "off-topic", and a wrong refusal is never corrected later.
BM25_MIN_COVERAGE = 0.16  # tune half: 1.7 % of answerable questions below (docs/benchmarks.md, "Answerability")
STRONG_COVERAGE = 0.8  # off-topic questions of the tune half reach 0.78 (docs/benchmarks.md, "Answerability")

# multilingual-e5-small, fitted on its 4-bit form (the in-process embedder, `LocalE5Embedder`).
MULTILINGUAL_E5_SMALL = Calibration(
    min_cosine=0.83,  # the pair refuses no answerable question of its tune half (docs/benchmarks.md, "Answerability")
    min_cosine_other=0.79,  # a small multilingual model rates any pair across languages lower
    strong_coverage=STRONG_COVERAGE,
    min_meaning=0.878,  # marks every near-topic question of the tune halves (docs/benchmarks.md, "Extractive backend")
    min_meaning_other=0.873,  # the same across languages, where the embedder alone decides (ibid.)
    min_sibling=0.83,  # marks every near-topic question meaning let through (docs/benchmarks.md, "Extractive backend")
)

CALIBRATIONS: dict[str, Calibration] = {"multilingual-e5-small": MULTILINGUAL_E5_SMALL}
UNCALIBRATED = Calibration(min_cosine=None, min_cosine_other=None, strong_coverage=BM25_MIN_COVERAGE)


def model_key(name: str) -> str:
    """'intfloat/multilingual-e5-small', 'multilingual-e5-small-q4', 'e5:latest' -> a lookup key."""
    key = name.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return re.sub(r"[-_.](q\d.*|gguf|f16|f32|int8|fp16)$", "", key)


def for_embedder(name: str | None) -> Calibration:
    """The record of the embedder called `name`; UNCALIBRATED for one without a record, or for no embedder."""
    return CALIBRATIONS.get(model_key(name), UNCALIBRATED) if name else UNCALIBRATED
