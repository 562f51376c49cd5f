"""Retriever: the user's words -> ranked chunks, and whether the question is answerable from them.

Ranking is BM25F over title, metadata and section text (impacts.py), plus a
lower-weighted German subword stream for compounds, fused with the cosine of
chunk embeddings when the index has them and the Retriever has an embedder of
the same model (see BM25_WEIGHT). The question is plain
text: it is analyzed, never parsed, so quotes, colons, AND/OR/NOT, wildcards,
emoji or 10 kB of pasted text cannot raise.

Before either ranking, greetings, sign-offs, mentions, links and emoji are
stripped (question.py), and a message that asks two things is split into its
parts: each part is ranked on its own and the lists are merged in turns, so
the second topic gets its blocks into the context too.

Ranking never drops a hit. Whether the question is answerable at all is a
separate decision (answerability.py) that `retrieve` returns beside the hits.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kb_index.analysis import SUBWORD_GRAM, guess_language, query_terms
from kb_index.answerability import Answerability, Calibration, PartSignals, calibration_for, decide
from kb_index.collection import in_collections
from kb_index.docstore import DocStore
from kb_index.embedding import EmbedderError
from kb_index.impacts import Impacts
from kb_index.index import CURRENT_FILE, IndexEmpty, check_generation, current_generation, open_problem
from kb_index.question.chatter import strip_chatter
from kb_index.question.parts import split_question
from kb_index.results import ChunkResult, metadata_of
from kb_index.vectors import Vectors

log = logging.getLogger(__name__)

# Fusion: a chunk's embedding z-score (cosine standardised within its
# language, vectors.ranking_scores) plus BM25_WEIGHT x the question's word
# coverage x the chunk's BM25 score relative to the best one. The embedding
# leads: only it can place a German question's English entry, and a rank
# fusion (RRF) let same-language BM25 hits crowd those out (tune half:
# cross-language top 3 35 % with RRF, 70 % with this). Coverage says how much
# BM25 has to go on: a question in the KB's words ("Grundfreibetrag 2026?",
# a SciFact claim) leans on it, one in other words or another language not.
# Chosen among 1, 2, 3, 4 on the tune half of tests/data/answerability.yaml
# and SciFact's train queries together: 2 kept the tune half's top 3 (88 %)
# and cross-language top 3 (70 %) and took SciFact train nDCG@10 from 0.700
# (a fixed weight of 0.5) to 0.722 (scored per chunk then, an abstract's two
# chunks counted twice; bench/ranking.py counts each once now).
BM25_WEIGHT = 2.0
# Hits whose coverage is measured for the answerability decision.
COVERAGE_DEPTH = 10
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
    stamp: tuple | None  # None: the CURRENT file was missing when the generation was opened
    impacts: Impacts
    docs: DocStore
    entry_order: np.ndarray  # docnums sorted by entry code
    entry_starts: np.ndarray  # per entry code: first position in entry_order
    entry_code: dict[str, int]  # entry id -> entry code, for cross-ref expansion
    vectors: Vectors | None  # None: built without an embedder, or by another model than ours


@dataclass(frozen=True)
class Retrieval:
    """What `Retriever.retrieve` found: ranked hits, the decision, and the parts searched."""

    hits: list[ChunkResult]
    answerability: Answerability
    parts: list[str]
    semantic: bool  # the embedding ranking took part


class Retriever:
    """Searches the live generation of an index; follows `citebot index` rebuilds.

    Cheap to call from many threads: a rebuild swaps the generation under a
    lock, searches already running finish on the one they started with.

    With an `embedder` (kb_index.embedding) whose model built the index's
    vectors, rankings are fused with embedding similarity and answerability
    uses the cosine; `min_cosine` overrides the model's calibrated threshold.
    """

    def __init__(self, index_dir: str | Path, *, embedder=None, min_cosine: float | None = None):
        self.index_dir = Path(index_dir)
        self.embedder = embedder
        self.min_cosine = min_cosine
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

    @property
    def semantic(self) -> bool:
        """Whether searches use embeddings (an embedder of the model the live generation was built with)."""
        return self._current().vectors is not None

    @property
    def calibration(self) -> Calibration:
        """The thresholds answerability uses on the live generation."""
        return self._calibration(self._current())

    def search(
        self,
        query: str,
        k: int = 10,
        collections: list[str] | None = None,
        *,
        expand: bool = True,
    ) -> list[ChunkResult]:
        """Best `k` chunks for `query`, then cross-ref expansions. Never filtered by answerability.

        An empty index has no hits (only `retrieve`, which decides answerability, raises IndexEmpty).
        """
        if not self._current().impacts.live.any():
            return []
        return self.retrieve(query, k, collections, expand=expand).hits

    def retrieve(
        self,
        query: str,
        k: int = 10,
        collections: list[str] | None = None,
        *,
        expand: bool = True,
    ) -> Retrieval:
        """Ranked hits for `query` and the decision whether it is answerable from the KB.

        IndexEmpty when the live generation holds no chunk: "not covered"
        would blame the question for a knowledge base that is not there.
        """
        gen = self._current()
        if not gen.impacts.live.any():
            raise open_problem(self.index_dir) or IndexEmpty(f"the index in {self.index_dir} holds no entries")
        allowed = self._allowed(gen.impacts, collections)
        clean = strip_chatter(_clip(query))
        parts = split_question(clean) if clean else []
        texts = [clean, *parts] if len(parts) > 1 else [clean]
        cosines = self._cosines(gen, texts, allowed)

        rankings: list[np.ndarray] = []
        signals: list[PartSignals] = []
        scores: list[np.ndarray] = []
        for i, text in enumerate(texts):
            ranked, text_scores, part_signals = self._rank_text(
                gen, text, cosines[i] if cosines is not None else None, allowed, max(k, 0)
            )
            rankings.append(ranked)
            scores.append(text_scores)
            signals.append(part_signals)

        # A split question: the parts take turns, so the second topic is not
        # crowded out by the first; the whole question's list fills the rest.
        order = _interleave(rankings[1:] + rankings[:1]) if len(rankings) > 1 else list(rankings[0])
        # Shown scores, and the best chunk of a cross-referenced entry, come
        # from the whole question's scores.
        hits = [self._result(gen, d, float(scores[0][d])) for d in order[: max(k, 0)]]
        if expand and hits:
            hits += self._expansions(gen, hits, scores[0], allowed, limit=max(2, k // 2))
        answerability = decide(signals, self._calibration(gen))
        return Retrieval(hits, answerability, texts[1:] or texts, cosines is not None)

    def _rank_text(self, gen: _Generation, text: str, cosine: np.ndarray | None, allowed: np.ndarray, depth: int):
        """One text (the question or a part of it): its top `depth`, every chunk's score, its answerability signals."""
        imp = gen.impacts
        words = self._words(imp, text)
        bm25 = np.where(allowed, self._scores(imp, words), 0.0) if words else np.zeros(imp.doc_count)
        signals = self._signals(gen, text, words, bm25, cosine)
        dense = gen.vectors.ranking_scores(cosine, allowed) if gen.vectors is not None and cosine is not None else None
        ranked, scores = self._rank(bm25, dense, signals.coverage, depth)
        return ranked, scores, signals

    def _calibration(self, gen: _Generation) -> Calibration:
        return calibration_for(gen.vectors.model if gen.vectors is not None else None, self.min_cosine)

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
        codes = {name: i for i, name in enumerate(impacts.entries)}
        return _Generation(
            gen_dir.name, stamp, impacts, DocStore(gen_dir), order, starts, codes, self._vectors(gen_dir)
        )

    def _vectors(self, gen_dir: Path) -> Vectors | None:
        if self.embedder is None:
            return None
        found = Vectors.load(gen_dir)
        if found is None or found.model != self.embedder.name:
            # Cosines between two models' vectors mean nothing: BM25 alone until
            # `citebot index` embeds the chunks with the configured model.
            log.warning(
                "index %s has %s; searching with BM25 only until 'citebot index' embeds it with %s",
                gen_dir.name,
                f"vectors of {found.model}" if found else "no vectors",
                self.embedder.name,
            )
            return None
        return found

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
            if self._gen is gen and gen.stamp != stamp:
                fresh = self._open()
                # Close what retired before; `gen` may still serve a running search.
                for old in self._retired:
                    old.docs.close()
                self._retired = [gen]
                self._gen = fresh
            current = self._gen
        if current is None:
            raise RuntimeError("Retriever is closed")
        return current

    # ------------------------------------------------------------- scoring

    def _words(self, imp: Impacts, text: str) -> list[_Word]:
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
        wanted = set(collections)
        codes = [i for i, name in enumerate(imp.collections) if in_collections(name, wanted)]
        return imp.live & np.isin(imp.collection_of, codes)

    def _cosines(self, gen: _Generation, texts: list[str], allowed: np.ndarray) -> np.ndarray | None:
        """Per text: the cosine with every chunk (-1 where not allowed); None without vectors."""
        if gen.vectors is None or not any(texts):
            return None
        try:
            queries = self.embedder.embed_queries(texts)
        except EmbedderError as exc:
            # The question is still answered, on BM25 alone: an embedding
            # server being down must not turn every question into an error.
            log.warning("embedding the question failed, searching with BM25 only: %s", exc)
            return None
        return np.stack([gen.vectors.cosines(q, allowed) for q in queries])

    def _rank(
        self, bm25: np.ndarray, dense_scores: np.ndarray | None, coverage: float, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The `k` best docnums and every doc's score: BM25 alone, or fused with the embedding's."""
        if dense_scores is None:
            return _top(bm25, k), bm25
        best = float(bm25.max())
        relative = bm25 / best if best > 0 else bm25
        fused = dense_scores + BM25_WEIGHT * coverage * relative  # -inf stays -inf: not allowed
        return _top_finite(fused, k), fused

    def _signals(self, gen: _Generation, text: str, words, bm25: np.ndarray, cosine: np.ndarray | None) -> PartSignals:
        imp = gen.impacts

        def entry(d: int) -> str:
            return imp.entries[imp.entry_of[d]]

        same: tuple[float | None, str | None] = (None, None)
        other: tuple[float | None, str | None] = (None, None)
        if cosine is not None and gen.vectors is not None:
            own = gen.vectors.in_language(guess_language(text))
            for mask, slot in ((own, "same"), (~own, "other")):
                masked = np.where(mask, cosine, -1.0)
                if masked.max() > -1.0:
                    best = int(np.argmax(masked))
                    found = (round(float(masked[best]), 4), entry(best))
                    same, other = (found, other) if slot == "same" else (same, found)
        coverage, cov_entry = 0.0, None
        top = _top(bm25, COVERAGE_DEPTH)
        if words and len(top):
            shares = self._coverage(imp, words, top)
            best = int(np.argmax(shares))
            coverage, cov_entry = float(shares[best]), entry(top[best])
        return PartSignals(text, same[0], same[1], coverage, cov_entry, other[0], other[1])

    def _coverage(self, imp: Impacts, words: list[_Word], docs: np.ndarray) -> np.ndarray:
        """Per doc: the share of the question's idf mass it contains, best language.

        A word the KB has never seen counts at the median idf of the words it
        has: such a word is as often context or chatter ("Zweitjob", "Hamburg")
        as the topic, so it lowers the share without vetoing it.
        """
        unseen = float(np.median(imp.idf)) if len(imp.idf) else 1.0
        best = np.zeros(len(docs))
        for space in ("en", "de"):
            mine = [w for w in words if w.space == space]
            total = sum(w.idf if w.row is not None else unseen for w in mine)
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
            **metadata_of(doc),
            collection=doc.get("collection", "default"),
            language=doc.get("language", "en"),
            score=round(score, 4),
            expanded=expanded,
            content_hash=doc.get("content_hash", ""),
            path=doc.get("path", ""),
            page=doc.get("page"),
        )

    def _expansions(self, gen, hits, scores, allowed, limit: int) -> list[ChunkResult]:
        """For each hit's cross-refs: the referenced entry's best chunk, once, if this caller may see it."""
        seen_entries = {h.entry_id for h in hits}
        out: list[ChunkResult] = []
        for hit in hits:
            for ref in hit.cross_refs:
                if len(out) >= limit:
                    return out
                code = gen.entry_code.get(ref)
                if ref in seen_entries or code is None:
                    continue
                docs = gen.entry_order[gen.entry_starts[code] : gen.entry_starts[code + 1]]
                docs = docs[allowed[docs]]
                if not len(docs):
                    continue
                best = docs[np.argmax(scores[docs])]  # ties (all 0): the entry's first chunk
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


def _clip(query: str) -> str:
    return query if len(query) <= MAX_QUERY_CHARS else query[:MAX_QUERY_CHARS].rsplit(None, 1)[0]


def _interleave(rankings: list[np.ndarray]) -> list[int]:
    """Docnums taken in turns from each ranking, each once."""
    seen: set[int] = set()
    out: list[int] = []
    for row in range(max(len(r) for r in rankings)):
        for ranking in rankings:
            if row < len(ranking) and int(ranking[row]) not in seen:
                seen.add(int(ranking[row]))
                out.append(int(ranking[row]))
    return out


def _top_finite(scores: np.ndarray, k: int) -> np.ndarray:
    """The `k` best docnums of scores that may be negative; -inf marks the excluded."""
    finite = np.flatnonzero(np.isfinite(scores))
    if len(finite) > k:
        finite = finite[np.argpartition(-scores[finite], k - 1)[:k]]
    return finite[np.lexsort((finite, -scores[finite]))]


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    positive = np.flatnonzero(scores > 0)
    if len(positive) > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        positive = positive[part]
    # Ties broken by docnum so results are deterministic.
    return positive[np.lexsort((positive, -scores[positive]))]
