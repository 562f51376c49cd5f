"""Chooses the extractive backend's weights and thresholds on the tune half, and only there.

    python bench/extractive/tune.py [--cases] [--grid] [--standout] [--siblings]

Retrieval runs once per question (as the pipeline runs it: answerability, the blocks
that fit the prompt budget); then each setting of the weights is tried on the same
blocks, without the verifiers (bench/extractive/run.py runs the whole pipeline).
Printed per setting: answerable questions whose best passage is from a right entry
and said to answer the question, answerable ones marked near-topic, and near- and
off-topic questions that passed retrieval but were not marked. `--cases` prints each
tune question's features under the current constants. The near-topic model
(bot/answer/near_topic.py, fitted by near_model.py) is left out here: the vectors
carry the embedder's thresholds (kb_index.calibration) but not its name, so the
word rule alone marks what meaning lets through.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from run import CACHE, DEFAULT_BUDGET_CHARS, DEFAULT_TOP_K, KBS, SETS, TUNED_SETS, kind, load_questions  # noqa: E402

from bot.answer import extractive  # noqa: E402
from bot.answer.prompt import build_evidence, trim_to_budget  # noqa: E402
from bot.answer.vector_cache import VectorCache  # noqa: E402
from bot.models import Evidence  # noqa: E402
from kb_index import Retriever, build_index  # noqa: E402
from kb_index.analysis import guess_language  # noqa: E402
from kb_index.calibration import for_embedder  # noqa: E402
from kb_index.embedding import LocalE5Embedder  # noqa: E402
from kb_index.vector_store import StoredEmbedder, VectorStore  # noqa: E402


@dataclass
class Item:
    kb: str
    q: str
    language: str
    kind: str
    expect: set[str]
    passed: bool  # retrieval's answerability let it through
    evidence: list[Evidence]


def gather(embedder, names: list[str], split: str = "tune") -> list[Item]:
    items = []
    for kb_path in (KBS / name for name in names):
        with tempfile.TemporaryDirectory() as tmp:
            index = Path(tmp) / "index"
            build_index(kb_path / "kb", index, language="en", embedder=embedder)
            with Retriever(index, embedder=embedder) as retriever:
                for q in load_questions(kb_path.name, split):
                    language = guess_language(q["q"], default="en")
                    found = retriever.retrieve(q["q"], k=DEFAULT_TOP_K)
                    evidence = build_evidence(trim_to_budget(found.hits, DEFAULT_BUDGET_CHARS - len(q["q"])))
                    k = kind(q)
                    items.append(Item(kb_path.name, q["q"], language, k, set(q["expect"]) if k == "answerable" else set(),
                                      bool(found.answerability.answerable and found.hits), evidence))
    return items


def evaluate(items: list[Item], embed) -> dict[str, int]:
    out = {"ans": 0, "right": 0, "ans_marked": 0, "wrong_entry": 0, "near": 0, "near_unmarked": 0}
    # The bests' cosines, for the thresholds: (answerable?, across languages?, cosine).
    out["bests"] = []  # type: ignore[assignment]
    for it in items:
        if not it.passed:
            continue
        sel = extractive.choose(it.q, it.evidence, it.language, embed)
        cited = {c.evidence.entry_id for c in sel.passages}
        if sel.best is not None and sel.confidence is not None:
            other = (sel.best.evidence.chunk.language or it.language) != it.language
            out["bests"].append((it.kind == "answerable", other, sel.confidence))  # type: ignore[attr-defined]
        if it.kind == "answerable":
            out["ans"] += 1
            right = bool(cited & it.expect)
            out["right"] += right and sel.answers
            out["ans_marked"] += not sel.answers
            out["wrong_entry"] += not right
        else:
            out["near"] += 1
            out["near_unmarked"] += sel.answers
    return out


def show_cases(items: list[Item], embed) -> None:
    for it in items:
        if not it.passed:
            print(f"[{it.kind:10s}] refused by retrieval: {it.q}")
            continue
        sel = extractive.choose(it.q, it.evidence, it.language, embed)
        b = sel.best
        cited = [c.evidence.entry_id for c in sel.passages]
        ok = bool(set(cited) & it.expect) if it.kind == "answerable" else None
        print(f"[{it.kind:10s}] answers={sel.answers!s:5s} right={ok!s:5s} cos={b.meaning:.3f} lex={b.lexical:.2f} "
              f"{it.language}-{b.evidence.chunk.language} {it.q}")
        for c in sel.passages:
            print(f"      {c.score:.3f} {c.meaning:.3f} {c.lexical:.2f} [{c.evidence.entry_id}] {c.text[:110]}")


def siblings(items: list[Item], embed) -> None:
    """min_sibling: for the questions that meaning alone says are answered, the question's word the best
    entry does not mention that is closest to the entry's title (same language only), by kind."""
    found: list[tuple[float, str, str, str]] = []
    meaning_alone = replace(embed, calibration=replace(embed.calibration, min_sibling=None))
    for it in items:
        if not it.passed:
            continue
        sel = extractive.choose(it.q, it.evidence, it.language, meaning_alone)
        if sel.answers and sel.best is not None:
            word, closeness = extractive.sibling_word(it.q, sel.best, it.evidence, it.language, embed)
            found.append((closeness, it.kind, word, it.q))
    for closeness, k, word, q in sorted(found):
        print(f"   {closeness:.3f} {k:10s} {word:24s} {q}")
    near = [c for c, k, _, _ in found if k != "answerable"]
    low = min(near, default=1.0)
    print(f"near/off-topic questions meaning alone lets through: {len(near)}, their lowest closeness {low:.3f}; "
          f"answerable ones at or above it: {sum(c >= low for c, k, _, _ in found if k == 'answerable')} "
          f"of {sum(k == 'answerable' for _, k, _, _ in found)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", action="store_true")
    ap.add_argument("--grid", action="store_true", help="the weights of the passage choice")
    ap.add_argument("--standout", action="store_true", help="the weight of how far the best passage stands out")
    ap.add_argument("--siblings", action="store_true", help="the closeness of the word the best entry does not mention")
    ap.add_argument("--split", choices=("tune", "all"), default="tune",
                    help="all: both halves of the sets whose test halves are spent (README: what was looked at)")
    ap.add_argument("--set", choices=TUNED_SETS, action="append",
                    help="the labelled sets to tune on (default: every set but the sealed one)")
    args = ap.parse_args(argv)
    embedder = StoredEmbedder(LocalE5Embedder(), VectorStore(CACHE))
    embed = extractive.Vectors(VectorCache(embedder.embed_queries).vectors, VectorCache(embedder.embed_passages).vectors,
                               calibration=for_embedder(embedder.name))
    items = gather(embedder, [kb for name in (args.set or TUNED_SETS) for kb in SETS[name]], args.split)
    if args.cases:
        show_cases(items, embed)
    if args.siblings:
        siblings(items, embed)
    base = evaluate(items, embed)
    bests = base.pop("bests")
    print(f"current constants: {base}")
    thresholds(bests)
    if args.standout:
        for weight, rank in itertools.product((0.0, 0.5, 1.0, 2.0), (3, 5, 8)):
            extractive.STANDOUT_WEIGHT, extractive.STANDOUT_RANK = weight, rank
            print(f"== standout weight {weight}, rank {rank}")
            thresholds(evaluate(items, embed)["bests"], brief=True)  # type: ignore[arg-type]
    if args.grid:
        for lw, rp, fm in itertools.product((0.0, 0.05, 0.1, 0.2), (0.0, 0.01, 0.02, 0.04), (0.01, 0.02, 0.03)):
            extractive.LEXICAL_WEIGHT, extractive.RANK_PENALTY, extractive.FOLLOW_MARGIN = lw, rp, fm
            r = evaluate(items, embed)
            r.pop("bests")
            print(f"lex {lw:.2f} rank {rp:.2f} follow {fm:.2f}: {r}")
    return 0


def thresholds(bests: list[tuple[bool, bool, float]], brief: bool = False) -> None:
    """Per side (same language, across languages): for each threshold on the best passage's
    cosine, answerable questions it would mark and near- or off-topic ones it would not."""
    for other in (False, True):
        side = [(a, c) for a, o, c in bests if o == other]
        ans = [c for a, c in side if a]
        near = [c for a, c in side if not a]
        top = max(near, default=0)
        print(f"{'across languages' if other else 'same language'}: {len(ans)} answerable, {len(near)} near/off-topic "
              f"past retrieval; highest near/off-topic confidence {top:.3f}, answerable at or below it "
              f"{sum(c <= top for c in ans)}")
        if brief:
            continue
        for t in [x / 1000 for x in range(790, 960, 5)]:
            print(f"   {t:.3f}: answerable marked {sum(c < t for c in ans):3d}, near/off not marked "
                  f"{sum(c >= t for c in near):3d}")


if __name__ == "__main__":
    sys.exit(main())
