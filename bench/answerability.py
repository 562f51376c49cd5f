"""Answerability benchmark: does citebot refuse what it should, and only that?

    python bench/answerability.py [--split test|tune|all] [--calibrate] [--no-scifact]
                                  [--scifact-docs N] [--scale]

For the labelled Slack-style questions (tests/data/answerability.yaml, against
the bundled sample KB) and for SciFact, BM25 only and hybrid side by side:

- answerable refused before the model (%), expected entry in the top 3 (%),
  off-topic refused before the model (%), two-topic questions with both
  entries in the context (%), cross-language top 3 (%);
- SciFact test queries through the public API with default settings:
  nDCG@10, Recall@100 (each abstract counted once, at its best chunk's rank:
  bench/ranking.py), queries with no hit, and the share refused before the
  model; SciFact queries against the sample KB and the sample KB's questions
  against SciFact, which must be refused;
- query latency p50/p95 with and without the embedder; index build time and
  embedding throughput for the sample KB (and, with --scale, for generated chunks).

Thresholds are chosen on the tune half (`--calibrate --split tune` prints the
candidates); report on the test half. Embeddings go through a disk cache
(.citebot/bench-cache, a kb_index.vector_store.VectorStore) so a second run does not
embed the corpus again; a
SciFact run on a cold cache embeds 5,183 abstracts, about an hour on 2 cores:
--scifact-docs N limits the hybrid corpus to the qrels documents plus random
others, and says so.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ranking import entries_once, ndcg_at, recall_at  # noqa: E402
from retrieval_scifact import DEFAULT_DATA, load_queries, write_kb  # noqa: E402

from bot.answer.prompt import trim_to_budget  # noqa: E402
from bot.config import Settings  # noqa: E402
from kb_index import Retriever, build_index  # noqa: E402
from kb_index.answerability import CALIBRATIONS, model_key  # noqa: E402
from kb_index.embedding import LocalE5Embedder  # noqa: E402
from kb_index.vector_store import StoredEmbedder, VectorStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "tests" / "data" / "answerability.yaml"
SAMPLE_KB = ROOT / "kb_index" / "sample"
CACHE = ROOT / ".citebot" / "bench-cache" / "vectors.sqlite"
# What the bot uses when nothing is configured.
DEFAULT_TOP_K = Settings.model_fields["top_k"].default
DEFAULT_BUDGET_CHARS = Settings.model_fields["prompt_budget_chars"].default


def pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:5.1f} % ({n}/{d})" if d else "   -    (0/0)"


def load_questions(split: str) -> list[dict]:
    items = yaml.safe_load(QUESTIONS.read_text())
    return [q for q in items if split == "all" or q["split"] == split]


# ------------------------------------------------------------- labelled set


def evaluate_set(retriever: Retriever, questions: list[dict]) -> dict:
    out = {"answerable": 0, "ans_refused": 0, "top3": 0, "off": 0, "off_refused": 0,
           "two": 0, "two_both": 0, "xl": 0, "xl_top3": 0, "misses": []}
    for q in questions:
        found = retriever.retrieve(q["q"], k=DEFAULT_TOP_K)
        refused = not (found.answerability.answerable and found.hits)
        expect = set(q.get("expect") or [])
        if not expect:
            out["off"] += 1
            out["off_refused"] += refused
            if not refused:
                out["misses"].append(("passed off-topic", q["q"], found.answerability.reason))
            continue
        out["answerable"] += 1
        out["ans_refused"] += refused
        if refused:
            out["misses"].append(("refused", q["q"], found.answerability.reason))
        top3 = entries_once(h.entry_id for h in found.hits if not h.expanded)[:3]
        in_top3 = bool(expect & set(top3))
        out["top3"] += in_top3
        if not in_top3:
            out["misses"].append(("not in top 3", q["q"], f"expected {sorted(expect)}, got {top3}"))
        styles = set(q.get("style") or [])
        if "cross-language" in styles:
            out["xl"] += 1
            out["xl_top3"] += in_top3
        if q.get("parts"):
            context = {h.entry_id for h in trim_to_budget(found.hits, DEFAULT_BUDGET_CHARS)}
            both = all(set(part) & context for part in q["parts"])
            out["two"] += 1
            out["two_both"] += both
            if not both:
                out["misses"].append(("two-topic incomplete", q["q"], f"parts {q['parts']}, context {sorted(context)}"))
    return out


def print_set(name: str, results: dict[str, dict], show_misses: bool) -> None:
    print(f"\n== {name}")
    rows = [
        ("answerable refused before the model", "ans_refused", "answerable"),
        ("expected entry in the top 3", "top3", "answerable"),
        ("off-topic refused before the model", "off_refused", "off"),
        ("two-topic: both entries in the context", "two_both", "two"),
        ("cross-language: expected entry in the top 3", "xl_top3", "xl"),
    ]
    print(f"{'':48s}" + "".join(f"{label:>22s}" for label in results))
    for title, num, den in rows:
        print(f"{title:48s}" + "".join(f"{pct(r[num], r[den]):>22s}" for r in results.values()))
    if show_misses:
        for label, r in results.items():
            for kind, q, why in r["misses"]:
                print(f"   [{label}] {kind}: {q!r} -- {why}")


# ------------------------------------------------------------- calibration


def calibrate(retriever_bm25: Retriever, retriever_hybrid: Retriever, questions: list[dict]) -> None:
    """Prints, for each signal, thresholds and the refusal rates they give on these questions."""
    rows = []  # (answerable, best cosine in the question's language, in another language, coverage)
    for q in questions:
        h = retriever_hybrid.retrieve(q["q"], k=DEFAULT_TOP_K).answerability
        b = retriever_bm25.retrieve(q["q"], k=DEFAULT_TOP_K).answerability
        rows.append((bool(q.get("expect")), h.cosine or 0.0, h.cosine_other or 0.0, b.coverage))
    ans = [r for r in rows if r[0]]
    off = [r for r in rows if not r[0]]
    print("\n== calibration on these questions (refused = every signal below its threshold)")
    print("cosine: same-language threshold x other-language threshold -> answerable refused, off-topic refused")
    for same in [x / 100 for x in range(78, 88)]:
        cells = []
        for other in [x / 100 for x in range(76, 84)]:
            refused_ans = sum(r[1] < same and r[2] < other for r in ans)
            refused_off = sum(r[1] < same and r[2] < other for r in off)
            cells.append(f"{other:.2f}: {100 * refused_ans / len(ans):4.1f}/{100 * refused_off / len(off):4.1f}")
        print(f"   {same:.2f} | " + "  ".join(cells))
    print("coverage alone (BM25):")
    for t in [x / 100 for x in range(4, 40, 3)]:
        print(f"   {t:.2f}: answerable refused {pct(sum(r[3] < t for r in ans), len(ans))}, "
              f"off-topic refused {pct(sum(r[3] < t for r in off), len(off))}")


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered))))]


# ------------------------------------------------------------- SciFact


def scifact(embedder, data: Path, max_docs: int | None, sample_questions: list[dict], sample_retrievers) -> None:
    queries, qrels = load_queries(data, "test")
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb"
        kb.mkdir()
        n_docs = write_kb(data, kb)
        if max_docs and max_docs < n_docs:
            _subset(kb, qrels, max_docs)
            n_docs = max_docs
        corpus_note = f"{n_docs} of 5183 abstracts" + (" (qrels documents + random others)" if n_docs < 5183 else "")
        index = Path(tmp) / "index"
        t = time.perf_counter()
        misses = embedder.misses
        build_index(kb, index, language="en", embedder=embedder)
        print(f"\n== SciFact ({corpus_note}): index built in {time.perf_counter() - t:.1f} s, "
              f"{embedder.misses - misses} chunks embedded now, the rest from the bench's embedding cache")
        results = {}
        for label, emb in (("BM25 only", None), ("hybrid", embedder)):
            with Retriever(index, embedder=emb) as r:
                ndcgs, recalls, empty, refused = [], [], 0, 0
                for qid, text in queries.items():
                    found = r.retrieve(text, k=100, expand=False)
                    ranked = [h.entry_id for h in found.hits]
                    empty += not ranked
                    refused += not found.answerability.answerable
                    ndcgs.append(ndcg_at(ranked, qrels[qid]))
                    recalls.append(recall_at(ranked, qrels[qid]))
                results[label] = (statistics.mean(ndcgs), statistics.mean(recalls), empty, refused)
                if label == "hybrid":
                    off = sum(r.retrieve(q["q"], k=8).answerability.answerable for q in sample_questions)
                    results["sample questions vs SciFact, passed"] = off
        print(f"{'':48s}{'BM25 only':>22s}{'hybrid':>22s}")
        for i, title in enumerate(("nDCG@10", "Recall@100")):
            print(f"{title:48s}" + "".join(f"{results[k][i]:>22.4f}" for k in ("BM25 only", "hybrid")))
        print(f"{'queries with no hit':48s}" + "".join(f"{results[k][2]:>22d}" for k in ("BM25 only", "hybrid")))
        print(f"{'queries refused before the model':48s}"
              + "".join(f"{pct(results[k][3], len(queries)):>22s}" for k in ("BM25 only", "hybrid")))
        passed = results["sample questions vs SciFact, passed"]
        print(f"{'sample KB questions vs SciFact: refused':48s}{'':>22s}"
              f"{pct(len(sample_questions) - passed, len(sample_questions)):>22s}")
    # SciFact claims against the company KB: off-topic by construction.
    print(f"{'SciFact queries vs sample KB: refused':48s}"
          + "".join(f"{pct(sum(not r.retrieve(t, k=8).answerability.answerable for t in queries.values()), len(queries)):>22s}"
                    for r in sample_retrievers))


def _subset(kb: Path, qrels: dict[str, set[str]], keep: int) -> None:
    relevant = {d[1:] for docs in qrels.values() for d in docs}
    files = sorted(kb.glob("*.md"))
    others = [f for f in files if f.stem not in relevant]
    random.Random(7).shuffle(others)
    keep_others = set(others[: max(0, keep - len(relevant))])
    for f in files:
        if f.stem not in relevant and f not in keep_others:
            f.unlink()


# ------------------------------------------------------------- speed


def latency(retriever: Retriever, texts: list[str]) -> tuple[float, float]:
    times = []
    for text in texts:
        t = time.perf_counter()
        retriever.retrieve(text, k=DEFAULT_TOP_K)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def build_speed(embedder) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        build_index(SAMPLE_KB, Path(tmp) / "bm25", language="en")
        bm25_s = time.perf_counter() - t
        t = time.perf_counter()
        report = build_index(SAMPLE_KB, Path(tmp) / "hybrid", language="en", embedder=embedder)
        hybrid_s = time.perf_counter() - t
    per_s = report.embedded / max(hybrid_s - bm25_s, 1e-9)
    print(f"\n== build, sample KB ({report.chunks} chunks): BM25 only {bm25_s:.1f} s; with embeddings "
          f"{hybrid_s:.1f} s ({report.embedded} chunks embedded, {per_s:.1f} chunks/s)")
    print(f"   100,000 chunks at that rate: {100_000 / per_s / 3600:.1f} h of embedding on this machine "
          "(extrapolated; BM25 part measured by bench/retrieval_scale.py)")


# ------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("test", "tune", "all"), default="test")
    ap.add_argument("--calibrate", action="store_true", help="print threshold candidates on --split")
    ap.add_argument("--misses", action="store_true", help="list every wrong refusal, pass and ranking miss")
    ap.add_argument("--no-scifact", action="store_true")
    ap.add_argument("--scifact-docs", type=int, default=None, help="hybrid SciFact corpus size (default: all)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)

    embedder = StoredEmbedder(LocalE5Embedder(), VectorStore(CACHE))
    questions = load_questions(args.split)
    calibration = CALIBRATIONS[model_key(embedder.name)]
    print(f"questions: {len(questions)} ({args.split} half), embedder {embedder.name} (calibrated min_cosine "
          f"{calibration.min_cosine} in the question's language, {calibration.min_cosine_other} in another)")
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        build_index(SAMPLE_KB, index, language="en", embedder=embedder)
        with Retriever(index) as bm25, Retriever(index, embedder=embedder) as hybrid:
            if args.calibrate:
                calibrate(bm25, hybrid, questions)
                return 0
            results = {"BM25 only": evaluate_set(bm25, questions), "hybrid": evaluate_set(hybrid, questions)}
            print_set(f"labelled Slack questions vs sample KB ({args.split} half)", results, args.misses)
            # Latency with the real embedder: the cache would make question embedding free.
            texts = [q["q"] for q in questions]
            with Retriever(index, embedder=LocalE5Embedder()) as uncached:
                for label, r in (("BM25 only", bm25), ("hybrid", uncached)):
                    p50, p95 = latency(r, texts)
                    print(f"query latency {label:10s}: p50 {p50:.1f} ms  p95 {p95:.1f} ms")
            if not args.no_scifact:
                answerable = [q for q in questions if q.get("expect")]
                scifact(embedder, args.data, args.scifact_docs, answerable, (bm25, hybrid))
    build_speed(LocalE5Embedder())
    return 0


if __name__ == "__main__":
    sys.exit(main())
