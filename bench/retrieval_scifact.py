"""SciFact retrieval benchmark: nDCG@10, Recall@100, build time, query latency.

Each abstract becomes one KB entry (a Markdown file with front matter) and goes
through the same loader, index builder and Retriever as the company KB. The
Retriever ranks chunks; the scores count each abstract once, at its best
chunk's rank (bench/ranking.py), as BEIR and Anserini score documents.
Recall@100 is over the entries of the first 100 chunks.

    python bench/retrieval_scifact.py [--data DIR] [--split test|train] [--tune]

--tune searches BM25F parameters on the train split only (the test split is
for reporting); it prints the best setting for kb_index/impacts.py.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kb_index import Retriever, build_index
from kb_index.impacts import Params, build as build_impacts
from kb_index.index import current_generation

try:
    from bench.ranking import ndcg_at, recall_at
except ImportError:  # run as a script: bench/ itself is on sys.path
    from ranking import ndcg_at, recall_at  # type: ignore[no-redef]

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def write_kb(data: Path, kb_dir: Path) -> int:
    n = 0
    with open(data / "corpus.jsonl") as fh:
        for line in fh:
            doc = json.loads(line)
            meta = {"id": f"d{doc['_id']}", "title": doc["title"] or f"Document {doc['_id']}", "language": "en"}
            front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
            text = doc["text"].replace("\n## ", "\n")
            (kb_dir / f"{doc['_id']}.md").write_text(f"---\n{front}---\n## Abstract\n{text}\n")
            n += 1
    return n


def load_queries(data: Path, split: str) -> tuple[dict[str, str], dict[str, set[str]]]:
    qrels: dict[str, set[str]] = {}
    with open(data / "qrels" / f"{split}.tsv") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 3 and parts[0] != "query-id" and int(parts[2]) > 0:
                qrels.setdefault(parts[0], set()).add(f"d{parts[1]}")
    queries = {}
    with open(data / "queries.jsonl") as fh:
        for line in fh:
            q = json.loads(line)
            if q["_id"] in qrels:
                queries[q["_id"]] = q["text"]
    return queries, qrels


def evaluate(retriever: Retriever, queries, qrels) -> tuple[float, float]:
    ndcgs, recalls = [], []
    for qid, text in queries.items():
        hits = retriever.search(text, k=100, expand=False)
        ranked = [h.entry_id for h in hits]
        ndcgs.append(ndcg_at(ranked, qrels[qid]))
        recalls.append(recall_at(ranked, qrels[qid]))
    return statistics.mean(ndcgs), statistics.mean(recalls)


def latencies_ms(retriever: Retriever, texts: list[str], k: int) -> list[float]:
    out = []
    for text in texts:
        t0 = time.perf_counter()
        retriever.search(text, k=k)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def tune(index_dir: Path, data: Path) -> None:
    """Grid over BM25F parameters on the train split; rewrites only the impact arrays."""
    from whoosh import index as whoosh_index

    queries, qrels = load_queries(data, "train")
    gen_dir = current_generation(index_dir)
    reader = whoosh_index.open_dir(str(gen_dir)).reader()
    results = []
    for k1, b_body, b_title, w_title in itertools.product((0.9, 1.2, 1.5), (0.5, 0.75, 0.9), (0.3, 0.6), (1.0, 2.0, 3.0)):
        params = Params(k1=k1, weights={"title": w_title, "meta": 1.0, "body": 1.0, "sub": 1.0},
                        b={"title": b_title, "meta": 0.5, "body": b_body, "sub": 0.75})
        build_impacts(reader, params).save(gen_dir)
        with Retriever(index_dir) as r:
            ndcg, recall = evaluate(r, queries, qrels)
        results.append((ndcg, recall, params))
        print(f"k1={k1} b_body={b_body} b_title={b_title} w_title={w_title}: nDCG@10 {ndcg:.4f} R@100 {recall:.4f}", flush=True)
    best = max(results, key=lambda r: r[0])
    print(f"best on train: nDCG@10 {best[0]:.4f} R@100 {best[1]:.4f} with {best[2]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--split", default="test", choices=("test", "train"))
    ap.add_argument("--tune", action="store_true")
    args = ap.parse_args(argv)
    if not (args.data / "corpus.jsonl").exists():
        print(f"SciFact not found in {args.data} (give --data)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        kb_dir, index_dir = Path(tmp) / "kb", Path(tmp) / "index"
        kb_dir.mkdir()
        n = write_kb(args.data, kb_dir)
        t0 = time.perf_counter()
        report = build_index(kb_dir, index_dir, language="en")
        build_s = time.perf_counter() - t0
        print(f"corpus: {n} abstracts -> {report.chunks} chunks, {report.skipped} skipped; index build {build_s:.1f} s")
        if args.tune:
            tune(index_dir, args.data)
            return 0
        queries, qrels = load_queries(args.data, args.split)
        with Retriever(index_dir) as retriever:
            ndcg, recall = evaluate(retriever, queries, qrels)
            texts = list(queries.values())
            latencies_ms(retriever, texts[:20], 10)  # warm caches
            lat10 = latencies_ms(retriever, texts, 10)
            lat100 = latencies_ms(retriever, texts, 100)
        print(f"{args.split}: {len(queries)} queries  nDCG@10 {ndcg:.4f}  Recall@100 {recall:.4f}")
        print(f"query latency k=10:  p50 {pct(lat10, 50):.2f} ms  p95 {pct(lat10, 95):.2f} ms")
        print(f"query latency k=100: p50 {pct(lat100, 50):.2f} ms  p95 {pct(lat100, 95):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
