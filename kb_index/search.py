"""Retriever: the user's words -> ranked chunks, or nothing usable.

Ranking is BM25F over title, metadata and section text (impacts.py), plus a
lower-weighted German subword stream for compounds. The question is plain
text: it is analyzed, never parsed, so quotes, colons, AND/OR/NOT, wildcards,
emoji or 10 kB of pasted text cannot raise.

"Nothing usable" is decided by term coverage: a hit must contain enough of
the question's distinctive words, weighted by idf, with words the KB has never
seen counting as the rarest. A question about the exchange rate of the Bermuda
dollar then finds nothing, even though some entry mentions a "rate", and the
answering side refuses without calling a model.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kb_index.analysis import SUBWORD_GRAM, query_terms
from kb_index.docstore import DocStore
from kb_index.impacts import Impacts
from kb_index.index import CURRENT_FILE, check_generation, current_generation
from kb_index.results import ChunkResult

# Share of the question's idf mass a chunk must contain to count as a hit.
# Tuned on tests/data/sample_questions.yaml (answerable vs. off-topic).
MIN_COVERAGE = 0.45
# Weight of a word's subword grams, relative to the word itself.
SUBWORD_WEIGHT = 0.3
# Long pasted text: only the most distinctive terms are scored, so a 10 kB
# question costs about what a paragraph does.
MAX_QUERY_TERMS = 128
MAX_QUERY_CHARS = 20_000


@dataclass(frozen=True)
class _Word:
    space: str  # "en" or "de"
    term: str
    row: int | None  # None: the KB has never seen it
    idf: float
    gram_rows: tuple[int, ...] = ()


@dataclass
class _Generation:
    name: str
    stamp: tuple
    impacts: Impacts
    docs: DocStore
    entry_order: np.ndarray  # docnums sorted by entry code
    entry_starts: np.ndarray  # per entry code: first position in entry_order


class Retriever:
    """Searches the live generation of an index; follows `citebot index` rebuilds.

    Cheap to call from many threads: a rebuild swaps the generation under a
    lock, searches already running finish on the one they started with.
    """

    def __init__(self, index_dir: str | Path, *, min_coverage: float = MIN_COVERAGE):
        self.index_dir = Path(index_dir)
        self.min_coverage = min_coverage
        self._lock = threading.Lock()
        self._gen: _Generation | None = None
        self._retired: list[_Generation] = []
        self._gen = self._open()

    # ---------------------------------------------------------------- public

    @property
    def generation(self) -> str:
        return self._current().name

    @property
    def doc_count(self) -> int:
        gen = self._current()
        return int(gen.impacts.live.sum())

    def search(
        self,
        query: str,
        k: int = 10,
        collections: list[str] | None = None,
        *,
        expand: bool = True,
        min_coverage: float | None = None,
    ) -> list[ChunkResult]:
        """Best `k` chunks for `query`, then cross-ref expansions; [] if nothing usable."""
        gen = self._current()
        imp = gen.impacts
        words = self._words(imp, query)
        if not words or k <= 0:
            return []
        scores = self._scores(imp, words)
        allowed = self._allowed(imp, collections)
        scores = np.where(allowed, scores, 0.0)
        top = _top(scores, k)
        floor = self.min_coverage if min_coverage is None else min_coverage
        if floor > 0 and len(top):
            top = top[self._coverage(imp, words, top) >= floor]
        hits = [self._result(gen, d, float(scores[d])) for d in top]
        if expand and hits:
            hits += self._expansions(gen, hits, scores, allowed, limit=max(2, k // 2))
        return hits

    def entry_chunks(self, entry_id: str) -> list[ChunkResult]:
        """The live chunks of one entry, in section order; [] if the index has no such entry.

        Their `content_hash`es say whether an answer that cited a chunk of this
        entry relied on text the index still holds.
        """
        gen = self._current()
        imp = gen.impacts
        try:
            code = imp.entries.index(entry_id)
        except ValueError:
            return []
        docs = gen.entry_order[gen.entry_starts[code] : gen.entry_starts[code + 1]]
        chunks = [self._result(gen, d, 0.0) for d in docs[imp.live[docs]]]
        return sorted(chunks, key=lambda c: int(c.chunk_id.rpartition("#")[2] or 0))

    def close(self) -> None:
        with self._lock:
            for gen in [self._gen, *self._retired]:
                if gen is not None:
                    gen.docs.close()
            self._gen, self._retired = None, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---------------------------------------------------------- generations

    def _stamp(self) -> tuple:
        st = os.stat(self.index_dir / CURRENT_FILE)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _open(self) -> _Generation:
        # Stamp before name: if a switch lands in between, the stale stamp
        # makes the next search reload once more, never miss the new index.
        try:
            stamp = self._stamp()
        except FileNotFoundError:
            stamp = None
        gen_dir = current_generation(self.index_dir)
        check_generation(gen_dir)
        impacts = Impacts.load(gen_dir)
        order = np.argsort(impacts.entry_of, kind="stable")
        starts = np.searchsorted(impacts.entry_of[order], np.arange(len(impacts.entries) + 1))
        return _Generation(gen_dir.name, stamp, impacts, DocStore(gen_dir), order, starts)

    def _current(self) -> _Generation:
        gen = self._gen
        if gen is None:
            raise RuntimeError("Retriever is closed")
        try:
            stamp = self._stamp()
        except FileNotFoundError:
            return gen  # the folder is being replaced by hand; keep serving the old index
        if stamp == gen.stamp:
            return gen
        with self._lock:
            if self._gen is gen and self._gen.stamp != stamp:
                fresh = self._open()
                # Close what retired before; `gen` may still serve a running search.
                for old in self._retired:
                    old.docs.close()
                self._retired = [gen]
                self._gen = fresh
            return self._gen

    # ------------------------------------------------------------- scoring

    def _words(self, imp: Impacts, query: str) -> list[_Word]:
        text = query if len(query) <= MAX_QUERY_CHARS else query[:MAX_QUERY_CHARS].rsplit(None, 1)[0]
        unseen_idf = float(np.log(1.0 + (imp.doc_count - 0.5) / 1.5))
        words: list[_Word] = []
        for space in ("en", "de"):
            for term in Counter(query_terms(text, space)):
                row = imp.row(f"{space}:{term}")
                idf = float(imp.idf[row]) if row is not None else unseen_idf
                grams: tuple[int, ...] = ()
                if space == "de" and len(term) > SUBWORD_GRAM:
                    found = (imp.row(f"dg:{term[i:i + SUBWORD_GRAM]}") for i in range(len(term) - SUBWORD_GRAM + 1))
                    grams = tuple(r if r is not None else -1 for r in found)
                words.append(_Word(space, term, row, idf, grams))
        if len(words) > MAX_QUERY_TERMS:
            words = sorted(words, key=lambda w: -w.idf if w.row is not None else 0.0)[:MAX_QUERY_TERMS]
        return words

    def _scores(self, imp: Impacts, words: list[_Word]) -> np.ndarray:
        rows, weights = [], []
        for w in words:
            if w.row is not None:
                rows.append(w.row)
                weights.append(1.0)
            known = [g for g in w.gram_rows if g >= 0]
            for g in known:
                rows.append(g)
                weights.append(SUBWORD_WEIGHT / len(w.gram_rows))
        return imp.score(rows, weights)

    def _allowed(self, imp: Impacts, collections: list[str] | None) -> np.ndarray:
        if collections is None:
            return imp.live
        codes = [i for i, name in enumerate(imp.collections) if name in set(collections)]
        return imp.live & np.isin(imp.collection_of, codes)

    def _coverage(self, imp: Impacts, words: list[_Word], docs: np.ndarray) -> np.ndarray:
        """Per doc: the share of the question's idf mass it contains, best language."""
        best = np.zeros(len(docs))
        for space in ("en", "de"):
            mine = [w for w in words if w.space == space]
            total = sum(w.idf for w in mine)
            if not total:
                continue
            covered = np.zeros(len(docs))
            for w in mine:
                present = imp.contains(w.row, docs) if w.row is not None else np.zeros(len(docs), bool)
                if w.gram_rows:
                    present = present | _letters_covered(imp, w.gram_rows, docs)
                covered += w.idf * present
            best = np.maximum(best, covered / total)
        return best

    # ------------------------------------------------------------- results

    def _result(self, gen: _Generation, docnum: int, score: float, expanded: bool = False) -> ChunkResult:
        doc = gen.docs.get(int(docnum))
        return ChunkResult(
            chunk_id=doc["chunk_id"],
            entry_id=doc["entry_id"],
            section=doc["section"],
            text=doc["text"],
            title=doc["title"],
            stand=doc.get("stand"),
            work=doc.get("work"),
            chapter=doc.get("chapter"),
            topic=doc.get("topic"),
            tags=tuple(doc.get("tags") or ()),
            legal_bases=tuple(doc.get("legal_bases") or ()),
            cross_refs=tuple(doc.get("cross_refs") or ()),
            url=doc.get("url"),
            collection=doc.get("collection", "default"),
            source_role=doc.get("source_role", "primary_answer_source"),
            language=doc.get("language", "en"),
            score=round(score, 4),
            expanded=expanded,
            content_hash=doc.get("content_hash", ""),
            path=doc.get("path", ""),
        )

    def _expansions(self, gen, hits, scores, allowed, limit: int) -> list[ChunkResult]:
        """For each hit's cross-refs: the referenced entry's best chunk, once, if this caller may see it."""
        imp = gen.impacts
        seen_entries = {h.entry_id for h in hits}
        code_of = {name: i for i, name in enumerate(imp.entries)}
        out: list[ChunkResult] = []
        for hit in hits:
            for ref in hit.cross_refs:
                if len(out) >= limit:
                    return out
                code = code_of.get(ref)
                if ref in seen_entries or code is None:
                    continue
                docs = gen.entry_order[gen.entry_starts[code] : gen.entry_starts[code + 1]]
                docs = docs[allowed[docs]]
                if not len(docs):
                    continue
                best = docs[np.argmax(scores[docs])] if scores[docs].max() > 0 else docs.min()
                seen_entries.add(ref)
                out.append(self._result(gen, best, float(scores[best]), expanded=True))
        return out


def _letters_covered(imp: Impacts, gram_rows: tuple[int, ...], docs: np.ndarray) -> np.ndarray:
    """Per doc: is every letter of the word inside some gram the doc contains?

    This is how a compound meets its parts: "lohnfortzahl" is covered by the
    grams of "lohn" and "fortzahl", although its junction grams ("hnfo")
    occur nowhere; "wechselkur" is not covered by "wechsel" alone.
    """
    matched = np.array([imp.contains(g, docs) if g >= 0 else np.zeros(len(docs), bool) for g in gram_rows])
    n_letters = len(gram_rows) + SUBWORD_GRAM - 1
    covered = np.ones(len(docs), dtype=bool)
    for letter in range(n_letters):
        lo, hi = max(0, letter - SUBWORD_GRAM + 1), min(len(gram_rows), letter + 1)
        covered &= matched[lo:hi].any(axis=0)
    return covered


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    positive = np.flatnonzero(scores > 0)
    if len(positive) > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        positive = positive[part]
    # Ties broken by docnum so results are deterministic.
    return positive[np.lexsort((positive, -scores[positive]))]
