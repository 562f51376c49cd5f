"""Fits the extractive backend's near-topic model (bot/answer/near_topic.py) and chooses its threshold.

    python bench/extractive/near_model.py [--leave-out K] [--write]

Reads the labelled sets that are spent (run.TUNED_SETS and the third, all halves; the fourth
is not read): for every question retrieval lets through, every part of it that the backend's
meaning test says is answered, one row of `near_topic.features`, labelled near-topic (a near-
or off-topic question) or not. A logistic regression (L2, standardised inputs, plain gradient
descent: no library beyond numpy) is fitted on them.

The backend marks a row when the model or the word rule (the embedder's min_sibling) says
near-topic: each misses near-topic questions the other catches. The threshold is chosen
without scoring a row with the weights it was fitted on: each knowledge base's rows are
scored by a model fitted on the others, and the threshold is the score of the K-th lowest
near-topic row, with K (up to MAX_LEAVE_OUT) where one near-topic row fewer left unmarked
by model and rule together costs the most answerable rows marked: the knee of the curve
(--leave-out K sets it). Printed: that curve, then what the model fitted on every row
marks. --write saves it to bot/answer/near_topic.npz.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from run import CACHE, SETS, TUNED_SETS  # noqa: E402
from tune import gather  # noqa: E402

from bot.answer import extractive, near_topic  # noqa: E402
from kb_index.embedding import LocalE5Embedder  # noqa: E402
from kb_index.question.chatter import strip_chatter  # noqa: E402
from kb_index.question.parts import split_question  # noqa: E402
from kb_index.vector_store import StoredEmbedder, VectorStore  # noqa: E402

FIT_SETS = [*TUNED_SETS, "third"]  # spent: their test halves were read. The fourth stays out.
L2 = 0.01  # with each knowledge base left out in turn: 0.01 to 0.1 mark alike, 0.001 and 1.0 worse
STEPS = 1500
RATE = 0.2
MAX_LEAVE_OUT = 8


def rows(items, vectors: extractive.Vectors) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The model's rows, as the backend builds them (extractive.choose, near_row), their labels and knowledge bases."""
    out, labels, kbs = [], [], []
    for it in items:
        if not it.passed:
            continue
        plain = strip_chatter(it.q) or it.q
        pool = extractive.candidates(it.evidence, it.language)
        for part in split_question(plain) or [plain]:
            s = extractive.select(extractive.score(part, pool, it.language, vectors), it.language, vectors.calibration)
            if s.answers and s.best is not None:
                _, closeness = extractive.sibling_word(part, s.best, it.evidence, it.language, vectors)
                out.append(extractive.near_row(s, part, vectors, closeness))
                labels.append(it.kind != "answerable")
                kbs.append(it.kb)
    return np.array(out), np.array(labels), kbs


def fit(x: np.ndarray, y: np.ndarray, embedder: str) -> near_topic.NearTopicModel:
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / scale
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        w -= RATE * (z.T @ (p - y) / len(y) + L2 * w)
        b -= RATE * float(np.mean(p - y))
    return near_topic.NearTopicModel(embedder, mean, scale, w, b, threshold=0.0)


def left_out_scores(x: np.ndarray, y: np.ndarray, kbs: list[str], embedder: str) -> np.ndarray:
    scores = np.zeros(len(y))
    for kb in sorted(set(kbs)):
        held = np.array([k == kb for k in kbs])
        model = fit(x[~held], y[~held], embedder)
        scores[held] = [model.score(row) for row in x[held]]
    return scores


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leave-out", type=int, help="near-topic rows the threshold may leave unmarked (default: the knee)")
    ap.add_argument("--write", action="store_true", help="save the model to bot/answer/near_topic.npz")
    args = ap.parse_args(argv)
    embedder = StoredEmbedder(LocalE5Embedder(), VectorStore(CACHE))
    vectors = extractive.Vectors.cached(embedder)
    items = gather(embedder, [kb for name in FIT_SETS for kb in SETS[name]], "all")
    x, y, kbs = rows(items, vectors)
    print(f"{len(y)} rows the meaning test says are answered ({int(y.sum())} near- or off-topic) "
          f"from {len(items)} questions of {len(set(kbs))} knowledge bases")
    scores = left_out_scores(x, y, kbs, embedder.name)
    min_sibling = vectors.calibration.min_sibling
    rule = np.array([row[-1] >= min_sibling for row in x])  # the last feature: the sibling's closeness
    print(f"the word rule alone (min_sibling {min_sibling}): {int((~rule & y).sum())} near-topic rows "
          f"left unmarked, {int((rule & ~y).sum())} answerable rows marked")
    print("each knowledge base scored by a model fitted on the others, with the word rule: threshold at the K-th "
          "lowest near-topic row -> near-topic rows left unmarked, answerable rows marked")
    near = np.sort(scores[y])
    curve = []
    for k in range(MAX_LEAVE_OUT + 1):
        marked = (scores >= near[k]) | rule
        curve.append((int((~marked & y).sum()), int((marked & ~y).sum())))
        print(f"  K={k}: {curve[-1][0]:2d} left unmarked, {curve[-1][1]:3d} of {int((~y).sum())} marked")
    knee = max(range(1, MAX_LEAVE_OUT + 1), key=lambda k: curve[k - 1][1] - curve[k][1])
    leave_out = knee if args.leave_out is None else args.leave_out
    threshold = float(near[leave_out])
    print(f"threshold: K={leave_out}" + (" (the knee)" if leave_out == knee else ""))
    model = fit(x, y, embedder.name)
    model = near_topic.NearTopicModel(model.embedder, model.mean, model.scale, model.weights, model.bias, threshold)
    fitted = np.array([model.near(row) for row in x]) | rule
    print(f"threshold {threshold:.4f}; fitted on every row, with the word rule it leaves {int((~fitted & y).sum())} "
          f"near-topic rows unmarked and marks {int((fitted & ~y).sum())} answerable ones (rows it was fitted on)")
    if args.write:
        model.save()
        print(f"written: {near_topic.MODEL_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
