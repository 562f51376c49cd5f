"""Does the best passage's entry answer the question as asked, or only share its topic?

A question like "Can I lease a job bike?" lands on the company-car entry: close in meaning,
and about something else. The embedder's cosine alone cannot tell the two apart (both
are close), and neither can one word's cosine with the entry's title. This is a small
logistic model that reads the question and the passage together, in the embedder's own
space: the element-wise product and distance of the question's and the best passage's
vectors, the product of the question's and the entry title's, the passage's confidence
(extractive.confidence) and the closeness of the question's word the entry lacks
(extractive.sibling_word). The backend marks a question when this model or the word rule
(`min_sibling` of the embedder's record, kb_index.calibration) says near-topic: each catches
some the other misses.

Fitted by bench/extractive/near_model.py on the spent labelled sets of bench/extractive/ (the
first three of its five sets: seven of its eleven knowledge bases, of other companies than the
sample's, German and English), its threshold chosen with each knowledge base left out of the fit
in turn. The weights belong to the embedder they were fitted with (`NearTopicModel.embedder`, its
exact name: another quantisation of the same model is other vectors); with another embedder the
word rule decides alone, where the embedder's record has one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

MODEL_PATH = Path(__file__).with_name("near_topic.npz")
log = logging.getLogger(__name__)


def features(question: np.ndarray, passage: np.ndarray, title: np.ndarray, confidence: float,
             sibling: float) -> np.ndarray:
    """One row of the model's input: `question` and `title` embedded as queries, `passage` as a passage."""
    return np.concatenate([question * passage, np.abs(question - passage), question * title, [confidence, sibling]])


@dataclass(frozen=True)
class NearTopicModel:
    embedder: str  # the embedder's name (kb_index.embedding): its vectors are what the weights read
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float  # a score at or above it: near-topic

    def score(self, row: np.ndarray) -> float:
        return float(((row - self.mean) / self.scale) @ self.weights + self.bias)

    def near(self, row: np.ndarray) -> bool:
        return self.score(row) >= self.threshold

    def save(self, path: Path = MODEL_PATH) -> None:
        np.savez_compressed(path, embedder=np.array(self.embedder), mean=self.mean, scale=self.scale,
                            weights=self.weights, bias=np.array(self.bias), threshold=np.array(self.threshold))


@cache
def load(path: Path = MODEL_PATH) -> NearTopicModel | None:
    """The fitted model, or None where it was not shipped (said once: the word rule then decides alone)."""
    if not path.exists():
        log.warning("near-topic model %s missing: near-topic questions are marked by the word rule alone", path)
        return None
    with np.load(path) as f:
        return NearTopicModel(str(f["embedder"]), f["mean"], f["scale"], f["weights"], float(f["bias"]),
                              float(f["threshold"]))


def for_embedder(name: str) -> NearTopicModel | None:
    """The model, where it was fitted with the embedder called `name`."""
    model = load()
    return model if model is not None and name and model.embedder == name else None
