"""Scoring a ranking as the asker sees it: by entry, each entry once, at its best rank.

`Retriever.search` returns chunks, and one entry may fill two places of the
top 10 (an abstract's title chunk and its body, a handbook page's two
sections). Scored as they come, one relevant entry is counted twice: the
SciFact test split's nDCG@10 read 0.783 that way, 0.691 with each abstract
counted once, which is how BEIR and Anserini score documents (a qrels list
names documents, not passages). Every bench that ranks entries scores through
`entries_once`, so none counts an entry twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def entries_once(entry_ids: Iterable[str]) -> list[str]:
    """The entries in rank order, each once, at the rank of its best chunk."""
    return list(dict.fromkeys(entry_ids))


def ndcg_at(ranked: Iterable[str], relevant: set[str], k: int = 10) -> float:
    """nDCG@k with binary relevance over the entries of `ranked` (chunks' entry ids, in rank order)."""
    entries = entries_once(ranked)[:k]
    dcg = sum(1.0 / math.log2(i + 2) for i, entry in enumerate(entries) if entry in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Iterable[str], relevant: set[str], k: int = 100) -> float:
    """The share of `relevant` among the first k entries of `ranked`."""
    if not relevant:
        return 0.0
    return len(set(entries_once(ranked)[:k]) & relevant) / len(relevant)


__all__ = ["entries_once", "ndcg_at", "recall_at"]
