"""The benches score what the asker sees: an entry once, at its best chunk's rank (bench/ranking.py).

`Retriever.search` ranks chunks; an entry whose two chunks both rank high was
counted twice, and SciFact's nDCG@10 read 0.783 where each abstract counted
once gives 0.691.
"""

from __future__ import annotations

import math

import pytest

from bench.ranking import entries_once, ndcg_at, recall_at
from bench.retrieval_scifact import evaluate
from kb_index import Retriever, build_index
from tests.kb_fixtures import write_entry


def test_an_entry_ranked_twice_counts_once_at_its_best_rank() -> None:
    assert entries_once(["d1", "d2", "d1", "d3", "d2"]) == ["d1", "d2", "d3"]
    # d1's two chunks at ranks 1 and 2, d2 at rank 3: d2 is the second entry the asker sees.
    assert ndcg_at(["d1", "d1", "d2"], {"d1", "d2"}) == pytest.approx(1.0)
    assert ndcg_at(["d9", "d1", "d1"], {"d1"}) == pytest.approx(1 / math.log2(3))
    # The top 10 are ten entries, not ten chunks.
    assert ndcg_at(["d1"] * 10 + ["d2"], {"d2"}) == pytest.approx(1 / math.log2(3))
    assert recall_at(["d1", "d1", "d2"], {"d1", "d3"}) == 0.5


def test_the_scifact_bench_scores_a_two_chunk_entry_once(tmp_path) -> None:
    kb = tmp_path / "kb"
    write_entry(kb, "a.md", {"id": "dA", "title": "Telomerase in stem cells", "language": "en"}, {
        "Abstract": "Telomerase activity keeps telomeres long in dividing stem cells.",
        "Results": "Telomerase knockdown shortened telomeres in stem cells within weeks.",
    })
    write_entry(kb, "b.md", {"id": "dB", "title": "Bone density", "language": "en"},
                {"Abstract": "Bone density falls with age in women after menopause."})
    build_index(kb, tmp_path / "index", language="en")
    with Retriever(tmp_path / "index") as retriever:
        ranked = [h.entry_id for h in retriever.search("telomerase telomeres stem cells", k=10, expand=False)]
        assert ranked[:2] == ["dA", "dA"], "the test needs the entry's two chunks on top"
        ndcg, recall = evaluate(retriever, {"q1": "telomerase telomeres stem cells"}, {"q1": {"dA"}})
    # Counted per chunk this was 1 + 1/log2(3) = 1.63: more than a perfect ranking.
    assert ndcg == pytest.approx(1.0)
    assert recall == 1.0
