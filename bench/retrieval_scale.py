"""Retrieval at scale: a generated KB of 100,000 chunks.

Prints build time, index size on disk, query latency p50/p95 (k=10) and the peak
memory (max RSS) of a separate process that only opens the index and searches.

    python bench/retrieval_scale.py [--chunks 100000] [--queries 300] [--keep DIR]

The text is synthetic but shaped like a KB: Zipf-distributed words from a
large vocabulary, one in four entries German with compounds, titles, 4
sections per entry, questions of 4-15 words drawn from real chunks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

SECTIONS_PER_ENTRY = 4
WORDS_PER_SECTION = (60, 160)
SEED = 7


def vocabulary(rng: random.Random, size: int) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvwz", "aeiou"
    words = set()
    while len(words) < size:
        n = rng.choice((2, 2, 3, 3, 4))
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(n)))
    return sorted(words)


def write_kb(kb_dir: Path, n_chunks: int) -> list[str]:
    """Writes the KB and returns questions drawn from it."""
    rng = random.Random(SEED)
    vocab = vocabulary(rng, 60_000)
    cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))  # Zipf
    compounds = [a + b for a, b in zip(rng.sample(vocab[:3000], 2000), rng.sample(vocab[:3000], 2000), strict=True)]
    questions = []
    n_entries = n_chunks // SECTIONS_PER_ENTRY
    for i in range(n_entries):
        german = i % 4 == 0
        collection = ("payroll", "handbook", "it", "legal")[i % 4]
        meta = {
            "id": f"e-{i:06d}",
            "title": " ".join(rng.choices(vocab, cum_weights=cum, k=4)).capitalize(),
            "stand": "2026-01",
            "language": "de" if german else "en",
            "tags": rng.choices(vocab[:5000], k=2),
        }
        sections = []
        for s in range(SECTIONS_PER_ENTRY):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(*WORDS_PER_SECTION))
            if german:
                words += rng.sample(compounds, 3)
            sections.append(f"## Section {s}\n{' '.join(words)}.\n")
            if rng.random() < 0.01:
                questions.append(" ".join(rng.sample(words, min(len(words), rng.randint(4, 15)))))
        path = kb_dir / collection / f"{meta['id']}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"---\n{yaml.safe_dump(meta)}---\n" + "\n".join(sections))
    return questions


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def peak_rss_mb() -> float:
    """VmHWM: the peak resident set of this process image. (ru_maxrss would also
    count the parent's memory, which survives fork + exec on Linux.)"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def search_only(index_dir: Path, questions_file: Path) -> None:
    """Runs in a fresh process, so max RSS is the searcher's alone."""
    from kb_index import Retriever

    questions = json.loads(questions_file.read_text())
    t0 = time.perf_counter()
    retriever = Retriever(index_dir)
    open_s = time.perf_counter() - t0
    for q in questions[:20]:
        retriever.search(q, k=10)  # warm-up
    latencies = []
    for q in questions:
        t0 = time.perf_counter()
        retriever.search(q, k=10)
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    rss_mb = peak_rss_mb()
    print(json.dumps({
        "open_s": open_s,
        "p50": statistics.median(latencies),
        "p95": latencies[int(0.95 * (len(latencies) - 1))],
        "queries": len(latencies),
        "rss_mb": rss_mb,
        "chunks": retriever.doc_count,
    }))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--keep", type=Path, help="build here and keep it (default: a temporary folder)")
    ap.add_argument("--search-only", nargs=2, type=Path, metavar=("INDEX", "QUESTIONS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.search_only:
        search_only(*args.search_only)
        return 0

    from kb_index import build_index

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        kb_dir, index_dir = root / "kb", root / "index"
        kb_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        questions = write_kb(kb_dir, args.chunks)
        print(f"generated {args.chunks} chunks in {time.perf_counter() - t0:.0f} s", flush=True)
        t0 = time.perf_counter()
        report = build_index(kb_dir, index_dir)
        build_s = time.perf_counter() - t0
        size_mb = dir_size(index_dir) / 2**20
        print(f"build: {report.chunks} chunks, {report.entries} entries in {build_s:.0f} s; index {size_mb:.0f} MB", flush=True)

        rng = random.Random(SEED)
        picked = rng.sample(questions, min(args.queries, len(questions)))
        qfile = root / "questions.json"
        qfile.write_text(json.dumps(picked))
        out = subprocess.run(
            [sys.executable, __file__, "--search-only", str(index_dir), str(qfile)],
            check=True, capture_output=True, text=True,
        )
        r = json.loads(out.stdout)
        print(f"search process: open {r['open_s']:.1f} s, {r['queries']} queries at k=10: "
              f"p50 {r['p50']:.2f} ms  p95 {r['p95']:.2f} ms; peak memory {r['rss_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
